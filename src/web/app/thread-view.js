// @ts-check
// A run's view: its header (status, goal, facts, plan, pinned decisions), the tabs, and the live badge.

import { enc } from "./api.js";
import { $, append, clear, h, statusPill } from "./dom.js";
import { ago, bytes, clock, dateTime, duration, modelName, oneLine, plural, spend, tokens } from "./format.js";
import { renderCheckpointsTab, renderLedgerTab } from "./ledger-tab.js";
import { IDLE_WARN_MS, state } from "./state.js";
import { queueText } from "./threads.js";
import { renderTimeline } from "./timeline.js";

/** @typedef {import("../data.js").ThreadDetail} ThreadDetail */

/** @type {Record<string, string>} */
const SUBTASK_ICON = { completed: "✓", in_progress: "◐", pending: "○", blocked: "⊘" };

/**
 * What the model calls made while this subtask was in progress cost, or nothing.
 * @param {ThreadDetail} d
 * @param {string} id
 */
function subtaskSpend(d, id) {
  const text = spend(d.usage.bySubtask.find((x) => x.subtask === id));
  return text
    ? h("span", { class: "sub-cost muted small mono", title: "tokens and cost of the model calls made while this subtask was in progress" }, text)
    : null;
}

/**
 * How many shell commands ran, their CPU in all and the highest memory peak, where cgroups measured them.
 * @param {ThreadDetail["commands"]} c
 */
function commandsText(c) {
  const parts = [String(c.count)];
  if (c.measured) parts.push(`cpu ${duration(c.cpuMs)}`);
  if (c.highestPeak) parts.push(`peak ${bytes(c.highestPeak.bytes)} (step ${c.highestPeak.step})`);
  return parts.join(" · ");
}

