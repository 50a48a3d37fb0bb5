import type { LedgerEvent } from "../events.js";

/** Calls, tokens and USD of a set of model calls. */
export interface Spend {
  calls: number;
  inputTokens: number;
  cachedInputTokens: number;
  outputTokens: number;
  costUsd: number;
}

/** What the given model calls spent together. */
export function spendOf(calls: LedgerEvent<"model_call">[]): Spend {
  const s: Spend = { calls: calls.length, inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, costUsd: 0 };
  for (const c of calls) {
    s.inputTokens += c.payload.usage?.inputTokens ?? 0;
    s.cachedInputTokens += c.payload.usage?.cachedInputTokens ?? 0;
    s.outputTokens += c.payload.usage?.outputTokens ?? 0;
    s.costUsd += c.payload.costUsd ?? 0;
  }
  return s;
}

function grouped<K>(calls: LedgerEvent<"model_call">[], key: (c: LedgerEvent<"model_call">) => K): Array<[K, LedgerEvent<"model_call">[]]> {
  const m = new Map<K, LedgerEvent<"model_call">[]>();
  for (const c of calls) {
    const k = key(c);
    const list = m.get(k);
    if (list) list.push(c);
    else m.set(k, [c]);
  }
  return [...m];
}

/** Spend per model, in order of first use (a summary model shows apart from the main one). */
export function spendByModel(calls: LedgerEvent<"model_call">[]): Array<Spend & { model: string }> {
  return grouped(calls, (c) => c.payload.model).map(([model, cs]) => ({ model, ...spendOf(cs) }));
}

/**
 * Spend per subtask, in order of first use. A call made while no subtask was in progress (the first
 * plan, the end-of-run reflection) counts under `subtask: null`. Calls recorded before the ledger
 * carried the subtask count there too.
 */
export function spendBySubtask(calls: LedgerEvent<"model_call">[]): Array<Spend & { subtask: string | null }> {
  return grouped(calls, (c) => c.payload.subtask ?? null).map(([subtask, cs]) => ({ subtask, ...spendOf(cs) }));
}

/** Spend per step, in step order; calls without a recorded step are left out. */
export function spendByStep(calls: LedgerEvent<"model_call">[]): Array<Spend & { step: number }> {
  return grouped(
    calls.filter((c) => c.payload.step !== undefined),
    (c) => c.payload.step!,
  )
    .map(([step, cs]) => ({ step, ...spendOf(cs) }))
    .sort((a, b) => a.step - b.step);
}
