import { describe, expect, it } from "vitest";
import { allowedBy, backendImports } from "./backend-imports.js";
import { sources } from "./sources.js";

/**
 * Issue 31, one state port: outside the port homes (src/ledger/, src/state-admin/), nothing chooses
 * a backend. Callers open the port (ledger/state-port.ts to write, ledger/inspection.ts to read,
 * state-admin/state-admin.ts to administer) and its adapters, beside it, are the only modules that
 * know SQLite from PostgreSQL. What is PostgreSQL-only by
 * design may name its backend; each entry says why. The list may only shrink: an entry nothing
 * needs any more fails the test, so it is dropped when its last import goes.
 */
const ALLOWED: Record<string, string> = {
  // The run queue is pg-boss on the state's PostgreSQL database: there is no SQLite queue.
  "src/queue/": "the run queue and its leases exist on PostgreSQL only",
  "src/telemetry/queue-metrics.ts": "gauges of the PostgreSQL run queue",
  // The queue worker and the operations on a submitted run (cancel, requeue) act on the queue.
  "src/runs/worker.ts": "the queue worker opens one PostgreSQL pool for all its runs",
  "src/runs/worker-presence.ts": "the worker's row in ll_workers",
  "src/runs/worker-reaper.ts": "hands over the runs of dead workers (queue leases)",
  "src/runs/run-control.ts": "cancel and requeue a submitted run: queue rows",
  "src/runs/requeue-from.ts": "requeues a run from a checkpoint of the PostgreSQL state, for the workers",
  // The runtime carries the open PostgreSQL state for the worker, and re-exports the
  // SQLite saver as part of the package's API.
  "src/runtime.ts": "exposes the shared PostgreSQL state to the worker, and RedactingSqliteSaver to scripts",
  // The search index is this machine's, next to the workspace's own SQLite file, whatever the state.
  "src/retrieval/open-retriever.ts": "indexes the workspace's local SQLite ledger",
};

describe("one state port: only the port homes know the backend", () => {
  it("no module outside the port homes imports a backend-specific ledger module or pg, except the allowed ones", () => {
    const found = backendImports(sources());
    // The scan sees the allowed imports (a scan that found nothing would pass anything).
    expect(found.length).toBeGreaterThan(10);
    const stray = found.filter((f) => !allowedBy(f.file, Object.keys(ALLOWED))).map((f) => `${f.file}:${f.line} imports "${f.specifier}"`);
    expect(stray, "open the state through ledger/state-port.ts, ledger/inspection.ts or state-admin/state-admin.ts instead").toEqual([]);
  });

  it("every allow-list entry is still needed", () => {
    const found = backendImports(sources());
    const unused = Object.keys(ALLOWED).filter((a) => !found.some((f) => allowedBy(f.file, [a]) === a));
    expect(unused, "these no longer import a backend: drop them from ALLOWED").toEqual([]);
  });

  it("finds planted backend imports in every syntax, and passes the port's own", () => {
    const files = [
      {
        path: "src/runs/delete.ts",
        text: `import { openPgState } from "../ledger/pg-db.js";\nimport { openStateAdmin } from "../state-admin/state-admin.js";\n`,
      },
      { path: "src/runs/gc.ts", text: `import { pgStateAdmin } from "../state-admin/pg-state-admin.js";\n` },
      { path: "src/cli/gc.ts", text: `import type { PgGcReport } from "../ledger/pg-maintenance.js";\n` },
      { path: "src/cli/doctor.ts", text: `const m = await import("../ledger/pg-maintenance.js");\n` },
      { path: "src/inspect/workers.ts", text: `export async function f(pool: import("pg").Pool) {}\n` },
      { path: "src/web/x.ts", text: `import pg from "pg";\nimport { SqliteLedger } from "../ledger/sqlite-ledger.js";\n` },
      { path: "src/index.ts", text: `export { SqliteLedger } from "./ledger/sqlite-ledger.js";\n` },
      // Allowed: the port, the neutral helpers, the ledger's own adapters, packages with "pg" in their name.
      { path: "src/cli/web.ts", text: `import { redactUrl } from "../ledger/state-url.js";\nimport { x } from "pg-boss";\n` },
      { path: "src/state-admin/state-admin.ts", text: `const a = await import("./pg-state-admin.js");\nimport pg from "pg";\n` },
      { path: "src/ledger/open-state.ts", text: `import { openPgState } from "./pg-db.js";\n` },
      { path: "test/x.test.ts", text: `import pg from "pg";\n` },
    ];
    expect(backendImports(files).map((f) => `${f.file}:${f.line} ${f.specifier}`)).toEqual([
      "src/runs/delete.ts:1 ../ledger/pg-db.js",
      "src/runs/gc.ts:1 ../state-admin/pg-state-admin.js",
      "src/cli/gc.ts:1 ../ledger/pg-maintenance.js",
      "src/cli/doctor.ts:1 ../ledger/pg-maintenance.js",
      "src/inspect/workers.ts:1 pg",
      "src/web/x.ts:1 pg",
      "src/web/x.ts:2 ../ledger/sqlite-ledger.js",
      "src/index.ts:1 ./ledger/sqlite-ledger.js",
    ]);
    expect(allowedBy("src/queue/run-queue.ts", ["src/queue/"])).toBe("src/queue/");
    expect(allowedBy("src/runs/worker-x.ts", ["src/runs/worker.ts"])).toBeUndefined();
  });
});
