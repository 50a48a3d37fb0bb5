// @ts-check
// The timeline of a run: one entry per step (the model's answer, each action with its result), the
// events between steps, and the pages of earlier steps loaded on request.

import { getDetail, getEvent, getSteps } from "./api.js";
import { $, h } from "./dom.js";
import { bytes, clock, duration, oneLine, plural, spend, tokens } from "./format.js";
import { renderInterlude } from "./interlude.js";
import { routeTo, state, STEP_PAGE } from "./state.js";

/**
 * @typedef {import("../data.js").StepView} StepView
 * @typedef {import("../data.js").StepAction} StepAction
 * @typedef {import("../data.js").StepFeedback} StepFeedback
 * @typedef {import("../data.js").Clipped} Clipped
 * @typedef {import("../../events.js").TestCounts} TestCounts
 * @typedef {import("../../events.js").FileChanges} FileChanges
 */

/**
 * Loads the run's header and its last page of steps; earlier ones come on request.
 * @param {string} id
 */
export async function loadThread(id) {
  const [detail, steps] = await Promise.all([getDetail(id), getSteps(id, `last=${STEP_PAGE}`)]);
  state.stepsGen += 1;
  state.detail = detail;
  state.before = steps.before;
  state.steps = new Map(steps.steps.map((s) => [s.step, s]));
  state.earlier = steps.earlier;
  state.totalSteps = steps.total;
  state.lastSeq = Math.max(detail.lastSeq, steps.lastSeq);
}

/** @returns {number | null} */
export function firstLoadedStep() {
  /** @type {number | null} */
  let first = null;
  for (const n of state.steps.keys()) if (first === null || n < first) first = n;
  return first;
}

/**
 * Fetches the page of steps before the first one loaded (or every step from `downTo` on) and
 * draws it above the timeline's first step, keeping that step where the reader sees it.
 * @param {number | null} [downTo]
 */
export async function loadEarlier(downTo = null) {
  const id = state.threadId;
  const gen = state.stepsGen;
  const first = firstLoadedStep();
  if (!id || first === null || state.earlier <= 0 || state.loadingEarlier === gen) return;
  state.loadingEarlier = gen;
  const button = /** @type {HTMLButtonElement | null} */ (document.querySelector("#load-earlier button"));
  if (button) {
    button.disabled = true;
    button.textContent = "Loading earlier steps…";
  }
  const q = downTo !== null && downTo < first ? `from=${downTo}&to=${first - 1}` : `to=${first - 1}&last=${STEP_PAGE}`;
  try {
    const page = await getSteps(id, q);
    if (state.threadId !== id || state.stepsGen !== gen) return;
    for (const s of page.steps) state.steps.set(s.step, s);
    state.earlier = page.earlier;
    state.totalSteps = page.total;
    if (page.earlier === 0) state.before = page.before;
    insertEarlier(page.steps);
  } catch (err) {
    if (state.threadId !== id || state.stepsGen !== gen) return;
    const control = $("load-earlier");
    const replacement = earlierControl(`could not load: ${/** @type {Error} */ (err).message}`);
    if (control && replacement) control.replaceWith(replacement);
  } finally {
    if (state.loadingEarlier === gen) state.loadingEarlier = null;
  }
}

/**
 * Puts newly loaded earlier steps into the drawn timeline (if it is drawn) without moving what is in view.
 * @param {StepView[]} steps
 */
function insertEarlier(steps) {
  const timeline = $("timeline");
  if (!timeline || state.rendered !== state.threadId) return;
  const scroller = $("main");
  const anchor = timeline.querySelector(":scope > li.step");
  const top = anchor ? anchor.getBoundingClientRect().top : 0;
  const nodes = [...steps]
    .sort((a, b) => a.step - b.step)
    .filter((s) => !$(`step-${s.step}`))
    .map(renderStep);
  if (anchor) anchor.before(...nodes);
  else timeline.append(...nodes);
  const control = $("load-earlier");
  const next = earlierControl();
  if (control && next) control.replaceWith(next);
  else if (control) control.remove();
  if (!next && state.before.length && !timeline.querySelector(":scope > li.before")) timeline.prepend(beforeNode());
  if (anchor) scroller.scrollTop += anchor.getBoundingClientRect().top - top;
}

