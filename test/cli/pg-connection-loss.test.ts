import fs from "node:fs";
import path from "node:path";
import { once } from "node:events";
import { afterAll, expect, it } from "vitest";
import pg from "pg";
import { exitCodeForStatus } from "../../src/cli/common.js";
import { isStateUnavailable } from "../../src/ledger/state-unavailable.js";
import { openAgent } from "../../src/index.js";
import { cliSpawn } from "../helpers/cli.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";
import { TEST_PG_URL, describePg, useTestDatabase, pgQuery } from "../helpers/postgres.js";

afterAll(() => cleanupTemp());

async function admin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: TEST_PG_URL });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

type Row = { id: string; seq: number; type: string; caused_by: string | null; payload: string };

/**
 * Starts `ledgerloop run` on a PostgreSQL state with a first command that waits for the file "go";
 * once that command runs, takes the database away (new connections refused, every open one
 * terminated with 57P01, as in a restart) and lets the command finish, so its feedback cannot be
 * recorded. The run's later commands append to after.log; the waiting one to started.log and done.log.
 */
async function runLosingDatabase(url: string, thread: string, extra: string[]) {
  const name = decodeURIComponent(new URL(url).pathname.slice(1));
  const ws = tempWorkspace(undefined, { "README.md": "x\n" });
  const traj = path.join(tempWorkspace(), "traj.json");
  fs.writeFileSync(
    traj,
    JSON.stringify({
      decide: [
        {
          tool_calls: [
            { name: "run_command", args: { command: "echo started >> started.log; while [ ! -e go ]; do sleep 0.05; done; echo done >> done.log" } },
          ],
        },
        { tool_calls: [{ name: "run_command", args: { command: "echo after >> after.log" } }] },
        { tool_calls: [{ name: "finish", args: { summary: "done" } }] },
      ],
    }),
  );
  const child = cliSpawn([
    "run",
    "slow",
    "-w",
    ws,
    "--model",
    `scripted:${traj}`,
    "--thread",
    thread,
    "--state",
    url,
    "--json",
    "-q",
    "--sandbox",
    "none",
    ...extra,
  ]);
  const out = { stdout: "", stderr: "" };
  child.stdout!.setEncoding("utf8").on("data", (d: string) => (out.stdout += d));
  child.stderr!.setEncoding("utf8").on("data", (d: string) => (out.stderr += d));
  // "close": the exit and the end of its output.
  const exited = once(child, "close");
  const stop = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  };
  try {
    const t0 = Date.now();
    while (!fs.existsSync(path.join(ws, "started.log"))) {
      if (child.exitCode !== null || child.signalCode !== null)
        throw new Error(`the run ended (${child.exitCode ?? child.signalCode}) before its command started: ${out.stderr}`);
      if (Date.now() - t0 > 120_000) throw new Error("the command never started");
      await new Promise((r) => setTimeout(r, 20));
    }
    await admin(async (c) => {
      await c.query(`ALTER DATABASE "${name}" ALLOW_CONNECTIONS false`);
      await c.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", [name]);
    });
    fs.writeFileSync(path.join(ws, "go"), "");
  } catch (err) {
    stop();
    throw err;
  }
  return {
    ws,
    traj,
    child,
    out,
    exited,
    /** Lets connections in again. */
    restore: () => admin((c) => c.query(`ALTER DATABASE "${name}" ALLOW_CONNECTIONS true`)),
    /** After the test: no run left waiting, the database open, the trajectory gone. */
    cleanup: async () => {
      stop();
      await admin((c) => c.query(`ALTER DATABASE "${name}" ALLOW_CONNECTIONS true`)).catch(() => {});
      fs.rmSync(traj, { force: true });
    },
  };
}