/** @param {ThreadDetail} d */
export function renderHeader(d) {
  const idle = d.status === "running" && d.lastActivity && Date.now() - new Date(d.lastActivity).getTime() > IDLE_WARN_MS;
  const completed = d.plan.filter((s) => s.status === "completed").length;
  const facts = /** @type {Array<[string, string]>} */ (
    [
      ["steps", d.maxSteps ? `${d.steps} of at most ${d.maxSteps}` : String(d.steps)],
      queueText(d.queue) && ["worker", /** @type {string} */ (queueText(d.queue))],
      d.model && ["model", modelName(d.model)],
      (d.sandbox.level || d.sandbox.requested) && [
        "sandbox",
        d.sandbox.level
          ? d.sandbox.level + (d.sandbox.requested && d.sandbox.requested !== d.sandbox.level ? ` (asked: ${d.sandbox.requested})` : "")
          : `${d.sandbox.requested} (nothing run yet)`,
      ],
      d.lastTests && [
        "last tests",
        `${d.lastTests.passed} passed, ${d.lastTests.failed} failed${d.lastTests.skipped ? `, ${d.lastTests.skipped} skipped` : ""}`,
      ],
      d.lastPrompt && ["last prompt", `${tokens(d.lastPrompt.tokens)} of ${tokens(d.lastPrompt.budget)} tokens`],
      d.processes.length && ["processes", d.processes.map((p) => `${p.name} ${p.status}${p.ports.length ? ` :${p.ports.join(",")}` : ""}`).join(" · ")],
      d.commands.count && ["commands", commandsText(d.commands)],
      (d.usage.inputTokens || d.usage.costUsd) && [
        "model spend",
        `${spend({ tokens: d.usage.inputTokens + d.usage.outputTokens, costUsd: d.usage.costUsd })} in ${plural(d.usage.modelCalls, "call")}`,
      ],
      ["ledger", `${plural(d.events, "event")}`],
      d.createdAt && ["started", dateTime(d.createdAt)],
      d.lastActivity && ["last activity", ago(d.lastActivity)],
    ].filter(Boolean)
  );

  const unisolated = d.sandbox.level === "none";
  return h(
    "section",
    { class: "card header-card", id: "thread-header" },
    h(
      "div",
      { class: "header-top" },
      statusPill(d.status),
      idle && d.lastActivity
        ? h(
            "span",
            { class: "idle-note", title: "No event for a while: the process may have stopped. `ledgerloop resume` continues it." },
            `idle ${ago(d.lastActivity).replace(" ago", "")}`,
          )
        : null,
      h("span", { class: "mono muted small thread-id" }, d.thread),
      d.forked ? h("span", { class: "tag" }, "branched") : null,
    ),
    h("h1", { class: "goal" }, d.goal || "(no goal recorded)"),
    d.awaitingApproval
      ? h(
          "div",
          { class: "approval-wait" },
          h("strong", {}, "Waiting for approval: "),
          h("code", {}, d.awaitingApproval.command || d.awaitingApproval.tool || "a command"),
          d.awaitingApproval.reason ? h("span", { class: "muted" }, ` — ${d.awaitingApproval.reason}`) : null,
          h(
            "div",
            { class: "small muted" },
            "Answer with: ",
            h(
              "code",
              {},
              `ledgerloop resume ${d.thread}${state.workspace ? ` ${state.backend === "postgres" ? "--state" : "-w"} ${state.workspace}` : ""} --approve`,
            ),
            " (or --reject)",
          ),
        )
      : null,
    d.finishSummary ? h("div", { class: "finish-summary" }, h("span", { class: "label" }, "Finished: "), d.finishSummary) : null,
    h(
      "dl",
      { class: "facts" },
      facts.map(([k, v]) =>
        h(
          "div",
          { class: ["fact", k === "sandbox" && unisolated && "fact-warn"], title: k === "sandbox" && unisolated ? "commands ran without isolation" : null },
          h("dt", {}, k),
          h("dd", {}, k === "sandbox" && unisolated ? `${v} (not isolated)` : v),
        ),
      ),
    ),
    h(
      "div",
      { class: "header-cols" },
      h(
        "div",
        { class: "plan" },
        h("h2", {}, "Plan ", h("span", { class: "muted count" }, d.plan.length ? `${completed}/${d.plan.length} completed` : "")),
        d.plan.length
          ? h(
              "ol",
              { class: "subtasks", id: "plan" },
              d.plan.map((s) =>
                h(
                  "li",
                  { class: ["subtask", `sub-${s.status}`], dataset: { status: s.status } },
                  h("span", { class: "sub-icon", title: s.status.replace("_", " ") }, SUBTASK_ICON[s.status] || "•"),
                  h("span", { class: "sub-text" }, h("span", { class: "sub-desc" }, s.description), h("span", { class: "sub-id mono" }, s.id)),
                  h("span", { class: "sub-status" }, s.status.replace("_", " ")),
                  subtaskSpend(d, s.id),
                ),
              ),
            )
          : h("p", { class: "muted small" }, "No plan yet."),
      ),
      h(
        "div",
        { class: "decisions" },
        h("h2", {}, "Pinned decisions ", h("span", { class: "muted count" }, d.decisions.length ? String(d.decisions.length) : "")),
        d.decisions.length
          ? h(
              "ol",
              { class: "decision-list" },
              d.decisions.map((x) => h("li", {}, h("span", { class: "decision-step" }, `step ${x.step}`), h("span", {}, x.text))),
            )
          : h("p", { class: "muted small" }, "None recorded."),
      ),
    ),
    d.filesTouched.length
      ? h(
          "div",
          { class: "touched" },
          h("span", { class: "label" }, "Files changed by the run: "),
          d.filesTouched.map((f) => h("code", { class: "file" }, f)),
        )
      : null,
  );
}

function renderTabs() {
  const tabs = [
    ["timeline", "Timeline"],
    ["ledger", "Ledger"],
    ["checkpoints", "Checkpoints"],
  ];
  return h(
    "div",
    { class: "tabs", role: "tablist" },
    tabs.map(([id, label]) =>
      h(
        "a",
        { class: ["tab", state.tab === id && "active"], href: `#/t/${enc(String(state.threadId))}${id === "timeline" ? "" : `/${id}`}`, role: "tab" },
        label,
      ),
    ),
  );
}

export function renderThread() {
  const d = state.detail;
  if (!d) return;
  document.title = `${d.status} · ${oneLine(d.goal, 60)} · ledgerloop`;
  const main = clear($("main"));
  state.rendered = state.threadId;
  main.append(renderHeader(d), renderTabs());
  const body = h("div", { id: "tab-body" });
  main.append(body);
  if (state.tab === "ledger") renderLedgerTab(body);
  else if (state.tab === "checkpoints") renderCheckpointsTab(body);
  else renderTimeline(body);
  updateLive();
}

/** The "live" badge of a running run, with when it was last checked. */
export function updateLive() {
  const live = $("live");
  const d = state.detail;
  if (!d || d.status !== "running") {
    live.hidden = true;
    return;
  }
  live.hidden = false;
  // Through append(): Element.append would write a left-out (null) part as the text "null".
  append(clear(live), [h("span", { class: "live-dot" }), "live", state.lastPoll ? h("span", { class: "muted" }, ` · checked ${clock(state.lastPoll)}`) : null]);
}
