import type { Command } from "commander";
import { openExistingState, printJson, workspaceOptions, type WorkspaceArgs } from "./common.js";

export interface ThreadRow {
  thread: string;
  createdAt: string | null;
  goal: string | null;
  status: string | null;
  events: number;
  checkpoints: number;
  lastActivity: string | null;
}

/** Every run recorded in a workspace's state database. */
export async function handleThreads(args: WorkspaceArgs): Promise<ThreadRow[]> {
  const st = await openExistingState(args);
  try {
    const ledgerThreads = new Map((await st.ledger.threads()).map((t) => [t.threadId, t]));
    // openExistingState has checked that the checkpoints table exists.
    const counts = new Map<string, number>(
      (st.db.prepare("SELECT thread_id, COUNT(*) AS n FROM checkpoints GROUP BY thread_id").all() as Array<{ thread_id: string; n: number }>).map((r) => [
        r.thread_id,
        r.n,
      ]),
    );
    const runs = new Map(st.runs.list().map((r) => [r.threadId, r]));
    const ids = new Set([...runs.keys(), ...ledgerThreads.keys(), ...counts.keys()]);
    return [...ids]
      .map((id) => {
        const l = ledgerThreads.get(id);
        const r = runs.get(id);
        return {
          thread: id,
          createdAt: r?.createdAt ?? l?.firstTs ?? null,
          goal: r?.goal ?? l?.goal ?? null,
          status: l?.status ?? (counts.get(id) ? "running" : null),
          events: l?.events ?? 0,
          checkpoints: counts.get(id) ?? 0,
          lastActivity: l?.lastTs ?? null,
        };
      })
      .sort((a, b) => String(a.createdAt).localeCompare(String(b.createdAt)));
  } finally {
    st.close();
  }
}

export function registerThreads(program: Command): void {
  workspaceOptions(
    program.command("threads").description("list the runs recorded in a workspace").option("--json", "one JSON object per line"),
  ).action(async (opts: WorkspaceArgs) => {
    for (const t of await handleThreads(opts)) {
      if (opts.json) printJson(t);
      else {
        process.stdout.write(
          `${t.thread}  ${(t.status ?? "-").padEnd(16)} ${String(t.events).padStart(5)} events  ${String(t.checkpoints).padStart(5)} checkpoints  ${(t.goal ?? "").slice(0, 60)}\n`,
        );
      }
    }
  });
}
