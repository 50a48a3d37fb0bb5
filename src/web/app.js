// @ts-check
/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// The run viewer's page: plain JS as ES modules (app/*.js), no build step, no dependencies. Type-checked
// by the project's `tsc` (// @ts-check, with the server's own types from data.ts through JSDoc).
//
// Everything shown comes from the ledger, which holds model and tool output: it is treated as
// hostile. Text only ever reaches the DOM through text nodes and attribute values (h() in
// app/dom.js); nothing assigns innerHTML, and the server's CSP forbids inline script anyway.

import { closePanel, openContext } from "./app/context-panel.js";
import { $, clear, h, renderError } from "./app/dom.js";
import { poll } from "./app/live.js";
import { LIST_REFRESH_MS, parseRoute, POLL_MS, routeTo, state } from "./app/state.js";
import { refreshThreads, renderHome, renderThreadList } from "./app/threads.js";
import { renderThread } from "./app/thread-view.js";
import { firstLoadedStep, loadEarlier, loadThread } from "./app/timeline.js";

async function onRoute() {
  const r = parseRoute();
  const token = ++state.token;
  if (!r.thread) {
    state.threadId = null;
    state.detail = null;
    state.rendered = null;
    closePanel();
    renderThreadList();
    renderHome();
    return;
  }
  if (r.thread !== state.threadId) {
    state.threadId = r.thread;
    state.detail = null;
    state.steps = new Map();
    state.before = [];
    state.earlier = 0;
    state.totalSteps = 0;
    state.lastSeq = 0;
    state.ledger = { type: "", events: [], next: 0, more: false };
    state.rendered = null;
    renderThreadList();
    clear($("main")).append(h("p", { class: "empty" }, "Loading run…"));
    try {
      await loadThread(r.thread);
    } catch (err) {
      if (token !== state.token) return;
      renderError($("main"), err);
      closePanel();
      return;
    }
    if (token !== state.token) return;
  }
  // Choosing a step only opens its context: the timeline stays as it is (scroll, open outputs).
  if (r.tab !== state.tab || state.rendered !== state.threadId) {
    state.tab = r.tab;
    renderThread();
  }
  if (r.step !== null) {
    // A link to a step before the loaded ones (a reload, the context panel) loads down to it.
    const first = firstLoadedStep();
    if (r.step >= 1 && !state.steps.has(r.step) && state.earlier > 0 && first !== null && r.step < first) {
      await loadEarlier(r.step);
      if (token !== state.token) return;
    }
    openContext(r.step);
  } else closePanel();
}

window.addEventListener("hashchange", onRoute);
document.addEventListener("keydown", (e) => {
  if (e.key === "Escape" && !$("panel").hidden) routeTo(state.threadId);
});

await refreshThreads();
await onRoute();
setInterval(poll, POLL_MS);
setInterval(() => {
  if (!document.hidden) refreshThreads();
}, LIST_REFRESH_MS);