/** @param {HTMLElement} body */
export function renderTimeline(body) {
  const list = h("ol", { class: "timeline", id: "timeline" });
  body.append(list);
  const more = earlierControl();
  if (more) list.append(more);
  else if (state.before.length) list.append(beforeNode());
  const steps = [...state.steps.values()].sort((a, b) => a.step - b.step);
  if (!steps.length) list.append(h("li", { class: "empty" }, "No steps yet."));
  for (const s of steps) list.append(renderStep(s));
}

/** The events before the first step (the task spec and its plan). */
export function beforeNode() {
  return h("li", { class: "interludes before" }, state.before.map(renderInterlude));
}

/**
 * The "load earlier steps" control at the top of a timeline that does not start at the first step.
 * @param {string} [problem]
 */
export function earlierControl(problem) {
  if (state.earlier <= 0) return null;
  const n = Math.min(STEP_PAGE, state.earlier);
  return h(
    "li",
    { class: "load-earlier", id: "load-earlier" },
    h("button", { class: "button", type: "button", onclick: () => loadEarlier() }, `Load ${plural(n, "earlier step")}`),
    h("span", { class: "muted small" }, `${plural(state.steps.size, "step")} of ${state.totalSteps} shown; ${state.earlier} earlier not loaded`),
    problem ? h("span", { class: "warn small" }, problem) : null,
  );
}

/** @param {StepAction} a */
function argsSummary(a) {
  const args = /** @type {Record<string, any> | null} */ (a.args && typeof a.args === "object" ? a.args : null);
  if (a.invalid) return a.argsText ?? JSON.stringify(a.args ?? {});
  if (!args) return a.argsText ?? "";
  if (typeof args.command === "string") return args.command;
  if (typeof args.path === "string") {
    const range = args.startLine ? `:${args.startLine}${args.endLine ? `-${args.endLine}` : ""}` : "";
    return args.path + range;
  }
  if (typeof args.text === "string") return args.text;
  if (typeof args.summary === "string") return args.summary;
  if (typeof args.query === "string") return args.query;
  if (Array.isArray(args.subtasks)) return args.subtasks.map((/** @type {{ id: string; status: string }} */ s) => `${s.id}: ${s.status}`).join(", ");
  if (typeof args.glob === "string") return args.glob;
  const s = JSON.stringify(args);
  return s === "{}" ? "" : s;
}

/** @param {TestCounts | null} t */
function testsChip(t) {
  if (!t) return null;
  return h(
    "span",
    { class: ["tests", t.failed ? "tests-fail" : "tests-pass"], title: t.failedTests.length ? `failing: ${t.failedTests.join("; ")}` : `${t.framework}` },
    h("span", { class: "t-pass" }, `${t.passed} passed`),
    t.failed ? h("span", { class: "t-fail" }, `${t.failed} failed`) : null,
    t.skipped ? h("span", { class: "t-skip" }, `${t.skipped} skipped`) : null,
  );
}

/** @param {FileChanges | null} c */
function filesChips(c) {
  if (!c) return null;
  const chips = [
    ...c.created.map((f) => h("code", { class: "file f-created", title: "created" }, `+ ${f}`)),
    ...c.modified.map((f) => h("code", { class: "file f-modified", title: "modified" }, `~ ${f}`)),
    ...c.deleted.map((f) => h("code", { class: "file f-deleted", title: "deleted" }, `− ${f}`)),
  ];
  return chips.length ? h("span", { class: "files" }, chips) : null;
}

