// @ts-check
// The list of runs on the left, and the page shown when no run is chosen.

import { enc, getThreads } from "./api.js";
import { $, clear, h, statusPill } from "./dom.js";
import { ago, oneLine, plural } from "./format.js";
import { state } from "./state.js";

/** @typedef {import("../data.js").ThreadSummary} ThreadSummary */

/**
 * Where a run of the queue stands (PostgreSQL state): the worker holding it, or that it waits for one.
 * @param {ThreadSummary["queue"] | null} q
 * @returns {string | null}
 */
export function queueText(q) {
  if (!q) return null;
  const moved = q.takeovers ? ` · taken over ${q.takeovers}×` : "";
  if (q.worker) return `held by ${q.worker}${moved}`;
  if (q.state === "queued") return `waiting for a worker${moved}`;
  return q.takeovers ? `taken over ${q.takeovers}×` : null;
}

export async function refreshThreads() {
  try {
    const r = await getThreads();
    state.threads = r.threads;
    state.workspace = r.workspace;
    state.backend = r.backend;
    $("workspace").textContent = r.workspace;
    $("workspace").title = r.workspace;
  } catch (err) {
    state.threads = [];
    state.threadsError = /** @type {Error} */ (err).message;
  }
  renderThreadList();
  if (!state.threadId) renderHome();
}

export function renderThreadList() {
  const ol = clear($("threads"));
  if (!state.threads.length) {
    ol.append(h("li", { class: "thread-empty" }, state.threadsError || "No runs yet."));
    return;
  }
  for (const t of state.threads) {
    ol.append(
      h(
        "li",
        {},
        h(
          "a",
          {
            class: ["thread-item", t.thread === state.threadId && "active"],
            href: `#/t/${enc(t.thread)}`,
            title: t.goal || t.thread,
            dataset: { thread: t.thread },
          },
          h("div", { class: "thread-item-top" }, statusPill(t.status), h("span", { class: "muted small" }, t.lastActivity ? ago(t.lastActivity) : "")),
          h("div", { class: "thread-goal" }, oneLine(t.goal || "(no goal recorded)", 110)),
          h("div", { class: "thread-meta" }, h("span", { class: "mono" }, t.thread), t.steps !== null ? ` · ${plural(t.steps, "step")}` : ""),
          queueText(t.queue) ? h("div", { class: "thread-worker", title: t.queue?.note || null }, queueText(t.queue)) : null,
        ),
      ),
    );
  }
}

export function renderHome() {
  const main = clear($("main"));
  if (!state.threads.length) {
    main.append(
      h(
        "div",
        { class: "home" },
        h("h1", {}, "No runs yet"),
        state.backend === "postgres"
          ? h(
              "p",
              {},
              "Start one in this database, e.g. ",
              h("code", {}, 'ledgerloop run "<task>" --state … --model …'),
              " or ",
              h("code", {}, 'ledgerloop submit "<task>" --state …'),
              "; it appears here.",
            )
          : h(
              "p",
              {},
              "Start one in this workspace, e.g. ",
              h("code", {}, 'ledgerloop run "<task>" --model …'),
              " or ",
              h("code", {}, "ledgerloop demo"),
              "; it appears here.",
            ),
      ),
    );
    return;
  }
  main.append(
    h(
      "div",
      { class: "home" },
      h("h1", {}, plural(state.threads.length, "run")),
      h("p", { class: "muted" }, "Pick a run on the left to see its plan, its steps, and what the model saw at each step."),
    ),
  );
}
