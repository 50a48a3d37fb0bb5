// @ts-check
// The events between steps: plan changes, pinned decisions, reflections, summaries, time travel, the final status.

import { h } from "./dom.js";
import { clock, oneLine, plural } from "./format.js";

/**
 * @typedef {import("../data.js").Interlude} Interlude
 * @typedef {import("../../events.js").EventType} EventType
 */
/**
 * An interlude with its payload typed by its event type (the server sends the ledger's payload as is).
 * @typedef {{ [T in EventType]: { type: T; ts: string; payload: import("../../events.js").PayloadOf<T> } }[EventType]} TypedInterlude
 */

/** @param {Interlude} interlude */
export function renderInterlude(interlude) {
  const e = /** @type {TypedInterlude} */ (/** @type {unknown} */ (interlude));
  let icon = "•";
  /** @type {string} */
  let title = e.type;
  /** @type {HTMLElement | null} */
  let body = null;
  switch (e.type) {
    case "task_spec": {
      const p = e.payload;
      icon = "◇";
      title = `Plan made (${p.source})`;
      body = h(
        "ol",
        { class: "mini-plan" },
        (p.subtasks || []).map((s) => h("li", {}, h("span", { class: "mono" }, s.id), ` — ${s.description}`)),
      );
      break;
    }
    case "plan_update": {
      const p = e.payload;
      icon = "◇";
      const done = (p.subtasks || []).filter((s) => s.status === "completed").length;
      title = `Plan updated: ${done}/${(p.subtasks || []).length} completed`;
      body = h("span", { class: "muted" }, (p.subtasks || []).map((s) => `${s.id} ${s.status.replace("_", " ")}`).join(" · "));
      break;
    }
    case "decision":
      icon = "📌";
      title = "Decision pinned";
      body = h("span", {}, e.payload.text);
      break;
    case "reflection":
      icon = "✎";
      title = `Reflection (${String(e.payload.trigger).replace(/_/g, " ")})`;
      body = h(
        "ul",
        { class: "lessons" },
        (e.payload.lessons || []).map((l) => h("li", {}, l)),
      );
      break;
    case "summary": {
      const p = e.payload;
      icon = "≡";
      title = `Summary (${p.tier}, seq ${p.fromSeq}–${p.toSeq}, ${plural((p.eventIds || []).length, "event")})`;
      body = h("details", {}, h("summary", {}, oneLine(p.text, 120)), h("pre", { class: "output" }, p.text));
      break;
    }
    case "time_travel": {
      const p = e.payload;
      icon = "⟲";
      title =
        p.kind === "restore"
          ? `Continued from an earlier checkpoint (replay or fork from Studio, the SDK or a script)`
          : `${p.kind === "fork" ? "Forked" : "Rewound"} to checkpoint ${String(p.toCheckpoint).slice(0, 13)}…`;
      body = h(
        "span",
        { class: "muted" },
        (p.revision ? `workspace files restored to revision ${String(p.revision).slice(0, 12)}` : "") +
          (p.savedRevision ? `; edits made outside the run saved as revision ${String(p.savedRevision).slice(0, 12)}` : ""),
      );
      break;
    }
    case "process": {
      const p = e.payload;
      icon = "⚙";
      const what = { start: "started", ready: "ready", exit: "exited", stop: "stopped", restart: "restarted", failed: "failed" }[p.kind] || p.kind;
      title = `Process ${p.name} ${what}${p.kind === "ready" && p.readyMs !== undefined ? ` in ${Math.round(p.readyMs)} ms` : ""}${
        p.ports && p.ports.length ? ` (port ${p.ports.join(", ")})` : ""
      }${p.exitCode !== undefined && p.exitCode !== null ? ` (exit ${p.exitCode})` : p.signal ? ` (${p.signal})` : ""}`;
      body = h(
        "div",
        {},
        h("code", { class: "small" }, oneLine(p.command, 160)),
        p.reason ? h("div", { class: "muted small" }, p.reason) : null,
        p.lastLines && p.lastLines.length ? h("pre", { class: "output" }, p.lastLines.join("\n")) : null,
      );
      break;
    }
    case "run_status":
      icon = "■";
      title = `Run ${e.payload.status} after ${plural(e.payload.steps, "step")}`;
      body = e.payload.reason ? h("span", { class: "muted" }, e.payload.reason) : null;
      break;
    default:
      break;
  }
  return h(
    "div",
    { class: ["interlude", `il-${e.type}`, e.type === "run_status" && `st-${e.payload.status}`] },
    h("span", { class: "il-icon" }, icon),
    h("div", { class: "il-body" }, h("div", { class: "il-title" }, title, h("span", { class: "muted small" }, `  ${clock(e.ts)}`)), body),
  );
}