describePg("PostgreSQL going away during a run", () => {
  const db = useTestDatabase("connloss");

  it("pauses the run as state_unavailable (exit 6), keeps ledger and checkpoints intact, and a resume on the same state finishes it", async () => {
    const password = new URL(db.url).password;
    const run = await runLosingDatabase(db.url, "T", ["--reconnect-seconds", "0"]);
    const { ws, traj, exited } = run;
    try {
      const [code] = await exited;
      const { stdout, stderr } = run.out;
      expect(code, stderr).toBe(exitCodeForStatus("state_unavailable"));
      expect(code).toBe(6);
      const result = JSON.parse(stdout.trim().split("\n").at(-1)!) as { status: string; error: string };
      expect(result.status).toBe("state_unavailable");
      expect(result.error.split("\n")).toHaveLength(1);
      expect(result.error).toMatch(
        /^the state database postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/ll_connloss_\w+ is unavailable \(.+\); the run is paused at its last checkpoint: resume it/,
      );
      expect(stdout + stderr).not.toContain(password);
      // The command itself ran to its end: the pause came after it, when its feedback was written.
      expect(fs.readFileSync(path.join(ws, "done.log"), "utf8")).toBe("done\n");

      await run.restore();

      // Intact after the pause: seq without gaps, no "failed" status, the action in flight without feedback.
      const before = await pgQuery<Row>(db.url, "SELECT id, seq, type, caused_by, payload FROM ll_events WHERE thread_id = 'T' ORDER BY seq");
      expect(before.map((e) => e.seq)).toEqual(before.map((_, i) => i + 1));
      expect(before.filter((e) => e.type === "run_status").map((e) => JSON.parse(e.payload).status)).not.toContain("failed");
      const actions = before.filter((e) => e.type === "agent_action");
      expect(actions.length).toBeGreaterThan(0);
      expect(before.some((e) => e.type === "environment_feedback" && e.caused_by === actions.at(-1)!.id)).toBe(false);
      const cps = await pgQuery<{ n: number }>(db.url, "SELECT count(*)::int AS n FROM checkpoints WHERE thread_id = 'T'");
      expect(cps[0]!.n).toBeGreaterThan(0);

      // Resumed through the package API (the CLI's resume --state is tested in time-travel-pg), on a
      // fresh runtime.
      const agent = await openAgent({ workspace: ws, model: `scripted:${traj}`, stateUrl: db.url, retrieval: "lexical", sandbox: "none" });
      try {
        const resumed = await agent.resume("T");
        expect(resumed.status, resumed.error).toBe("finished");
      } finally {
        await agent.close();
      }
      // The command whose feedback was lost is reported interrupted, never run again; the rest ran once.
      expect(fs.readFileSync(path.join(ws, "started.log"), "utf8")).toBe("started\n");
      expect(fs.readFileSync(path.join(ws, "done.log"), "utf8")).toBe("done\n");
      expect(fs.readFileSync(path.join(ws, "after.log"), "utf8")).toBe("after\n");
      const after = await pgQuery<Row>(db.url, "SELECT id, seq, type, caused_by, payload FROM ll_events WHERE thread_id = 'T' ORDER BY seq");
      expect(after.map((e) => e.seq)).toEqual(after.map((_, i) => i + 1));
      expect(after.slice(0, before.length)).toEqual(before);
      for (const a of after.filter((e) => e.type === "agent_action" && JSON.parse(e.payload).tool !== "finish")) {
        const fb = after.filter((e) => e.type === "environment_feedback" && e.caused_by === a.id);
        expect(fb, `feedback of ${a.payload}`).toHaveLength(1);
      }
      const lost = after.find((e) => e.type === "environment_feedback" && e.caused_by === actions.at(-1)!.id)!;
      expect(JSON.parse(lost.payload)).toMatchObject({ tool: "run_command", status: "interrupted" });
      const last = after.filter((e) => e.type === "run_status").at(-1)!;
      expect(JSON.parse(last.payload)).toMatchObject({ status: "finished" });
    } finally {
      await run.cleanup();
    }
  }, 300_000);
});

