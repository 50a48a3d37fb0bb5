import type { LedgerEvent } from "../events.js";
import type { Ledger } from "../ledger/port.js";

// What `--kill-every` checks in a killed and resumed run's ledger: that the kills did not make the
// run do anything twice or lose anything. Every step was decided once (a resume finds the actions
// its step had recorded instead of asking the model again), and every decided action has exactly one
// outcome (a command cut by the kill is reported interrupted once, never run again behind the
// model's back; a read or a write of known content may be redone, but is recorded once).

/** The ledger's account of a run's actions and their outcomes. */
export interface EffectsCheck {
  /** Actions decided. */
  actions: number;
  /** Steps decided more than once (each time by a different run of the decide node). */
  duplicatedSteps: number[];
  /** Actions with more than one outcome recorded. */
  duplicatedOutcomes: number;
  /** Actions with no outcome (only the last step of a run stopped mid-step may have none). */
  withoutOutcome: number;
  /** Actions whose outcome is "interrupted" (a command the kill cut off). */
  interrupted: number;
}

/** True when the check found nothing done twice and nothing lost. */
export function effectsOk(e: EffectsCheck): boolean {
  return e.duplicatedSteps.length === 0 && e.duplicatedOutcomes === 0 && e.withoutOutcome === 0;
}

/** Reads the actions and outcomes of a thread from its ledger and counts what was doubled or lost. */
export async function ledgerEffects(ledger: Ledger, thread: string, opts: { finished: boolean }): Promise<EffectsCheck> {
  const events = await ledger.list(thread, { types: ["agent_action", "environment_feedback"] });
  const decisionsOfStep = new Map<number, Set<string>>();
  const outcomes = new Map<string, number>();
  let interrupted = 0;
  const actionIds: string[] = [];
  for (const e of events) {
    if (e.type === "agent_action") {
      const a = e as LedgerEvent<"agent_action">;
      actionIds.push(a.id);
      outcomes.set(a.id, outcomes.get(a.id) ?? 0);
      // The key is "<node run>/action/<i>": two node runs deciding one step is a duplicate decision.
      const run = (a.idempotencyKey ?? a.id).replace(/\/action\/\d+$/, "");
      const runs = decisionsOfStep.get(a.payload.step) ?? new Set<string>();
      runs.add(run);
      decisionsOfStep.set(a.payload.step, runs);
    } else {
      const f = e as LedgerEvent<"environment_feedback">;
      // An outcome's key ends with the id of its action, whichever run of the act node wrote it.
      const actionId = /\/feedback\/([^/]+)$/.exec(f.idempotencyKey ?? "")?.[1] ?? f.causedBy ?? "";
      outcomes.set(actionId, (outcomes.get(actionId) ?? 0) + 1);
      if (f.payload.status === "interrupted") interrupted++;
    }
  }
  const missing = actionIds.filter((id) => outcomes.get(id) === 0);
  // A run that stopped (not finished) may end between deciding and acting: its last actions wait.
  const lastStep = Math.max(-1, ...decisionsOfStep.keys());
  const lastStepActions = new Set(events.filter((e) => e.type === "agent_action" && (e as LedgerEvent<"agent_action">).payload.step === lastStep).map((e) => e.id));
  return {
    actions: actionIds.length,
    duplicatedSteps: [...decisionsOfStep].filter(([, runs]) => runs.size > 1).map(([step]) => step),
    duplicatedOutcomes: [...outcomes.values()].filter((n) => n > 1).length,
    withoutOutcome: opts.finished ? missing.length : missing.filter((id) => !lastStepActions.has(id)).length,
    interrupted,
  };
}