/**
 * One output of an action (clipped in the listing; "show all" fetches the event in full).
 * @param {"output" | "stdout" | "stderr"} key
 * @param {string} label
 * @param {Clipped | null} clipped
 * @param {string} eventId
 */
function outputBlock(key, label, clipped, eventId) {
  if (!clipped || clipped.text === "") return null;
  const pre = h("pre", { class: "output" }, clipped.text);
  const more = clipped.fullLength
    ? h(
        "button",
        {
          class: "link-button",
          type: "button",
          onclick: async (/** @type {MouseEvent} */ ev) => {
            const button = /** @type {HTMLButtonElement} */ (ev.target);
            button.disabled = true;
            try {
              const e = await getEvent(String(state.threadId), eventId);
              pre.textContent = /** @type {string | undefined} */ (/** @type {Record<string, unknown>} */ (e.payload)[key]) ?? "";
              button.remove();
            } catch (err) {
              button.textContent = `could not load: ${/** @type {Error} */ (err).message}`;
            }
          },
        },
        `show all ${clipped.fullLength.toLocaleString()} characters`,
      )
    : null;
  return h(
    "details",
    { class: "out", dataset: { key: `${eventId}:${key}` } },
    h("summary", {}, label, clipped.fullLength ? h("span", { class: "muted" }, " (clipped)") : null),
    pre,
    more,
  );
}

/**
 * What ended a command that did not end by itself, in words ("memory limit", "killed from outside").
 * @param {StepFeedback} f
 */
function stopText(f) {
  switch (f.stoppedBy) {
    case "limit":
      return f.limit === "timeout" ? "timed out" : f.limit ? `${f.limit.replace(/_/g, " ")} limit` : "a limit";
    case "run_stopped":
      return "run stopped";
    case "session_ended":
      return "sandbox session ended";
    case "outside":
      return "killed from outside";
    default:
      return null;
  }
}

/**
 * CPU time and peak memory of a command, where its cgroups measured them.
 * @param {StepFeedback} f
 */
function usageChip(f) {
  const u = f.usage;
  if (!u || (u.cpuMs === null && u.memoryPeakBytes === null)) return null;
  const parts = [u.cpuMs !== null ? `cpu ${duration(u.cpuMs)}` : null, u.memoryPeakBytes !== null ? `${bytes(u.memoryPeakBytes)} peak` : null].filter(Boolean);
  return h("span", { class: "usage muted small", title: "CPU time and peak memory of all the command's processes (its cgroups)" }, parts.join(" · "));
}

/** @param {StepAction} a */
function renderAction(a) {
  const f = a.feedback;
  const waiting = !f && state.detail && state.detail.awaitingApproval && state.detail.awaitingApproval.actionId === a.id;
  const status = a.invalid ? "invalid" : f ? f.status : waiting ? "awaiting approval" : "pending";
  const summary = argsSummary(a);
  const exit = f && f.exitCode !== null && f.exitCode !== undefined ? `exit ${f.exitCode}` : f && f.signal ? `signal ${f.signal}` : null;
  return h(
    "li",
    { class: ["action", `ac-${waiting ? "waiting" : status}`], dataset: { tool: a.tool, status: waiting ? "waiting" : status } },
    h(
      "div",
      { class: "action-line" },
      h("span", { class: "tool" }, a.tool),
      h("code", { class: "action-args", title: summary }, oneLine(summary, 220)),
      h(
        "span",
        { class: "action-result" },
        h("span", { class: ["status", `s-${waiting ? "waiting" : status}`] }, status, f && f.errorClass ? ` · ${f.errorClass.replace(/_/g, " ")}` : ""),
        exit && f ? h("span", { class: ["exit", f.exitCode === 0 ? "exit-ok" : "exit-bad"] }, exit) : null,
        f && stopText(f) ? h("span", { class: ["stopped", `stopped-${f.stoppedBy}`] }, stopText(f)) : null,
        f ? h("span", { class: "muted small" }, duration(f.durationMs)) : null,
        f ? usageChip(f) : null,
      ),
    ),
    a.invalid ? h("div", { class: "invalid-note" }, `rejected before running: ${a.invalid}`) : null,
    f && (f.tests || f.filesChanged)
      ? h(
          "div",
          { class: "action-facts" },
          testsChip(f.tests),
          f.tests && f.tests.failedTests.length
            ? h(
                "span",
                { class: "failing" },
                "failing: ",
                f.tests.failedTests.map((t) => h("span", { class: "failing-test" }, t)),
              )
            : null,
          filesChips(f.filesChanged),
        )
      : null,
    a.approvals.map((p) =>
      h(
        "div",
        { class: ["approval", p.decision === "approved" ? "approval-yes" : "approval-no"] },
        `${p.decision} by ${p.by === "auto" ? "policy (auto)" : "the user"}`,
        h("span", { class: "muted" }, ` — rule ${p.rule}: ${p.reason}`),
      ),
    ),
    f
      ? h(
          "div",
          { class: "outputs" },
          outputBlock("output", "tool result (what the model read)", f.output, f.id),
          outputBlock("stdout", "stdout", f.stdout, f.id),
          outputBlock("stderr", "stderr", f.stderr, f.id),
          a.args && typeof a.args === "object" && Object.keys(a.args).length
            ? h(
                "details",
                { class: "out", dataset: { key: `${a.id}:args` } },
                h("summary", {}, "arguments"),
                h("pre", { class: "output" }, JSON.stringify(a.args, null, 2)),
              )
            : null,
        )
      : null,
  );
}

