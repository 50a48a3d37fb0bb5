import { CliError } from "../errors.js";
import type { EventType, LedgerEvent } from "../events.js";
import type { Ledger } from "../ledger/port.js";
import { withInspection } from "../ledger/inspection.js";
import type { WorkspaceArgs } from "../ledger/open-state.js";

/** Filters of `ledger`: by type, file, branch or causal chain. */
export interface LedgerArgs extends WorkspaceArgs {
  type?: string[];
  file?: string;
  /** Only the events of the branch ending at this event (default: every branch). */
  head?: string;
  chain?: string;
}

/** A run's ledger events, filtered by type, file, branch or causal chain. */
export async function getLedgerEvents(thread: string, args: LedgerArgs): Promise<LedgerEvent[]> {
  const types = (args.type ?? []).flatMap((t) => t.split(",")).filter(Boolean);
  // The type names come from the schemas (zod): loaded only when a --type is given to check.
  const { EVENT_TYPES } = types.length ? await import("../events.js") : { EVENT_TYPES: [] as EventType[] };
  for (const t of types) {
    if (!EVENT_TYPES.includes(t as EventType)) {
      throw new CliError(`unknown event type "${t}"; known: ${EVENT_TYPES.join(", ")}`, 2, "CONFIG_INVALID");
    }
  }
  return withInspection(args, async (st) => {
    await st.requireThread(thread);
    await st.checkpointsHere(thread);
    return select(st.ledger, thread, args, types);
  });
}

/** The events the filters ask for, through the ledger port (either backend). */
async function select(ledger: Ledger, thread: string, args: LedgerArgs, types: string[]): Promise<LedgerEvent[]> {
  let events: LedgerEvent[];
  if (args.chain) events = await ledger.causalChain(args.chain);
  else if (args.file) events = await ledger.byFile(thread, args.file);
  else if (args.head) events = await ledger.branch(args.head);
  else events = await ledger.list(thread);
  if (types.length) events = events.filter((e) => types.includes(e.type));
  return events.filter((e) => e.threadId === thread);
}
