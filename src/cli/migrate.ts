import type { Command } from "commander";
import type { MigrationReport } from "../ledger/migrate.js";
import { log, printJson } from "./common.js";
import { declareCommand } from "./command-specs.js";

export interface MigrateArgs {
  from: string;
  to: string;
  thread?: string[];
  json?: boolean;
}

/** Moves runs between a SQLite state (a state directory or a workspace) and a PostgreSQL one, either way. */
export async function handleMigrate(args: MigrateArgs): Promise<MigrationReport> {
  // Loaded on use: pg, both savers and the stores are heavy, and `--help` must stay fast.
  const { migrateState } = await import("../ledger/migrate.js");
  return migrateState({ from: args.from, to: args.to, threads: args.thread });
}

const short = (hash: string) => hash.slice(0, 12);

/** The counts and hashes of both sides, one row per thread. */
export function describeMigration(r: MigrationReport): string {
  const head = ["thread", "result", "runs", "checkpoints", "writes", "events", "action starts", "blobs", "ledger hash", "checkpoint hash"];
  const rows = r.threads.map((t) => {
    const pair = (k: "runs" | "checkpoints" | "writes" | "events" | "actionStarts" | "blobs") => `${t.source[k]}/${t.target[k]}`;
    return [
      t.thread,
      t.result,
      pair("runs"),
      pair("checkpoints"),
      pair("writes"),
      pair("events"),
      pair("actionStarts"),
      pair("blobs"),
      short(t.target.ledgerHash),
      short(t.target.checkpointHash),
    ];
  });
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join("  ")
      .trimEnd();
  return [
    `from ${r.from}`,
    `to   ${r.to}`,
    line(head),
    ...rows.map(line),
    "(counts are source/target; the hashes matched on both sides)",
    `lessons: ${r.lessons.source} in the source: ${r.lessons.copied} copied, ${r.lessons.present} already there, ${r.lessons.kept} kept as the target has them`,
    `workspace revisions: ${r.revisions.named} named by these runs: ${r.revisions.copied} copied, ${r.revisions.present} already there` +
      (r.revisions.absent.length ? `, ${r.revisions.absent.length} not in the source (removed by gc?): those steps cannot be restored` : ""),
  ].join("\n");
}

export function registerMigrate(program: Command): void {
  declareCommand(program, "migrate")
    .requiredOption("--from <location>", "the source: a state directory, a workspace, or postgres://…")
    .requiredOption("--to <location>", "the target: postgres://… or a state directory (created when missing)")
    .option("--thread <id>", "move only this run (repeatable; default: every run)", (v: string, acc: string[] = []) => [...acc, v])
    .option("--json", "print the report as one JSON object")
    .action(async (opts: MigrateArgs) => {
      const r = await handleMigrate(opts);
      if (opts.json) printJson(r);
      else process.stdout.write(describeMigration(r) + "\n");
      const done = r.threads.filter((t) => t.result === "migrated").length;
      if (!opts.json) log(done ? `migrated ${done} run(s)` : "already migrated: every run was on the target with the same content");
    });
}
