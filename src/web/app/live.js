// @ts-check
// Live updates of the run on screen: poll for new events, redraw only the header and the steps that changed.

import { getDetail, getEvents, getSteps } from "./api.js";
import { $, clear, h } from "./dom.js";
import { oneLine } from "./format.js";
import { renderLedgerTab } from "./ledger-tab.js";
import { IDLE_POLL_MS, state } from "./state.js";
import { refreshThreads } from "./threads.js";
import { renderHeader, renderThread, updateLive } from "./thread-view.js";
import { beforeNode, earlierControl, loadThread, renderStep } from "./timeline.js";

/**
 * Keeps which <details> were open, so a refreshed step does not fold up under the reader.
 * @param {Element} el
 */
function openKeys(el) {
  return new Set([...el.querySelectorAll("details[open]")].map((d) => /** @type {HTMLElement} */ (d).dataset.key).filter(Boolean));
}
/**
 * @param {Element} el
 * @param {Set<string | undefined>} keys
 */
function reopen(el, keys) {
  for (const d of el.querySelectorAll("details")) if (d.dataset.key && keys.has(d.dataset.key)) d.open = true;
}

export async function poll() {
  const id = state.threadId;
  const d = state.detail;
  if (!id || !d || state.polling || document.hidden) return;
  // A run that is not running may still be resumed (an approval answered, a rewind): look now and then.
  if (d.status !== "running" && state.lastPoll && Date.now() - new Date(state.lastPoll).getTime() < IDLE_POLL_MS) return;
  state.polling = true;
  try {
    // Only what is new: events after the last seq seen. Most polls of a quiet run return nothing.
    let page = await getEvents(id, `after=${state.lastSeq}&limit=1000`);
    const fresh = [...page.events];
    while (page.more && state.threadId === id) {
      page = await getEvents(id, `after=${page.next}&limit=1000`);
      fresh.push(...page.events);
    }
    state.lastPoll = new Date().toISOString();
    if (state.threadId !== id) return;
    if (!fresh.length) {
      updateLive();
      return;
    }
    state.lastSeq = page.next;
    if (fresh.some((e) => e.type === "time_travel")) {
      // Another branch became current: every step may differ.
      await loadThread(id);
      if (state.threadId === id) renderThread();
      return;
    }
    const shown = [...state.steps.keys()];
    const from = shown.length ? Math.max(...shown) : 0;
    const [detail, steps] = await Promise.all([getDetail(id), getSteps(id, `from=${from}`)]);
    if (state.threadId !== id) return;
    state.detail = detail;
    if (from <= 1 && state.earlier === 0) state.before = steps.before;
    for (const s of steps.steps) state.steps.set(s.step, s);
    state.totalSteps = steps.total;
    // Re-render the header and only the steps that changed; keep the reader's place and open outputs.
    const header = $("thread-header");
    if (header) header.replaceWith(renderHeader(detail));
    const body = $("tab-body");
    if (state.tab === "ledger" && body && !state.ledger.more && state.ledger.loaded) {
      state.ledger.events.push(...fresh.filter((e) => !state.ledger.type || e.type === state.ledger.type));
      state.ledger.next = state.lastSeq;
      renderLedgerTab(clear(body));
    }
    const timeline = $("timeline");
    if (timeline) {
      timeline.querySelector(":scope > li.empty")?.remove();
      if (from <= 1 && state.earlier === 0 && state.before.length) {
        const b = timeline.querySelector(":scope > li.before");
        const nb = beforeNode();
        if (b) b.replaceWith(nb);
        else timeline.prepend(nb);
      }
      // The count of steps shown grew; a load of earlier steps in flight redraws the control itself.
      const control = $("load-earlier");
      const next = earlierControl();
      if (control && next && state.loadingEarlier === null) control.replaceWith(next);
      for (const s of steps.steps) {
        const old = $(`step-${s.step}`);
        const node = renderStep(s);
        if (old) {
          const keys = openKeys(old);
          old.replaceWith(node);
          reopen(node, keys);
        } else timeline.append(node);
      }
    }
    document.title = `${detail.status} · ${oneLine(detail.goal, 60)} · ledgerloop`;
    updateLive();
    const t = state.threads.find((x) => x.thread === id);
    if (t && t.status !== detail.status) refreshThreads();
  } catch (err) {
    const live = $("live");
    live.hidden = false;
    clear(live).append(h("span", { class: "warn" }, `update failed: ${/** @type {Error} */ (err).message}`));
  } finally {
    state.polling = false;
  }
}
