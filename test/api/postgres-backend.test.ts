import fs from "node:fs";
import path from "node:path";
import { afterAll, expect, it } from "vitest";
import { Database } from "../../src/sqlite/driver.js";
import { DEMO_TASK } from "../../src/cli/demo.js";
import { StateStoreError } from "../../src/errors.js";
import { openAgent, type Agent } from "../../src/index.js";
import { DEMO_TRAJECTORY, DEMO_WORKSPACE, cleanupTemp, readTree, tempWorkspace } from "../helpers/workspace.js";
import { describePg, useTestDatabase, pgQuery } from "../helpers/postgres.js";

const agents: Agent[] = [];
afterAll(async () => {
  await Promise.all(agents.map((a) => a.close()));
  cleanupTemp();
});

const demo = (ws: string, extra: Record<string, unknown> = {}) =>
  openAgent({ workspace: ws, model: `scripted:${DEMO_TRAJECTORY}`, retrieval: "lexical", maxSteps: 30, ...extra });

describePg("openAgent with stateUrl: the demo on PostgreSQL", () => {
  const db = useTestDatabase("api");

  it("runs the demo to the end with ledger, checkpoints, run registry in PostgreSQL, and the same files as on SQLite", async () => {
    const onPg = tempWorkspace(DEMO_WORKSPACE);
    const a = await demo(onPg, { stateUrl: db.url });
    agents.push(a);
    expect(a.runtime.backend).toBe("postgres");
    const r = await a.run(DEMO_TASK, { thread: "pg-demo" });
    expect(r.status).toBe("finished");

    const runs = await pgQuery<{ thread_id: string; settings: string; runner: string }>(db.url, "SELECT * FROM ll_runs");
    expect(runs.map((x) => x.thread_id)).toEqual(["pg-demo"]);
    // The registry never stores the URL (it may carry a password).
    expect(runs[0]!.settings).not.toContain(new URL(db.url).password);
    expect(JSON.parse(runs[0]!.runner)).toMatchObject({ pid: process.pid });
    const events = await pgQuery<{ type: string; n: string }>(db.url, "SELECT type, count(*) AS n FROM ll_events WHERE thread_id = 'pg-demo' GROUP BY type");
    const byType = Object.fromEntries(events.map((e) => [e.type, Number(e.n)]));
    expect(byType).toMatchObject({ task_spec: 1 });
    expect(byType.agent_action).toBeGreaterThan(5);
    const last = await pgQuery<{ payload: string }>(
      db.url,
      "SELECT payload FROM ll_events WHERE thread_id = 'pg-demo' AND type = 'run_status' ORDER BY seq DESC LIMIT 1",
    );
    expect(JSON.parse(last[0]!.payload)).toMatchObject({ status: "finished" });
    const cps = await pgQuery<{ n: string }>(db.url, "SELECT count(*) AS n FROM checkpoints WHERE thread_id = 'pg-demo'");
    expect(Number(cps[0]!.n)).toBeGreaterThan(20);
    // The graph reads its state back through PostgresSaver.
    const snap = await a.graph.getState({ configurable: { thread_id: "pg-demo" } });
    expect((snap.values as { status?: string }).status).toBe("finished");
    // Nothing of the run went to the workspace's SQLite file.
    const local = new Database(a.runtime.dbPath, { readonly: true });
    const tables = new Set((local.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as Array<{ name: string }>).map((t) => t.name));
    local.close();
    expect(tables.has("ll_events")).toBe(false);
    expect(tables.has("checkpoints")).toBe(false);

    // The same run on SQLite leaves the same files.
    const onSqlite = tempWorkspace(DEMO_WORKSPACE);
    const b = await demo(onSqlite);
    agents.push(b);
    expect(b.runtime.backend).toBe("sqlite");
    expect((await b.run(DEMO_TASK, { thread: "pg-demo" })).status).toBe("finished");
    expect(readTree(onPg)).toEqual(readTree(onSqlite));

    // A thread id taken in the database is refused, as on SQLite.
    await expect(a.run(DEMO_TASK, { thread: "pg-demo" })).rejects.toThrow(/thread "pg-demo" already exists/);
  });

  it("refuses a wrong password in one line before anything is created in the workspace", async () => {
    const ws = tempWorkspace(DEMO_WORKSPACE);
    const u = new URL(db.url);
    u.password = "not-the-password";
    const err = await demo(ws, { stateUrl: u.toString() }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StateStoreError);
    expect((err as Error).message).toMatch(/refused the login of user "postgres"/);
    expect((err as Error).message).not.toContain("not-the-password");
    expect(fs.existsSync(path.join(ws, ".ledgerloop"))).toBe(false);
  });
});

it("refuses a stateUrl that is not a PostgreSQL URL, naming the setting", async () => {
  const ws = tempWorkspace(undefined, { "a.txt": "a\n" });
  const err = await openAgent({ workspace: ws, model: "scripted:x.json", stateUrl: "mysql://u@h/db" }).catch((e: unknown) => e);
  expect((err as Error).message).toMatch(/^invalid setting stateUrl: must be a postgres:\/\/ or postgresql:\/\/ URL/);
  expect(fs.existsSync(path.join(ws, ".ledgerloop"))).toBe(false);
});
