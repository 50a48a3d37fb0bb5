// @ts-check
// The panel showing what the model saw at a step: the budget, each section and its items, what was
// left out, and the exact prompt.

import { enc, getContext } from "./api.js";
import { $, clear, h, renderError } from "./dom.js";
import { clock, oneLine, plural } from "./format.js";
import { routeTo, state } from "./state.js";

/**
 * @typedef {import("../data.js").ContextView} ContextView
 * @typedef {import("../../events.js").ContextItem} ContextItem
 * @typedef {import("../../models/port.js").ChatMessage} ChatMessage
 */

/** @type {Record<string, string>} */
const SECTION_COLORS = {
  system: "#8c959f",
  tools: "#afb8c1",
  fixed: "#d0d7de",
  goal: "#8250df",
  plan: "#a475f9",
  decisions: "#bf3989",
  status: "#e16f24",
  recent: "#0969da",
  workspace: "#1b7c83",
  focus: "#1a7f37",
  retrieved: "#4ac26b",
  recalled: "#9a6700",
  lessons: "#d4a72c",
  history: "#57606a",
  summaries: "#57606a",
};
/** @param {string} s */
const sectionColor = (s) => SECTION_COLORS[s] || "#6e7781";

export function closePanel() {
  state.selectedStep = null;
  const panel = $("panel");
  panel.hidden = true;
  clear(panel);
  $("layout").classList.remove("with-panel");
  for (const el of document.querySelectorAll(".step.selected")) el.classList.remove("selected");
  for (const el of document.querySelectorAll(".ctx-button.active")) el.classList.remove("active");
}

/** @param {number} step */
export async function openContext(step) {
  state.selectedStep = step;
  for (const el of document.querySelectorAll(".step")) el.classList.toggle("selected", Number(/** @type {HTMLElement} */ (el).dataset.step) === step);
  // Opened from a link (or a reload): bring the step into view; a click leaves it where it is.
  $(`step-${step}`)?.scrollIntoView({ block: "nearest" });
  for (const el of document.querySelectorAll(".step .ctx-button"))
    el.classList.toggle("active", Number(/** @type {HTMLElement} */ (el.closest(".step")).dataset.step) === step);
  const panel = $("panel");
  panel.hidden = false;
  $("layout").classList.add("with-panel");
  clear(panel).append(panelHead(step), h("p", { class: "empty" }, "Loading the prompt…"));
  const thread = String(state.threadId);
  let ctx;
  try {
    ctx = await getContext(thread, step);
  } catch (err) {
    if (state.threadId !== thread || state.selectedStep !== step) return;
    clear(panel).append(panelHead(step));
    const box = h("div", {});
    renderError(box, err);
    panel.append(box);
    return;
  }
  if (state.threadId !== thread || state.selectedStep !== step) return;
  renderContext(panel, ctx);
}

/**
 * @param {number} step
 * @param {string} [sub]
 */
function panelHead(step, sub) {
  return h(
    "div",
    { class: "panel-head" },
    h("div", {}, h("div", { class: "panel-title" }, `Step ${step} · what the model saw`), sub ? h("div", { class: "muted small" }, sub) : null),
    h("button", { class: "close", type: "button", title: "close", "aria-label": "close", onclick: () => routeTo(state.threadId) }, "×"),
  );
}

/**
 * @param {HTMLElement} panel
 * @param {ContextView} ctx
 */
