import { CliError } from "../errors.js";
import type { ChatMessage } from "../models/port.js";
import type { ContextItem, LedgerEvent, PromptLayout } from "../state.js";
import type { Ledger } from "../ledger/port.js";
import { withInspection } from "../ledger/inspection.js";
import type { WorkspaceArgs } from "../ledger/open-state.js";

/** Which prompt `context` shows: a decide step (default the newest), whole or in its first lines. */
export interface ContextArgs extends WorkspaceArgs {
  step?: number;
  full?: boolean;
}

export interface ContextReport {
  thread: string;
  step: number;
  eventId: string;
  tokens: number;
  budget: number;
  items: ContextItem[];
  omitted: ContextItem[];
  /** How the prompt was laid out (absent for runs from before the cache layout). */
  layout?: PromptLayout;
  /** Share of this prompt equal to the previous decide prompt's leading tokens. */
  prefixReuse?: { reusedTokens: number; tokens: number; ratio: number };
  messages: ChatMessage[];
}

/** What the model saw at a step of a run, why each piece was there, and what was left out. */
export async function getContext(thread: string, args: ContextArgs): Promise<ContextReport> {
  return withInspection(args, async (st) => {
    await st.requireThread(thread);
    await st.checkpointsHere(thread);
    return contextAt(st.ledger, thread, (await st.head(thread)).ledgerHead, args.step);
  });
}

/** The prompt recorded for a step (default the newest) on the branch ending at `head`, through the ledger port. */
async function contextAt(ledger: Ledger, thread: string, head: string | null, step: number | undefined): Promise<ContextReport> {
  // The run's current branch decides which prompt a step means after a rewind or fork.
  const onBranch = head ? await ledger.branch(head, { types: ["context_built"] }) : [];
  const all = onBranch.length ? onBranch : await ledger.list(thread, { types: ["context_built"] });
  const built = all as LedgerEvent<"context_built">[];
  if (!built.length) throw new CliError(`run ${thread} has no prompt recorded yet`, 1, "NO_CONTEXT");
  const pick = step === undefined ? built.at(-1)! : built.filter((e) => e.payload.step === step).at(-1);
  if (!pick) {
    const steps = built.map((e) => e.payload.step);
    throw new CliError(`run ${thread} has no prompt for step ${step}; steps with prompts: ${Math.min(...steps)}-${Math.max(...steps)}`, 1, "NO_CONTEXT");
  }
  const blob = await ledger.getBlob(pick.payload.promptRef);
  return {
    thread,
    step: pick.payload.step,
    eventId: pick.id,
    tokens: pick.payload.tokens,
    budget: pick.payload.budget,
    items: pick.payload.items,
    omitted: pick.payload.omitted,
    layout: pick.payload.layout,
    prefixReuse: pick.payload.prefixReuse,
    messages: blob ? (JSON.parse(blob) as ChatMessage[]) : [],
  };
}
