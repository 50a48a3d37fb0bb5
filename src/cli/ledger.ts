import type { Command } from "commander";
import { CliError } from "../errors.js";
import type { EventType, LedgerEvent } from "../events.js";
import type { Ledger } from "../ledger/port.js";
import { stopWords } from "../sandbox/stop-words.js";
import { printJson, stateOption, workspaceOptions } from "./common.js";
import { noteCheckpointHome, openExistingState, openPgInspection, requirePgThread, requireThread, stateUrlOf, type WorkspaceArgs } from "../ledger/open-state.js";

export interface LedgerArgs extends WorkspaceArgs {
  type?: string[];
  file?: string;
  /** Only the events of the branch ending at this event (default: every branch). */
  head?: string;
  chain?: string;
}

/** A run's ledger events, filtered by type, file, branch or causal chain. */
export async function handleLedger(thread: string, args: LedgerArgs): Promise<LedgerEvent[]> {
  const { EVENT_TYPES } = await import("../events.js");
  const types = (args.type ?? []).flatMap((t) => t.split(",")).filter(Boolean);
  for (const t of types) {
    if (!EVENT_TYPES.includes(t as EventType)) {
      throw new CliError(`unknown event type "${t}"; known: ${EVENT_TYPES.join(", ")}`, 2, "CONFIG_INVALID");
    }
  }
  const url = stateUrlOf(args);
  if (url) {
    const pg = await openPgInspection(url);
    try {
      await requirePgThread(pg, thread);
      return await select(pg.ledger, thread, args, types);
    } finally {
      await pg.close();
    }
  }
  const st = await openExistingState(args);
  try {
    requireThread(st, thread);
    noteCheckpointHome(st, thread);
    return await select(st.ledger, thread, args, types);
  } catch (err) {
    throw st.named(err);
  } finally {
    st.close();
  }
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

function oneLine(e: LedgerEvent): string {
  const p = e.payload as Record<string, unknown>;
  let what = "";
  switch (e.type) {
    case "agent_action":
      what = `${p.tool} ${JSON.stringify(p.args ?? p.argsText ?? {}).slice(0, 100)}${p.invalid ? " [invalid]" : ""}`;
      break;
    case "environment_feedback": {
      const cause = [p.errorClass, stopWords(p.stoppedBy as string | undefined, p.limit as string | undefined)].filter(Boolean).join(": ");
      what = `${p.tool} → ${p.status}${p.errorClass ? ` (${cause})` : ""}`;
      break;
    }
    case "decision":
      what = String(p.text);
      break;
    case "run_status":
      what = String(p.status);
      break;
    case "model_call":
      what = `${p.node} turn ${p.turn}: ${(p.toolCalls as unknown[]).length} tool call(s)`;
      break;
    default:
      what = JSON.stringify(p).slice(0, 100);
  }
  return `${String(e.seq).padStart(5)}  ${e.ts}  ${e.type.padEnd(20)} ${what}`;
}

export function registerLedger(program: Command): void {
  workspaceOptions(
    program
      .command("ledger")
      .description("print a run's ledger events (actions, feedback, decisions, ...)")
      .argument("<thread>", "the run id")
      .option("--type <type...>", "only these event types (repeat or comma-separate)")
      .option("--file <path>", "only events about this workspace path")
      .option("--head <eventId>", "only the branch ending at this event")
      .option("--chain <eventId>", "the causal chain of an event (action → feedback → effects)")
      .option("--json", "one JSON object per line"),
  );
  stateOption(program.commands.at(-1)!).action(async (thread: string, opts: LedgerArgs) => {
    const events = await handleLedger(thread, opts);
    for (const e of events) {
      if (opts.json) printJson(e);
      else process.stdout.write(oneLine(e) + "\n");
    }
  });
}
