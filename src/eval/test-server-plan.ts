import { TOOLS } from "../agent/tools/index.js";
import { describeAction } from "../context/render.js";
import type { ScriptTurn, Trajectory } from "../models/scripted.js";
import type { WireCompletion, WireToolCall } from "./openai-wire.js";
import { runSeed, seededRandom } from "./seeded-random.js";

// What the eval's test server answers at each turn of a task: the task's oracle trajectory, with
// real models' misbehaviour mixed in at seeded turns. A misbehaving answer never advances the
// oracle: the turn after it is the oracle's turn again, as a model that got error feedback would retry.

/** The ways a real model gets a turn wrong, played once each where the schedule puts them. */
export const MISBEHAVIOURS = ["prose", "text-call", "cut-off", "malformed-json"] as const;
export type Misbehaviour = (typeof MISBEHAVIOURS)[number];

/** What the server does at one oracle turn: play it, play a misbehaviour first, or merge it with the next read-only turns. */
export type TurnPlan = { kind: "oracle" } | { kind: "misbehave"; what: Misbehaviour } | { kind: "parallel"; turns: number };

/** The share of turns (after the first) at which the model misbehaves once before answering properly. */
export const MISBEHAVE_RATE = 0.15;
/** The chance that consecutive single read-only calls are sent together, as parallel tool calls. */
export const PARALLEL_RATE = 0.5;
const MAX_PARALLEL = 3;

const READ_ONLY = new Set(TOOLS.filter((t) => t.risk === "read").map((t) => t.name));

function singleReadOnly(turn: ScriptTurn | undefined): boolean {
  const calls = turn?.tool_calls ?? [];
  return calls.length === 1 && READ_ONLY.has(calls[0]!.name);
}

/**
 * The plan of every decide turn of a task's oracle, drawn from `seed` and the task's id only (so the
 * ledgerloop run and the baseline meet the same misbehaviour at the same turns). Turn 0 is always
 * played as written: a run is recognised by the call ids of its first answer.
 */
export function turnPlans(trajectory: Trajectory, taskId: string, seed: number): TurnPlan[] {
  const turns = trajectory.decide ?? [];
  const random = seededRandom(runSeed(seed, taskId));
  const plans: TurnPlan[] = turns.map(() => ({ kind: "oracle" }));
  for (let t = 1; t < turns.length; t++) {
    let n = 1;
    while (n < MAX_PARALLEL && singleReadOnly(turns[t + n - 1]) && singleReadOnly(turns[t + n]) && random() < PARALLEL_RATE) n++;
    if (n > 1) {
      plans[t] = { kind: "parallel", turns: n };
      t += n - 1;
    } else if (random() < MISBEHAVE_RATE) plans[t] = { kind: "misbehave", what: MISBEHAVIOURS[Math.floor(random() * MISBEHAVIOURS.length)]! };
  }
  return plans;
}

/** The call id of the oracle's call `i` at `turn` in run `run`; misbehaving calls carry a suffix so they never count as progress. */
export function callId(run: number, turn: number, i: number, bad = false): string {
  return `call_ts${run}_t${turn}_c${i}${bad ? "_x" : ""}`;
}

const ID = /^call_ts(\d+)_t(\d+)_c\d+(_x)?$/;

/** The run and oracle turn a call id names (`bad`: a misbehaving call), or null for ids the server did not make. */
export function parseCallId(id: string): { run: number; turn: number; bad: boolean } | null {
  const m = ID.exec(id);
  return m ? { run: Number(m[1]), turn: Number(m[2]), bad: m[3] !== undefined } : null;
}

function argsText(args: string | Record<string, unknown> | undefined): string {
  return typeof args === "string" ? args : JSON.stringify(args ?? {});
}

function wireCalls(turn: ScriptTurn, run: number, t: number, first = 0): WireToolCall[] {
  return (turn.tool_calls ?? []).map((c, i) => ({ id: callId(run, t, first + i), name: c.name, arguments: argsText(c.args) }));
}

/** The oracle's turns `t` to `t + count - 1` as one answer (several turns: parallel tool calls). */
export function oracleAnswer(trajectory: Trajectory, run: number, t: number, count = 1): WireCompletion {
  const turns = trajectory.decide ?? [];
  const last = turns.length - 1;
  // Past the end (the runtime asks again after the final turn): the final turn once more, under new ids.
  if (t > last) return { content: turns[last]?.content ?? "", tool_calls: wireCalls(turns[last] ?? {}, run, t) };
  const group = turns.slice(t, t + count);
  return {
    content: group.map((g) => g.content ?? "").filter(Boolean).join("\n") || null,
    tool_calls: group.flatMap((g, k) => wireCalls(g, run, t + k)),
  };
}

/** The misbehaving answer in place of the oracle's turn `t`. */
export function misbehavingAnswer(what: Misbehaviour, trajectory: Trajectory, run: number, t: number): WireCompletion {
  const turn = trajectory.decide?.[t] ?? {};
  const calls = turn.tool_calls ?? [];
  const first = calls[0];
  const action = first ? describeAction(first.name, first.args) : "the next step";
  switch (what) {
    case "prose":
      return { content: `I have looked at the task. Next I would run ${action} to make progress.` };
    case "text-call":
      // Hermes/Qwen style, in the text instead of the tool-call field (a server without tool parsing).
      return { content: calls.map((c) => `<tool_call>\n${JSON.stringify({ name: c.name, arguments: c.args ?? {} })}\n</tool_call>`).join("\n") };
    case "cut-off": {
      // The output limit struck inside the first call's arguments.
      const text = first ? argsText(first.args) : "{}";
      const cut = text.slice(0, Math.max(1, Math.floor(text.length / 2)));
      return { content: turn.content ?? null, tool_calls: [{ id: callId(run, t, 0, true), name: first?.name ?? "read_file", arguments: cut }], finish_reason: "length" };
    }
    case "malformed-json":
      // A trailing comma, which many models write and JSON does not allow.
      return {
        content: turn.content ?? null,
        tool_calls: calls.map((c, i) => ({ id: callId(run, t, i, true), name: c.name, arguments: argsText(c.args).replace(/}\s*$/, ",}") })),
      };
  }
}