describePg("PostgreSQL away for a few seconds during a run", () => {
  const db = useTestDatabase("connblip");

  it("the run waits for the database, resumes by itself from its last checkpoint and finishes; nothing runs twice", async () => {
    const run = await runLosingDatabase(db.url, "B", ["--reconnect-seconds", "120"]);
    const { ws, child, exited } = run;
    try {
      // The run says it waits (no timer here: the line itself is the cue), then the database is back.
      for (const t1 = Date.now(); !/waiting up to 120 s for it to answer again/.test(run.out.stderr);) {
        if (child.exitCode !== null) throw new Error(`the run ended instead of waiting: ${run.out.stderr}`);
        if (Date.now() - t1 > 120_000) throw new Error(`the run never said it waits: ${run.out.stderr}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      await run.restore();
      const [code] = await exited;
      const { stdout, stderr } = run.out;
      expect(code, stderr).toBe(0);
      expect(JSON.parse(stdout.trim().split("\n").at(-1)!)).toMatchObject({ thread: "B", status: "finished" });
      expect(stderr).toMatch(/the state database answers again after \d+\.\d s; resuming B from its last checkpoint/);
      // Each command ran once; the one whose feedback the outage swallowed is reported interrupted.
      expect(fs.readFileSync(path.join(ws, "done.log"), "utf8")).toBe("done\n");
      expect(fs.readFileSync(path.join(ws, "after.log"), "utf8")).toBe("after\n");
      const events = await pgQuery<Row>(db.url, "SELECT id, seq, type, caused_by, payload FROM ll_events WHERE thread_id = 'B' ORDER BY seq");
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
      const statuses = events
        .filter((e) => e.type === "environment_feedback")
        .map((e) => JSON.parse(e.payload) as { tool: string; status: string })
        .filter((p) => p.tool === "run_command")
        .map((p) => p.status);
      expect(statuses).toEqual(["interrupted", "ok"]);
    } finally {
      await run.cleanup();
    }
  }, 300_000);
});

describePg("each PostgreSQL port reports a lost database as one", () => {
  const db = useTestDatabase("connports");

  it("ledger, checkpointer, store and registry fail with errors classified as state unavailable; a query in flight gets 57P01", async () => {
    const name = decodeURIComponent(new URL(db.url).pathname.slice(1));
    const ws = tempWorkspace(undefined, { "a.txt": "a\n" });
    const traj = path.join(tempWorkspace(undefined, { "t.json": JSON.stringify({ decide: [] }) }), "t.json");
    const agent = await openAgent({ workspace: ws, model: `scripted:${traj}`, stateUrl: db.url, retrieval: "lexical", sandbox: "none" });
    const rt = agent.runtime;
    let held: import("pg").PoolClient | undefined;
    try {
      // A client checked out between two queries (inside a transaction) when the server goes away:
      // the process must not die of an unhandled 'error' event, and the next query says why.
      held = await rt.pg!.pool.connect();
      await held.query("BEGIN");
      // Listened to by the pool's own handler (pg-pool drops its listener while a client is out).
      expect(held.listenerCount("error")).toBeGreaterThan(0);
      // A query in flight when the server ends its connection (as in a restart).
      const inFlight = rt.pg!.pool.query("SELECT pg_sleep(30)").then(
        () => null,
        (e: unknown) => e,
      );
      await admin(async (c) => {
        for (let i = 0; i < 200; i++) {
          const r = await c.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND query LIKE 'SELECT pg_sleep%' AND state = 'active'", [
            name,
          ]);
          if (r.rows[0].n > 0) break;
          await new Promise((res) => setTimeout(res, 25));
        }
        await c.query(`ALTER DATABASE "${name}" ALLOW_CONNECTIONS false`);
        await c.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", [name]);
      });
      const next = await held.query("SELECT 1").then(
        () => null,
        (e: unknown) => e,
      );
      expect(isStateUnavailable(next), String(next)).toBe(true);
      held.release(true);
      held = undefined;
      const terminated = (await inFlight) as { code?: string };
      expect(terminated).toMatchObject({ code: "57P01" });
      expect(isStateUnavailable(terminated)).toBe(true);

      const config = { configurable: { thread_id: "p", checkpoint_ns: "" } };
      const failures = await Promise.all([
        rt.ledger.append({ threadId: "p", parentId: null, type: "run_status", payload: { status: "interrupted", steps: 0, reason: "x" } } as never).then(
          () => null,
          (e: unknown) => e,
        ),
        rt.checkpointer.getTuple(config).then(
          () => null,
          (e: unknown) => e,
        ),
        rt.store.get(["lessons"], "k").then(
          () => null,
          (e: unknown) => e,
        ),
        Promise.resolve(rt.runs.get("p")).then(
          () => null,
          (e: unknown) => e,
        ),
      ]);
      for (const err of failures) {
        expect(err).not.toBeNull();
        expect(isStateUnavailable(err), String(err)).toBe(true);
      }
    } finally {
      held?.release(true);
      await admin((c) => c.query(`ALTER DATABASE "${name}" ALLOW_CONNECTIONS true`)).catch(() => {});
      await agent.close();
    }
  }, 120_000);
});

it("classifies a lost database by the underlying error, however it is wrapped", () => {
  const terminated = Object.assign(new Error("terminating connection due to administrator command"), { code: "57P01" });
  expect(isStateUnavailable(terminated)).toBe(true);
  expect(isStateUnavailable(new Error("checkpoint failed", { cause: new Error("wrapped", { cause: terminated }) }))).toBe(true);
  expect(
    isStateUnavailable(new AggregateError([new Error("x"), Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" })])),
  ).toBe(true);
  expect(isStateUnavailable(new Error("Connection terminated unexpectedly"))).toBe(true);
  expect(isStateUnavailable(Object.assign(new Error('database "x" is not currently accepting connections'), { code: "55000" }))).toBe(true);
  // Not a lost connection: a constraint violation, a syntax error, a plain failure.
  expect(isStateUnavailable(Object.assign(new Error("duplicate key value violates unique constraint"), { code: "23505" }))).toBe(false);
  expect(isStateUnavailable(Object.assign(new Error("syntax error"), { code: "42601" }))).toBe(false);
  expect(isStateUnavailable(new Error("boom"))).toBe(false);
});
