import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { emptyCheckpoint, uuid6, type BaseCheckpointSaver, type Checkpoint } from "@langchain/langgraph-checkpoint";
import type { LedgerEvent } from "../src/events.js";
import type { Ledger } from "../src/ledger/port.js";
import { openPgState } from "../src/ledger/pg-db.js";
import { RedactingPostgresSaver } from "../src/ledger/pg-checkpoints.js";
import { PgLedger } from "../src/ledger/pg-ledger.js";
import { SqliteLedger } from "../src/ledger/sqlite-ledger.js";
import { openStateDb } from "../src/ledger/state-db.js";
import { RedactingSqliteSaver } from "../src/runtime.js";
import { createRedactor } from "../src/secrets.js";
import { median, printTable, quantile, type BenchResult } from "./report.js";

// Checkpoint-plus-ledger writes of one agent step, on SQLite and on PostgreSQL in the same process:
// one checkpoint (the step's changed channels), its pending writes, and the three ledger events a
// step appends (action, feedback, decision). PostgreSQL from LEDGERLOOP_BENCH_PG_URL or
// LEDGERLOOP_TEST_PG_URL (the throw-away server of .ci/postgres.sh runs with fsync off: its figure
// is the round trips and the server's work, not the disk's).

const STEPS = 150;
const redactor = createRedactor([]);

async function steps(saver: BaseCheckpointSaver, ledger: Ledger): Promise<number[]> {
  const thread_id = `bench-${uuid6(1)}`;
  let config = { configurable: { thread_id, checkpoint_ns: "" } } as Record<string, unknown>;
  let cp: Checkpoint = { ...emptyCheckpoint(), id: uuid6(1) };
  let head: string | null = null;
  const out: number[] = [];
  const output = "ok ".repeat(600);
  for (let i = 0; i < STEPS; i++) {
    const versions = { step: i + 1, ledgerHead: i + 1, messages: i + 1 };
    cp = {
      ...cp,
      id: uuid6(1),
      channel_values: { step: i, ledgerHead: head, messages: Array.from({ length: 6 }, (_, k) => `turn ${i - k}: ${output.slice(0, 300)}`) },
      channel_versions: { ...cp.channel_versions, ...versions },
    };
    const t0 = performance.now();
    config = (await saver.put(config as never, cp, { source: "loop", step: i, parents: {} }, versions)) as Record<string, unknown>;
    await saver.putWrites(config as never, [["step", i + 1]], `task-${i}`);
    const a: LedgerEvent = await ledger.append({
      threadId: thread_id,
      parentId: head,
      type: "agent_action",
      payload: { tool: "run_command", args: { command: "npm test" }, callId: `c${i}`, step: i, idempotencyKey: `k${i}`, idempotent: false },
      idempotencyKey: `a${i}`,
    });
    const f: LedgerEvent = await ledger.append({
      threadId: thread_id,
      parentId: a.id,
      type: "environment_feedback",
      payload: { tool: "run_command", status: "ok", output, durationMs: 5 },
      causedBy: a.id,
      idempotencyKey: `f${i}`,
    });
    const d: LedgerEvent = await ledger.append({
      threadId: thread_id,
      parentId: f.id,
      type: "decision",
      payload: { text: `step ${i}`, step: i },
      idempotencyKey: `d${i}`,
    });
    out.push(performance.now() - t0);
    head = d.id;
  }
  return out;
}

export async function benchState(): Promise<BenchResult[]> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ll-bench-state-"));
  const db = openStateDb(path.join(dir, "state.db"));
  const sqlite = await steps(new RedactingSqliteSaver(db, redactor), new SqliteLedger(db, { redactor }));
  db.close();
  fs.rmSync(dir, { recursive: true, force: true });
  const rows: BenchResult[] = [
    { name: "SQLite: checkpoint + 3 ledger events per step, median", value: median(sqlite), unit: "ms" },
    { name: "SQLite: checkpoint + 3 ledger events per step, p95", value: quantile(sqlite, 0.95), unit: "ms" },
  ];
  const url = process.env.LEDGERLOOP_BENCH_PG_URL || process.env.LEDGERLOOP_TEST_PG_URL;
  if (!url) {
    console.log("\nPostgreSQL figures skipped: set LEDGERLOOP_BENCH_PG_URL (or LEDGERLOOP_TEST_PG_URL)");
  } else {
    const schema = `bench_${process.pid}`;
    const st = await openPgState(url, { schema });
    try {
      const saver = new RedactingPostgresSaver(st.pool, redactor, { schema });
      await saver.setup();
      const pgSteps = await steps(saver, new PgLedger(st.pool, { redactor }));
      rows.push(
        {
          name: "PostgreSQL: checkpoint + 3 ledger events per step, median",
          value: median(pgSteps),
          unit: "ms",
          baseline: median(sqlite),
          baselineName: "SQLite",
        },
        {
          name: "PostgreSQL: checkpoint + 3 ledger events per step, p95",
          value: quantile(pgSteps, 0.95),
          unit: "ms",
          baseline: quantile(sqlite, 0.95),
          baselineName: "SQLite",
        },
      );
    } finally {
      await st.pool.query(`DROP SCHEMA ${schema} CASCADE`).catch(() => {});
      await st.close();
    }
  }
  printTable(`state writes per step (${STEPS} steps)`, rows);
  return rows;
}
