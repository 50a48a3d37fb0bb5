import type { Ledger } from "../../src/ledger/port.js";

/**
 * One run's ledger for the delete-run suites (SQLite and PostgreSQL): a prompt shared with another
 * run and one of its own (as a fork's copy shares prompts), a model call, an action and its start.
 * Returns the ref of its own prompt.
 */
export async function seedRunEvents(ledger: Ledger, thread: string, sharedPrompt: string): Promise<string> {
  const own = await ledger.putBlob(`the prompt only ${thread} saw`);
  const c = await ledger.append({
    threadId: thread,
    parentId: null,
    type: "context_built",
    payload: { step: 1, promptRef: sharedPrompt, tokens: 3, budget: 100, items: [], omitted: [] },
  });
  const m = await ledger.append({
    threadId: thread,
    parentId: c.id,
    type: "model_call",
    payload: { node: "decide", turn: 1, model: "m", promptRef: own, content: "", toolCalls: [] },
  });
  const a = await ledger.append({
    threadId: thread,
    parentId: m.id,
    type: "agent_action",
    payload: { tool: "run_command", args: { command: "true" }, callId: "c1", step: 1, idempotencyKey: `${thread}-k1`, idempotent: false },
  });
  await ledger.markActionStarted({ actionId: `task-${thread}/start/${a.id}`, pid: null, pgid: null, procStart: null, guard: null });
  return own;
}