function renderContext(panel, ctx) {
  clear(panel);
  panel.append(panelHead(ctx.step, `prompt built ${clock(ctx.ts)} · event ${ctx.eventId.slice(0, 8)}`));
  const pct = ctx.budget ? Math.min(100, (ctx.tokens / ctx.budget) * 100) : 0;
  const leftOut = ctx.omitted.reduce((n, i) => n + i.tokens, 0);

  // Budget: one bar, a segment per section, scaled to the budget.
  const bar = h(
    "div",
    { class: "budget-bar", title: `${ctx.tokens} of ${ctx.budget} tokens` },
    ctx.sections.map((s) =>
      h("span", {
        class: "budget-seg",
        title: `${s.section}: ${s.tokens} tokens`,
        style: { width: `${ctx.budget ? (s.tokens / ctx.budget) * 100 : 0}%`, background: sectionColor(s.section) },
      }),
    ),
  );
  panel.append(
    h(
      "div",
      { class: "budget" },
      h(
        "div",
        { class: "budget-numbers" },
        h("strong", {}, `${ctx.tokens.toLocaleString()} tokens`),
        h("span", { class: "muted" }, ` of ${ctx.budget.toLocaleString()} (${pct.toFixed(1)}%)`),
        leftOut ? h("span", { class: "warn" }, ` · ${leftOut.toLocaleString()} left out`) : null,
      ),
      bar,
    ),
  );

  // Sections, each expandable into its items.
  /** @type {Map<string, ContextItem[]>} */
  const bySection = new Map();
  for (const i of ctx.items) {
    const list = bySection.get(i.section) ?? [];
    list.push(i);
    bySection.set(i.section, list);
  }
  panel.append(
    h("h3", {}, "Included"),
    h(
      "div",
      { class: "sections" },
      ctx.sections.map((s) =>
        h(
          "details",
          { class: "section" },
          h(
            "summary",
            {},
            h("span", { class: "swatch", style: { background: sectionColor(s.section) } }),
            h("span", { class: "section-name" }, s.section),
            h("span", { class: "muted small" }, s.items > 1 ? ` ${s.items} items` : ""),
            h("span", { class: "spacer" }),
            h(
              "span",
              { class: "section-share", title: `${((s.tokens / Math.max(1, ctx.tokens)) * 100).toFixed(1)}% of the prompt` },
              h("span", { style: { width: `${(s.tokens / Math.max(1, ctx.tokens)) * 100}%`, background: sectionColor(s.section) } }),
            ),
            h("span", { class: "section-tokens" }, `${s.tokens.toLocaleString()} tok`),
          ),
          h("ul", { class: "items" }, (bySection.get(s.section) || []).map(renderItem)),
        ),
      ),
    ),
    h("h3", {}, "Left out"),
    ctx.omitted.length
      ? h("ul", { class: "items omitted" }, ctx.omitted.map(renderItem))
      : h("p", { class: "muted small" }, "Nothing: everything considered fit in the budget."),
    h("h3", {}, "Prompt ", h("span", { class: "muted count" }, plural(ctx.messages.length, "message"))),
    h(
      "div",
      { class: "messages" },
      ctx.messages.map((m, i) => renderMessage(m, i, ctx.messages)),
    ),
  );
}

/** @param {ContextItem} i */
function renderItem(i) {
  const m = /^turn:step(\d+):/.exec(i.source);
  const source = m
    ? h("a", { href: `#/t/${enc(String(state.threadId))}/s/${m[1]}`, class: "source mono", title: i.source }, `step ${m[1]} (action → feedback)`)
    : h("span", { class: "source mono", title: i.source }, i.source);
  return h(
    "li",
    { class: "item" },
    h(
      "div",
      { class: "item-line" },
      source,
      h("span", { class: "spacer" }),
      i.score !== undefined ? h("span", { class: "muted small" }, `score ${Number(i.score).toFixed(2)}`) : null,
      h("span", { class: "item-tokens" }, `${i.tokens.toLocaleString()}`),
    ),
    i.note ? h("div", { class: "item-note" }, i.note) : null,
  );
}

/**
 * @param {ChatMessage} m
 * @param {number} i
 * @param {ChatMessage[]} all
 */
function renderMessage(m, i, all) {
  const label = m.role === "tool" ? `tool · ${m.name}` : m.role;
  const calls = m.role === "assistant" && m.toolCalls && m.toolCalls.length ? m.toolCalls : null;
  // Read first: the pinned user message (goal, decisions), the newest tool result (what the last
  // action gave) and the last message (run status, plan, files: the volatile part of the prompt).
  let lastTool = -1;
  for (let k = 0; k < all.length; k++) if (all[k]?.role === "tool") lastTool = k;
  const open = (m.role === "user" && i <= 1) || i === lastTool || i === all.length - 1;
  return h(
    "details",
    { class: ["message", `m-${m.role}`], open },
    h(
      "summary",
      {},
      h("span", { class: ["role", `r-${m.role}`] }, label),
      h("span", { class: "msg-preview" }, oneLine(m.content, 90) || (calls ? "" : "(empty)")),
      calls ? h("span", { class: "msg-calls" }, `→ ${calls.map((c) => c.name).join(", ")}`) : null,
      h("span", { class: "muted small msg-len" }, `${m.content.length.toLocaleString()} ch`),
    ),
    h("pre", { class: "output message-body" }, m.content),
    calls ? h("pre", { class: "output message-calls" }, calls.map((c) => `${c.name}(${c.argsText ?? JSON.stringify(c.args ?? {})})`).join("\n")) : null,
  );
}
