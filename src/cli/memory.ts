import type { Command } from "commander";
import { CliError } from "../errors.js";
import type { Lesson } from "../memory/lessons.js";
import type { BaseStore } from "@langchain/langgraph-checkpoint";
import { log, printJson, stateOption, workspaceOptions } from "./common.js";
import { openExistingState, stateUrlOf, type WorkspaceArgs } from "../ledger/open-state.js";

export interface MemoryArgs extends WorkspaceArgs {
  query?: string;
}

/**
 * Runs `fn` on the lessons store: PostgreSQL's with --state (or LEDGERLOOP_STATE_URL), where every
 * machine's runs keep theirs, else the workspace's SQLite state. Loaded on use only (the stores
 * extend LangGraph's BaseStore).
 */
async function withLessonStore<T>(args: WorkspaceArgs, write: boolean, fn: (store: BaseStore) => Promise<T>): Promise<T> {
  const url = stateUrlOf(args);
  if (url) {
    const [{ openPgInspection }, { PgStore }] = await Promise.all([import("../ledger/open-state.js"), import("../memory/pg-store.js")]);
    const pg = await openPgInspection(url);
    try {
      return await fn(new PgStore(pg.pool));
    } finally {
      await pg.close();
    }
  }
  const { SqliteStore } = await import("../memory/sqlite-store.js");
  const st = await openExistingState(args, { write });
  try {
    return await fn(new SqliteStore(st.db));
  } catch (err) {
    throw st.named(err);
  } finally {
    st.close();
  }
}

/** Lessons stored for a workspace (all, or the ones relevant to a query). */
export async function handleMemoryList(args: MemoryArgs): Promise<Lesson[]> {
  const { listLessons, recallLessons } = await import("../memory/lessons.js");
  return withLessonStore(args, false, (store) => (args.query ? recallLessons(store, args.query, 50) : listLessons(store)));
}

/** Deletes lessons by key (a prefix of 6+ characters is enough). */
export async function handleMemoryForget(keys: string[], args: WorkspaceArgs): Promise<number> {
  const { forgetLessons } = await import("../memory/lessons.js");
  const n = await withLessonStore(args, true, (store) => forgetLessons(store, keys));
  if (n === 0) throw new CliError(`no lesson matches ${keys.join(", ")}; see \`ledgerloop memory list\``, 1, "NOT_FOUND");
  return n;
}

export function registerMemory(program: Command): void {
  const memory = program.command("memory").description("long-term memory: lessons learned by earlier runs in a workspace");
  const list = workspaceOptions(
    memory
      .command("list")
      .description("list stored lessons (newest first), or those relevant to --query")
      .option("--query <text>", "rank by relevance to this text")
      .option("--json", "one JSON object per line"),
  );
  stateOption(list).action(async (opts: MemoryArgs) => {
    for (const l of await handleMemoryList(opts)) {
      if (opts.json) printJson(l);
      else process.stdout.write(`${l.key.slice(0, 10)}  ×${l.seen}  ${l.text}\n`);
    }
  });
  const forget = workspaceOptions(
    memory
      .command("forget")
      .description("delete lessons by key (or key prefix)")
      .argument("<keys...>", "lesson keys as shown by `memory list`"),
  );
  stateOption(forget).action(async (keys: string[], opts: WorkspaceArgs) => {
    const n = await handleMemoryForget(keys, opts);
    log(`forgot ${n} lesson(s)`);
  });
}
