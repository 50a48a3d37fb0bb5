import { randomUUID } from "node:crypto";
import type { LedgerEvent } from "../events.js";
import { CliError } from "../errors.js";
import { currentHead, openExistingState, requireThread, type WorkspaceArgs } from "../ledger/open-state.js";

/** A decision as the MCP tools return it. */
export interface DecisionRow {
  id: string;
  seq: number;
  step: number;
  text: string;
  ts: string;
  /**
   * Recorded over MCP on top of the run's newest checkpoint: the run's prompts show it once a
   * step of that run builds on it (a resumed run's next event goes on from the checkpoint's head).
   */
  external?: boolean;
}

/** Idempotency-key prefix of decisions recorded over MCP. */
export const MCP_DECISION_KEY = "mcp:decision:";

const row = (d: LedgerEvent<"decision">): DecisionRow => ({
  id: d.id,
  seq: d.seq,
  step: d.payload.step,
  text: d.payload.text,
  ts: d.ts,
  ...(d.idempotencyKey?.startsWith(MCP_DECISION_KEY) ? { external: true } : {}),
});

/** The decisions on a thread's current branch (what its next prompt pins), oldest first. */
export async function listDecisions(thread: string, args: WorkspaceArgs): Promise<DecisionRow[]> {
  const st = await openExistingState(args);
  try {
    requireThread(st, thread);
    const head = await currentHead(st, thread);
    const onBranch = head.ledgerHead ? ((await st.ledger.branch(head.ledgerHead, { types: ["decision"] })) as LedgerEvent<"decision">[]) : [];
    // Decisions recorded over MCP hang off a head of this branch: shown too, marked external.
    const external = ((await st.ledger.list(thread, { types: ["decision"] })) as LedgerEvent<"decision">[]).filter(
      (d) => d.idempotencyKey?.startsWith(MCP_DECISION_KEY) && !onBranch.some((b) => b.id === d.id),
    );
    const parents = head.ledgerHead
      ? await st.ledger.onBranch(
          head.ledgerHead,
          external.map((d) => d.parentId).filter((p): p is string => !!p),
        )
      : new Set<string>();
    const attached = external.filter((d) => (d.parentId ? parents.has(d.parentId) : !head.ledgerHead));
    return [...onBranch, ...attached].sort((a, b) => a.seq - b.seq).map(row);
  } catch (err) {
    throw st.named(err);
  } finally {
    st.close();
  }
}

/**
 * Appends a decision to a thread's ledger, as a child of the thread's current head (the newest
 * checkpoint's ledger head, or its newest event). Redacted and validated by the ledger like any
 * event; `key` makes a retried call return the first event instead of a second one.
 */
export async function recordDecision(thread: string, text: string, args: WorkspaceArgs & { key?: string }): Promise<DecisionRow> {
  if (!text.trim()) throw new CliError("the decision text is empty", 2, "CONFIG_INVALID");
  const st = await openExistingState(args, { write: true });
  try {
    requireThread(st, thread);
    const head = await currentHead(st, thread);
    const lastPrompt = head.ledgerHead ? await st.ledger.branch(head.ledgerHead, { types: ["context_built"], last: 1 }) : [];
    const step = (lastPrompt[0] as LedgerEvent<"context_built"> | undefined)?.payload.step ?? 0;
    const ev = await st.ledger.append({
      threadId: thread,
      parentId: head.ledgerHead,
      type: "decision",
      payload: { text: text.trim(), step },
      idempotencyKey: `${MCP_DECISION_KEY}${args.key ?? randomUUID()}`,
    });
    return row(ev);
  } catch (err) {
    throw st.named(err);
  } finally {
    st.close();
  }
}