/** @param {StepView} s */
export function renderStep(s) {
  const selected = state.selectedStep === s.step;
  const li = h(
    "li",
    { class: ["step", `outcome-${s.outcome}`, selected && "selected"], id: `step-${s.step}`, dataset: { step: s.step } },
    h(
      "div",
      {
        class: "step-head",
        role: "button",
        tabindex: "0",
        title: "show what the model saw at this step",
        onclick: () => selectStep(s.step),
      },
      h("span", { class: "step-no" }, `Step ${s.step}`),
      h("span", { class: "muted small" }, clock(s.startedAt)),
      h("span", { class: "muted small" }, duration(new Date(s.endedAt).getTime() - new Date(s.startedAt).getTime())),
      h("span", { class: "spacer" }),
      s.spend ? h("span", { class: "step-cost muted small mono", title: "tokens and cost of this step's model calls" }, spend(s.spend)) : null,
      testsChip(s.tests),
      s.context
        ? h(
            "span",
            { class: ["ctx-button", selected && "active"], title: "the prompt of this step" },
            `context · ${tokens(s.context.tokens)} tok`,
            s.context.omitted ? h("span", { class: "omitted-badge" }, ` · ${s.context.omitted} left out`) : null,
          )
        : null,
    ),
    s.model && s.model.reasoning
      ? h(
          "details",
          { class: "model-reasoning" },
          h("summary", { class: "muted small" }, `reasoning · ${s.model.reasoning.length.toLocaleString()} ch`),
          h("pre", { class: "output" }, s.model.reasoning),
        )
      : null,
    s.model && s.model.content ? h("p", { class: "model-text" }, s.model.content) : null,
    s.actions.length
      ? h("ol", { class: "actions" }, s.actions.map(renderAction))
      : h("p", { class: "muted small no-actions" }, s.model ? "No tool calls." : "Waiting for the model…"),
    s.after.length ? h("div", { class: "interludes" }, s.after.map(renderInterlude)) : null,
  );
  /** @type {HTMLElement} */ (li.querySelector(".step-head")).addEventListener("keydown", (e) => {
    if (e.key === "Enter" || e.key === " ") {
      e.preventDefault();
      selectStep(s.step);
    }
  });
  return li;
}

/** @param {number} step */
function selectStep(step) {
  routeTo(state.threadId, { tab: "timeline", step: state.selectedStep === step && !$("panel").hidden ? null : step });
}
