import type { Command } from "commander";
import type { LedgerEvent } from "../events.js";
import { getLedgerEvents, type LedgerArgs } from "../inspect/ledger.js";
import { stopWords } from "../sandbox/stop-words.js";
import { printJson, stateOption, workspaceOptions } from "./common.js";
import { declareCommand } from "./command-specs.js";

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
    declareCommand(program, "ledger")
      .option("--type <type...>", "only these event types (repeat or comma-separate)")
      .option("--file <path>", "only events about this workspace path")
      .option("--head <eventId>", "only the branch ending at this event")
      .option("--chain <eventId>", "the causal chain of an event (action → feedback → effects)")
      .option("--json", "one JSON object per line"),
  );
  stateOption(program.commands.at(-1)!).action(async (thread: string, opts: LedgerArgs) => {
    const events = await getLedgerEvents(thread, opts);
    for (const e of events) {
      if (opts.json) printJson(e);
      else process.stdout.write(oneLine(e) + "\n");
    }
  });
}
