import type { Command } from "commander";
import { CliError } from "../errors.js";
import type { Lesson } from "../memory/lessons.js";
import { log, openExistingState, printJson, workspaceOptions, type WorkspaceArgs } from "./common.js";

export interface MemoryArgs extends WorkspaceArgs {
  query?: string;
}

/** Lessons stored for a workspace (all, or the ones relevant to a query). */
export async function handleMemoryList(args: MemoryArgs): Promise<Lesson[]> {
  // The store extends LangGraph's BaseStore: loaded on use only.
  const [{ listLessons, recallLessons }, { SqliteStore }] = await Promise.all([import("../memory/lessons.js"), import("../memory/sqlite-store.js")]);
  const st = await openExistingState(args);
  try {
    const store = new SqliteStore(st.db);
    return args.query ? await recallLessons(store, args.query, 50) : await listLessons(store);
  } catch (err) {
    throw st.named(err);
  } finally {
    st.close();
  }
}

/** Deletes lessons by key (a prefix of 6+ characters is enough). */
export async function handleMemoryForget(keys: string[], args: WorkspaceArgs): Promise<number> {
  const [{ forgetLessons }, { SqliteStore }] = await Promise.all([import("../memory/lessons.js"), import("../memory/sqlite-store.js")]);
  const st = await openExistingState(args, { write: true });
  try {
    const n = await forgetLessons(new SqliteStore(st.db), keys);
    if (n === 0) throw new CliError(`no lesson matches ${keys.join(", ")}; see \`ledgerloop memory list\``, 1, "NOT_FOUND");
    return n;
  } catch (err) {
    throw st.named(err);
  } finally {
    st.close();
  }
}

export function registerMemory(program: Command): void {
  const memory = program.command("memory").description("long-term memory: lessons learned by earlier runs in a workspace");
  workspaceOptions(
    memory
      .command("list")
      .description("list stored lessons (newest first), or those relevant to --query")
      .option("--query <text>", "rank by relevance to this text")
      .option("--json", "one JSON object per line"),
  ).action(async (opts: MemoryArgs) => {
    for (const l of await handleMemoryList(opts)) {
      if (opts.json) printJson(l);
      else process.stdout.write(`${l.key.slice(0, 10)}  ×${l.seen}  ${l.text}\n`);
    }
  });
  workspaceOptions(
    memory
      .command("forget")
      .description("delete lessons by key (or key prefix)")
      .argument("<keys...>", "lesson keys as shown by `memory list`"),
  ).action(async (keys: string[], opts: WorkspaceArgs) => {
    const n = await handleMemoryForget(keys, opts);
    log(`forgot ${n} lesson(s)`);
  });
}
