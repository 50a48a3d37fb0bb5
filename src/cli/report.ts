import path from "node:path";
import type { Command } from "commander";
import { latestValues } from "../ledger/checkpoints.js";
import type { RunReport } from "../report/report.js";
import type { Runtime } from "../runtime.js";
import type { TaskStateValue } from "../state.js";
import { writePrivateFile } from "../private-files.js";
import { reportFile } from "../report/report-file.js";
import { printJson, stateOption, workspaceOptions } from "./common.js";
import { currentHead, noteCheckpointHome, openExistingState, openPgInspection, requirePgThread, requireThread, stateUrlOf, type WorkspaceArgs } from "../ledger/open-state.js";

/** The report of a thread's current branch. */
export async function handleReport(thread: string, args: WorkspaceArgs): Promise<RunReport> {
  const [{ buildReport }, { RevisionStore }] = await Promise.all([import("../report/report.js"), import("../workspace/revisions.js")]);
  const url = stateUrlOf(args);
  if (url) {
    // Ledger and checkpoints from PostgreSQL; the file changes from the workspace's own revision
    // store, when this machine has it (a report does not pull revisions from the PostgreSQL replica).
    const pg = await openPgInspection(url);
    let local: import("better-sqlite3").Database | undefined;
    try {
      await requirePgThread(pg, thread);
      const values = await latestValues<TaskStateValue>(pg.checkpointer, thread);
      const [{ openStateDb }, { resolveWorkspace, stateLocation }, fs] = await Promise.all([import("../ledger/state-db.js"), import("../workspace/location.js"), import("node:fs")]);
      const workspace = resolveWorkspace(args.workspace ?? process.cwd());
      const { stateDir, dbPath } = stateLocation(workspace, args.stateDir);
      local = fs.existsSync(dbPath) ? openStateDb(dbPath, { create: false, readonly: true }) : undefined;
      const revisions = local ? new RevisionStore(local, workspace, { blobsDir: path.join(stateDir, "blobs") }) : null;
      return await buildReport(pg.ledger, revisions, thread, values?.ledgerHead ?? null, values?.subtasks ?? []);
    } finally {
      local?.close();
      await pg.close();
    }
  }
  const st = await openExistingState(args);
  try {
    requireThread(st, thread);
    noteCheckpointHome(st, thread);
    const head = await currentHead(st, thread);
    const revisions = new RevisionStore(st.db, st.workspace, { blobsDir: path.join(st.stateDir, "blobs") });
    return await buildReport(st.ledger, revisions, thread, head.ledgerHead, head.subtasks);
  } catch (err) {
    throw st.named(err);
  } finally {
    st.close();
  }
}

/** Writes the report of a run that just stopped to <stateDir>/reports/<thread>.md; returns the path. */
export async function writeRunReport(rt: Runtime, thread: string): Promise<string> {
  const { buildReport, reportMarkdown } = await import("../report/report.js");
  const values = await latestValues<TaskStateValue>(rt.checkpointer, thread);
  const report = await buildReport(rt.ledger, rt.revisions, thread, values?.ledgerHead ?? null, values?.subtasks ?? []);
  const file = reportFile(rt.stateDir, thread);
  // Redacted again with the run's redactor: events stored by an older version passed fewer rules.
  writePrivateFile(file, rt.redactor.redact(reportMarkdown(report)) + "\n");
  return file;
}

export function registerReport(program: Command): void {
  workspaceOptions(
    program
      .command("report")
      .description("the end-of-task report of a run: summary, plan, decisions, files changed, tests, problems, lessons, cost")
      .argument("<thread>", "the run id")
      .option("--json", "one JSON object"),
  );
  stateOption(program.commands.at(-1)!).action(async (thread: string, opts: WorkspaceArgs) => {
    const r = await handleReport(thread, opts);
    if (opts.json) return printJson(r);
    const { reportMarkdown } = await import("../report/report.js");
    process.stdout.write(reportMarkdown(r) + "\n");
  });
}
