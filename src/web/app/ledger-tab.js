// @ts-check
// The Ledger tab (the raw events, filterable by type, a row's JSON on click) and the Checkpoints tab.

import { getCheckpoints, getEvents } from "./api.js";
import { append, clear, h, renderError, statusPill } from "./dom.js";
import { clock, oneLine, plural } from "./format.js";
import { state } from "./state.js";

/** @typedef {import("../../events.js").LedgerEvent} LedgerEvent */

/** @type {Array<import("../../events.js").EventType>} */
const EVENT_TYPES = [
  "task_spec",
  "plan_update",
  "agent_action",
  "environment_feedback",
  "workspace_snapshot",
  "decision",
  "context_built",
  "model_call",
  "reflection",
  "summary",
  "run_status",
  "time_travel",
  "approval",
];

/** @param {LedgerEvent} e */
function eventLine(e) {
  switch (e.type) {
    case "agent_action": {
      const p = e.payload;
      return `${p.tool} ${oneLine(JSON.stringify(p.args ?? p.argsText ?? {}), 120)}${p.invalid ? " [invalid]" : ""}`;
    }
    case "environment_feedback":
      return `${e.payload.tool} → ${e.payload.status}${e.payload.errorClass ? ` (${e.payload.errorClass})` : ""}`;
    case "decision":
      return oneLine(e.payload.text, 140);
    case "run_status":
      return `${e.payload.status} after ${e.payload.steps} steps`;
    case "model_call":
      return `${e.payload.node} turn ${e.payload.turn}: ${plural((e.payload.toolCalls || []).length, "tool call")}`;
    case "context_built":
      return `step ${e.payload.step}: ${e.payload.tokens} of ${e.payload.budget} tokens`;
    case "workspace_snapshot": {
      const p = e.payload;
      return `${p.kind}${p.changed ? ` · ${p.changed.created.length + p.changed.modified.length + p.changed.deleted.length} changed` : ""}`;
    }
    default:
      return oneLine(JSON.stringify(e.payload || {}), 140);
  }
}

/** @param {boolean} reset */
async function loadLedgerPage(reset) {
  const L = state.ledger;
  if (reset) Object.assign(L, { events: [], next: 0, more: false });
  const q = new URLSearchParams({ after: String(L.next), limit: "200" });
  if (L.type) q.set("type", L.type);
  const page = await getEvents(String(state.threadId), String(q));
  L.events.push(...page.events);
  L.next = page.next;
  L.more = page.more;
}

/** @param {HTMLElement} body */
export function renderLedgerTab(body) {
  const L = state.ledger;
  const select = h(
    "select",
    {
      "aria-label": "event type",
      onchange: async (/** @type {Event} */ ev) => {
        L.type = /** @type {HTMLSelectElement} */ (ev.target).value;
        await loadLedgerPage(true).catch((err) => renderError(body, err));
        renderLedgerTab(clear(body));
      },
    },
    h("option", { value: "" }, "all event types"),
    EVENT_TYPES.map((t) => {
      const o = h("option", { value: t }, t);
      if (t === L.type) o.selected = true;
      return o;
    }),
  );
  const table = h(
    "table",
    { class: "ledger" },
    h("thead", {}, h("tr", {}, h("th", {}, "seq"), h("th", {}, "time"), h("th", {}, "type"), h("th", {}, "what"))),
    h(
      "tbody",
      {},
      L.events.map((e) => {
        const detail = h("tr", { class: "ledger-detail", hidden: true }, h("td", { colspan: "4" }, h("pre", { class: "output" }, JSON.stringify(e, null, 2))));
        const row = h(
          "tr",
          { class: ["ledger-row", `ev-${e.type}`], onclick: () => (detail.hidden = !detail.hidden) },
          h("td", { class: "mono num" }, String(e.seq)),
          h("td", { class: "mono muted" }, clock(e.ts)),
          h("td", {}, h("span", { class: ["evtype", `evt-${e.type}`] }, e.type)),
          h("td", { class: "what" }, eventLine(e)),
        );
        return [row, detail];
      }),
    ),
  );
  // Through append(): Element.append would write a left-out (null) part as the text "null".
  append(body, [
    h("div", { class: "toolbar" }, select, h("span", { class: "muted small" }, `${plural(L.events.length, "event")} shown · click a row for its JSON`)),
    table,
    L.more
      ? h(
          "button",
          {
            class: "button",
            type: "button",
            onclick: async () => {
              await loadLedgerPage(false).catch((err) => renderError(body, err));
              renderLedgerTab(clear(body));
            },
          },
          "load more",
        )
      : null,
  ]);
  if (!L.events.length && L.next === 0 && !L.loaded) {
    L.loaded = true;
    loadLedgerPage(true)
      .then(() => renderLedgerTab(clear(body)))
      .catch((err) => renderError(body, err));
  }
}

/** @param {HTMLElement} body */
export function renderCheckpointsTab(body) {
  body.append(h("p", { class: "empty" }, "Loading checkpoints…"));
  getCheckpoints(String(state.threadId))
    .then((r) => {
      clear(body).append(
        h(
          "p",
          { class: "muted small" },
          `${plural(r.checkpoints.length, "checkpoint")}${r.more ? " (newest shown)" : ""}, newest first. Rewind or fork with `,
          h("code", {}, "ledgerloop rewind <thread> --to <checkpoint>"),
          ".",
        ),
        h(
          "table",
          { class: "ledger checkpoints" },
          h(
            "thead",
            {},
            h(
              "tr",
              {},
              ["checkpoint", "time", "superstep", "next", "step", "status"].map((c) => h("th", {}, c)),
            ),
          ),
          h(
            "tbody",
            {},
            r.checkpoints.map((c) =>
              h(
                "tr",
                {},
                h("td", { class: "mono", title: c.checkpointId }, c.checkpointId),
                h("td", { class: "mono muted" }, clock(c.createdAt)),
                h("td", { class: "num" }, c.superstep ?? ""),
                h(
                  "td",
                  {},
                  c.interrupted
                    ? h("span", { class: "pill st-interrupted" }, "awaiting approval")
                    : c.next.join(", ") || h("span", { class: "muted" }, "(end)"),
                ),
                h("td", { class: "num" }, c.agentStep ?? ""),
                h("td", {}, c.status ? statusPill(c.status) : ""),
              ),
            ),
          ),
        ),
      );
    })
    .catch((err) => renderError(body, err));
}
