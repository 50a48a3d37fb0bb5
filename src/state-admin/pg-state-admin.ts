import fs from "node:fs";
import { CliError, errorMessage, nativeModuleError } from "../errors.js";
import { resolveWorkspace, stateLocation } from "../workspace/location.js";
import type { WorkspaceArgs } from "../ledger/open-state.js";
import type { StateAdmin, StateCheck } from "./state-admin.js";

// The state admin of a PostgreSQL state, which many machines use at once: every operation opens a
// small pool of its own and ends it. Loaded on use (state-admin.ts), as it loads pg.

/** The administrative operations on the PostgreSQL state at `url`; `args` name this machine's copy of the workspace. */
export function pgStateAdmin(url: string, args: WorkspaceArgs): StateAdmin {
  return {
    backend: "postgres",
    deleteRun: async (thread, decide) => {
      const [{ openPgState }, { deletePgRunRecords, pgRunFootprint }, { removeRunFiles, runExists }, { listRunsPg }, { refuseIfQueued }] = await Promise.all([
        import("../ledger/pg-db.js"),
        import("../ledger/pg-delete-run.js"),
        import("../ledger/delete-run.js"),
        import("../ledger/pg-run-status.js"),
        import("../ledger/pg-run-leases.js"),
      ]);
      // Migrated on open: the guard that lets a whole run's events go is migration 8.
      const st = await openPgState(url, { max: 2 });
      try {
        const footprint = await pgRunFootprint(st.pool, thread);
        if (!runExists(footprint))
          throw new CliError(`unknown thread "${thread}" in ${st.location}; list runs with \`ledgerloop threads\``, 1, "UNKNOWN_THREAD");
        await refuseIfQueued(st.pool, thread, "delete");
        const plan = { ...footprint, location: st.location, run: (await listRunsPg(st.pool, { thread }))[0] };
        if (!(await decide(plan))) return { plan, done: null };
        await deletePgRunRecords(st.pool, thread);
        // This machine's copy of the workspace keeps the run's log, report and indexed events; other
        // machines' copies keep theirs (see README).
        const { stateDir } = stateLocation(resolveWorkspace(args.workspace ?? process.cwd()), args.stateDir);
        const here = fs.existsSync(stateDir);
        if (here) removeRunFiles(stateDir, thread);
        const sweep = { skipped: "on PostgreSQL, `ledgerloop gc --state …` sweeps the revisions only the run named from the replica" };
        return { plan, done: { stateDir: here ? stateDir : null, sweep } };
      } finally {
        await st.close();
      }
    },
    gc: async (req) => {
      const [{ openPgState }, { collectPgGarbage }] = await Promise.all([import("../ledger/pg-db.js"), import("../ledger/pg-maintenance.js")]);
      const st = await openPgState(url, { max: 3 });
      try {
        const report = await collectPgGarbage(st.pool, {
          ...(req.keepLast !== undefined ? { keepLast: req.keepLast } : {}),
          ...(req.graceMinutes !== undefined ? { graceMs: req.graceMinutes * 60_000 } : {}),
          ...(req.staleHours !== undefined ? { staleMs: req.staleHours * 3_600_000 } : {}),
        });
        return { backend: "postgres", report };
      } finally {
        await st.close();
      }
    },
    checks: () => pgChecks(url),
    workers: async (opts) => {
      // Read-only: listing the fleet never migrates or writes the database it looks at. A newer schema
      // is when an operator most needs the list (which workers are too old), so it is read all the same.
      const [{ openPgState }, { listFleetWorkers }] = await Promise.all([import("../ledger/pg-db.js"), import("../queue/fleet.js")]);
      const st = await openPgState(url, { migrate: false, readOnly: true, allowNewer: true, max: 1 });
      try {
        return await listFleetWorkers(st.pool, opts);
      } finally {
        await st.close();
      }
    },
  };
}

/**
 * Doctor's lines about a PostgreSQL state: reachable, login accepted, schema version one this build
 * understands; then what it holds and its run queue. Read-only: doctor migrates nothing.
 */
async function pgChecks(url: string): Promise<StateCheck[]> {
  const { PG_SCHEMA_VERSION, openPgState } = await import("../ledger/pg-db.js");
  const checks: StateCheck[] = [];
  const check = async (name: string, fn: () => Promise<string>) => {
    try {
      checks.push({ name, ok: true, detail: await fn() });
    } catch (err) {
      checks.push({ name, ok: false, detail: errorMessage(nativeModuleError(err) ?? err) });
    }
  };
  // One connection serves the state, storage and queue checks.
  let st: Awaited<ReturnType<typeof openPgState>> | undefined;
  try {
    await check("state", async () => {
      st = await openPgState(url, { migrate: false, max: 1 });
      const server = String((await st.pool.query("SHOW server_version")).rows[0]?.server_version ?? "?").split(" ")[0];
      const runs = st.version > 0 ? Number((await st.pool.query("SELECT count(*) AS n FROM ll_runs")).rows[0]?.n ?? 0) : 0;
      const schema =
        st.version === PG_SCHEMA_VERSION
          ? `schema version ${st.version} (current), ${runs} run${runs === 1 ? "" : "s"}`
          : st.version === 0
            ? `no ledgerloop tables yet (the first run creates schema version ${PG_SCHEMA_VERSION})`
            : `schema version ${st.version} (the next run migrates it to ${PG_SCHEMA_VERSION}), ${runs} run${runs === 1 ? "" : "s"}`;
      return `PostgreSQL ${server} at ${st.location}: ${schema}`;
    });
    const pool = st?.pool;
    if (!pool || !checks.at(-1)?.ok) return checks;
    // What the state holds, so an operator sees when `gc --state` is due.
    await check("storage", async () => {
      const { pgStorage } = await import("../ledger/pg-maintenance.js");
      const s = await pgStorage(pool);
      const mb = (b: number) => `${(b / 1e6).toFixed(1)} MB`;
      return (
        `${s.checkpoints.count} checkpoint(s), ${mb(s.checkpoints.bytes)}; ${s.ledger.events} ledger event(s), ${mb(s.ledger.bytes)}; ` +
        `${s.replica.revisions} workspace revision(s), ${mb(s.replica.bytes)} (\`ledgerloop gc --state … --keep-last N\` prunes checkpoints and revisions)`
      );
    });
    // The run queue (pg-boss's tables, read with plain SQL): absent until the first worker starts.
    await check("queue", async () => {
      const { describeQueue, fleetIdleWithWork, queueStatus } = await import("../queue/status.js");
      const q = await queueStatus(pool);
      // A dead fleet with work waiting is a problem to report, not an "ok" line.
      if (fleetIdleWithWork(q)) throw new Error(describeQueue(q));
      return describeQueue(q);
    });
    return checks;
  } finally {
    await (st as { close(): Promise<void> } | undefined)?.close();
  }
}
