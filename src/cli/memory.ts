import type { Command } from "commander";
import { CliError } from "../errors.js";
import { listMemory, withLessonStore, type MemoryArgs } from "../inspect/memory.js";
import type { WorkspaceArgs } from "../ledger/open-state.js";
import { log, printJson, stateOption, workspaceOptions } from "./common.js";
import { declareCommand } from "./command-specs.js";

/** Deletes lessons by key (a prefix of 6+ characters is enough). */
export async function handleMemoryForget(keys: string[], args: WorkspaceArgs): Promise<number> {
  const { forgetLessons } = await import("../memory/lessons.js");
  const n = await withLessonStore(args, true, (store) => forgetLessons(store, keys));
  if (n === 0) throw new CliError(`no lesson matches ${keys.join(", ")}; see \`ledgerloop memory list\``, 1, "NOT_FOUND");
  return n;
}

export function registerMemory(program: Command): void {
  const memory = declareCommand(program, "memory");
  const list = workspaceOptions(
    memory
      .command("list")
      .description("list stored lessons (newest first), or those relevant to --query")
      .option("--query <text>", "rank by relevance to this text")
      .option("--json", "one JSON object per line"),
  );
  stateOption(list).action(async (opts: MemoryArgs) => {
    for (const l of await listMemory(opts)) {
      if (opts.json) printJson(l);
      else process.stdout.write(`${l.key.slice(0, 10)}  ×${l.seen}  ${l.text}\n`);
    }
  });
  const forget = workspaceOptions(
    memory.command("forget").description("delete lessons by key (or key prefix)").argument("<keys...>", "lesson keys as shown by `memory list`"),
  );
  stateOption(forget).action(async (keys: string[], opts: WorkspaceArgs) => {
    const n = await handleMemoryForget(keys, opts);
    log(`forgot ${n} lesson(s)`);
  });
}
