import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import type { Browser } from "playwright-core";
import { handleWeb } from "../../src/cli/web.js";
import { handleSubmit } from "../../src/cli/submit.js";
import { openPgState } from "../../src/ledger/pg-db.js";
import { acquireRunLease } from "../../src/ledger/pg-run-leases.js";
import { startViewer, type Viewer } from "../../src/web/server.js";
import { createTestDatabase, describePg, TEST_PG_URL, useTestDatabase } from "../helpers/postgres.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";
import { exitOf, spawnWorker, until, writeTrajectory } from "../queue/queue-fixtures.js";
import { fullRun, smallWorkspace } from "./fixtures.js";

// The run viewer on a PostgreSQL state (`ledgerloop web --state postgres://…`): every run of the
// database, those submitted to the queue and not started yet among them, each with its holder.

const CHROMIUM = process.env.LEDGERLOOP_CHROMIUM ?? "/usr/bin/chromium";
const hasChromium = fs.existsSync(CHROMIUM);

afterAll(() => cleanupTemp());

async function get(v: Viewer, p: string): Promise<{ status: number; body: any }> {
  const res = await fetch(new URL(p, v.url));
  return { status: res.status, body: await res.json() };
}

const tp = (thread: string) => `/api/threads/${encodeURIComponent(thread)}`;

describePg("run viewer on a PostgreSQL state", () => {
  const db = useTestDatabase("web");
  const QUEUED = "q-waiting";
  const HELD = "q-held";
  let ran: string;
  let viewer: Viewer;

  beforeAll(async () => {
    const { workspace, scripts } = smallWorkspace();
    ran = await fullRun(workspace, scripts, db.url);
    // Two submitted runs no worker has run a step of: one waiting, one a worker has just taken.
    // submit checks the model file exists; no worker runs these, so any trajectory will do.
    const submit = { state: db.url, workspace, model: `scripted:${writeTrajectory(tempWorkspace(), 1)}`, maxSteps: 7 };
    await handleSubmit("Wait for a worker", { ...submit, thread: QUEUED, json: true });
    const [{ jobId }] = (await handleSubmit("Be taken by worker-a", { ...submit, thread: HELD, json: true })) as [{ thread: string; jobId: string }];
    const st = await openPgState(db.url, { migrate: false });
    try {
      expect(await acquireRunLease(st.pool, { thread: HELD, worker: "worker-a", jobId, ttlMs: 600_000 })).toMatchObject({ ok: true });
    } finally {
      await st.close();
    }
    viewer = await startViewer({ workspace: process.cwd(), state: db.url });
  }, 180_000);

  afterAll(async () => {
    await viewer?.close();
  });

  it("lists every run of the database: the finished one, the queued one and the one a worker holds", async () => {
    const { status, body } = await get(viewer, "/api/threads");
    expect(status).toBe(200);
    expect(body.backend).toBe("postgres");
    expect(body.workspace).toMatch(/^postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/ll_web_/);
    expect(JSON.stringify(body)).not.toContain(new URL(db.url).password);
    const byThread = new Map<string, any>(body.threads.map((t: { thread: string }) => [t.thread, t]));
    expect([...byThread.keys()].sort()).toEqual([HELD, QUEUED, ran].sort());
    expect(byThread.get(ran)).toMatchObject({ status: "finished", origin: "cli", checkpointsIn: "state-db", steps: 4, goal: "Serve once and say so" });
    expect(byThread.get(ran).events).toBeGreaterThan(20);
    expect(byThread.get(ran).queue).toBeUndefined();
    expect(byThread.get(QUEUED)).toMatchObject({
      status: "queued",
      goal: "Wait for a worker",
      events: 0,
      queue: { state: "queued", worker: null, takeovers: 0 },
    });
    expect(byThread.get(HELD)).toMatchObject({ status: "running", goal: "Be taken by worker-a", queue: { state: "held", worker: "worker-a", takeovers: 0 } });
  });

  it("gives the finished run's header: plan, spend, processes, status", async () => {
    const { status, body } = await get(viewer, tp(ran));
    expect(status).toBe(200);
    expect(body).toMatchObject({ thread: ran, status: "finished", steps: 4, queue: null, finishSummary: "served once", forked: false });
    expect(body.checkpointId).toEqual(expect.any(String));
    expect(body.plan.map((s: { id: string }) => s.id)).toEqual(["serve"]);
    expect(body.usage).toMatchObject({ modelCalls: 5, inputTokens: 5000, outputTokens: 1000 });
    expect(body.usage.costUsd).toBeCloseTo(0.005, 10);
    expect(body.processes).toEqual([expect.objectContaining({ name: "api", command: "node server.js", status: "stopped" })]);
    expect(body.lastSeq).toBe(body.events);
  });

  it("answers the steps, events, context and checkpoints of the run from PostgreSQL", async () => {
    const steps = (await get(viewer, `${tp(ran)}/steps`)).body;
    expect(steps.steps.map((s: { step: number }) => s.step)).toEqual([1, 2, 3, 4]);
    expect(steps.before.map((e: { type: string }) => e.type)).toEqual(expect.arrayContaining(["task_spec"]));
    expect(steps.steps[0].actions[0]).toMatchObject({ tool: "start_process", feedback: { status: "ok" } });
    expect(steps.steps[2].actions[0]).toMatchObject({ tool: "run_command", feedback: { status: "ok", exitCode: 0 } });
    expect(steps.steps[2].actions[0].feedback.stdout.text).toContain("served");
    expect(steps.steps[0].model.content).toBe("Starting the server.");
    for (const s of steps.steps) expect(s.spend.costUsd).toBeCloseTo(0.001, 10);
    const kinds = steps.steps.flatMap((s: any) => s.after.filter((i: any) => i.type === "process").map((i: any) => `${s.step}:${i.payload.kind}`));
    expect(kinds).toEqual(expect.arrayContaining(["1:start", "2:stop"]));

    const first = (await get(viewer, `${tp(ran)}/events?limit=5`)).body;
    expect(first.events.map((e: { seq: number }) => e.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(first).toMatchObject({ next: 5, more: true });
    const all = (await get(viewer, `${tp(ran)}/events?limit=1000`)).body;
    expect(all.events.at(-1)).toMatchObject({ type: "run_status", payload: { status: "finished" } });
    const fb = (await get(viewer, `${tp(ran)}/events?type=environment_feedback`)).body;
    expect(fb.events).toHaveLength(4);
    expect((await get(viewer, `${tp(ran)}/events/${all.events[0].id}`)).body).toMatchObject({ seq: 1, threadId: ran });

    const ctx = (await get(viewer, `${tp(ran)}/context/3`)).body;
    expect(ctx).toMatchObject({ step: 3, thread: ran });
    expect(ctx.messages[0].role).toBe("system");
    expect(ctx.sections.map((s: { section: string }) => s.section)).toEqual(expect.arrayContaining(["system", "goal", "plan"]));

    const cps = (await get(viewer, `${tp(ran)}/checkpoints?limit=3`)).body;
    expect(cps.checkpoints).toHaveLength(3);
    expect(cps.checkpoints[0]).toMatchObject({ status: "finished", agentStep: 4, interrupted: false });
    expect(cps.more).toBe(true);
  });

  it("shows a queued run as its submission: task, settings, the queue's state, and no steps yet", async () => {
    const { status, body } = await get(viewer, tp(QUEUED));
    expect(status).toBe(200);
    expect(body).toMatchObject({
      thread: QUEUED,
      status: "queued",
      goal: "Wait for a worker",
      steps: 0,
      events: 0,
      maxSteps: 7,
      model: expect.stringMatching(/^scripted:.*trajectory-1\.json$/),
      checkpointId: null,
    });
    expect(body.queue).toMatchObject({ state: "queued", worker: null });
    expect((await get(viewer, tp(HELD))).body.queue).toMatchObject({ state: "held", worker: "worker-a" });
    expect((await get(viewer, `${tp(QUEUED)}/steps`)).body).toMatchObject({ steps: [], total: 0 });
    expect((await get(viewer, `${tp(QUEUED)}/events`)).body).toMatchObject({ events: [], more: false });
    expect((await get(viewer, `${tp(QUEUED)}/checkpoints`)).body).toMatchObject({ checkpoints: [] });
  });

  it("gives each run's header the status and queue of its row in the list", async () => {
    const list = (await get(viewer, "/api/threads")).body.threads as Array<{ thread: string; status: string; queue?: unknown }>;
    for (const row of list) {
      const d = (await get(viewer, tp(row.thread))).body;
      expect([row.thread, d.status, d.queue]).toEqual([row.thread, row.status, row.queue ?? null]);
    }
  });

  it("never writes: every table reads the same after every route, and its sessions refuse a write", async () => {
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    const digest = async () => {
      const tables = (await c.query<{ t: string }>("SELECT tablename AS t FROM pg_tables WHERE schemaname = 'public' ORDER BY 1")).rows.map((r) => r.t);
      const out: Record<string, string> = {};
      for (const t of tables)
        out[t] = (await c.query(`SELECT count(*) || ':' || coalesce(md5(string_agg(x::text, '|' ORDER BY x::text)), '') AS d FROM "${t}" x`)).rows[0].d;
      return out;
    };
    try {
      const before = await digest();
      expect(Object.keys(before)).toEqual(expect.arrayContaining(["ll_events", "ll_runs", "ll_submissions", "ll_run_leases", "checkpoints"]));
      for (const t of [ran, QUEUED, HELD]) {
        for (const p of ["", "/steps", "/events", "/checkpoints"]) expect((await get(viewer, `${tp(t)}${p}`)).status).toBe(200);
      }
      expect((await get(viewer, `${tp(ran)}/context/2`)).status).toBe(200);
      expect((await get(viewer, "/api/threads")).status).toBe(200);
      expect(await digest()).toEqual(before);
    } finally {
      await c.end();
    }
    const ro = await openPgState(db.url, { migrate: false, readOnly: true });
    try {
      await expect(ro.pool.query("CREATE TABLE ll_viewer_wrote (x int)")).rejects.toMatchObject({ code: "25006" });
      await expect(ro.pool.query("UPDATE ll_runs SET goal = goal")).rejects.toMatchObject({ code: "25006" });
    } finally {
      await ro.close();
    }
  });

  it("shows the same run the same on SQLite and on PostgreSQL: header, steps and event types", async () => {
    const { workspace, scripts } = smallWorkspace();
    const local = await fullRun(workspace, scripts);
    const sqlite = await startViewer({ workspace });
    try {
      const header = (d: any) => ({
        status: d.status,
        goal: d.goal,
        steps: d.steps,
        plan: d.plan.map((p: { id: string; status: string; description: string }) => [p.id, p.status, p.description]),
        finishSummary: d.finishSummary,
        usage: d.usage,
        processes: d.processes.map((p: { name: string; status: string }) => [p.name, p.status]),
        events: d.events,
        lastSeq: d.lastSeq,
        forked: d.forked,
      });
      const [a, b] = await Promise.all([get(sqlite, tp(local)), get(viewer, tp(ran))]);
      expect(header(b.body)).toEqual(header(a.body));
      const stepsOf = (v: any) =>
        v.steps.map((s: any) => ({
          step: s.step,
          outcome: s.outcome,
          spend: s.spend,
          model: s.model?.content,
          actions: s.actions.map((x: any) => [x.tool, x.args, x.feedback?.status]),
          after: s.after.map((i: any) => i.type),
          files: s.filesChanged,
        }));
      const [sa, sb] = await Promise.all([get(sqlite, `${tp(local)}/steps`), get(viewer, `${tp(ran)}/steps`)]);
      expect(stepsOf(sb.body)).toEqual(stepsOf(sa.body));
      const typesOf = (p: any) => p.events.map((e: { seq: number; type: string }) => `${e.seq}:${e.type}`);
      const [ea, eb] = await Promise.all([get(sqlite, `${tp(local)}/events?limit=1000`), get(viewer, `${tp(ran)}/events?limit=1000`)]);
      expect(typesOf(eb.body)).toEqual(typesOf(ea.body));
    } finally {
      await sqlite.close();
    }
  }, 120_000);

  it("follows a run a real worker takes from the queue: held by that worker while it runs, then finished and released", async () => {
    const scratch = tempWorkspace();
    const traj = path.join(scratch, "slow.json");
    fs.writeFileSync(
      traj,
      JSON.stringify({
        decide: [
          { content: "first", tool_calls: [{ name: "run_command", args: { command: "echo first" } }] },
          // Long enough to be seen held; the test waits on what the viewer says, not on this time.
          { content: "waiting", tool_calls: [{ name: "run_command", args: { command: "sleep 4" } }] },
          { content: "done", tool_calls: [{ name: "finish", args: { summary: "worked" } }] },
        ],
      }),
    );
    const ws = tempWorkspace(undefined, { "README.md": "worked on by a worker\n" });
    // A database of its own: the worker would take this file's other queued runs too.
    const own = await createTestDatabase("webworker");
    await handleSubmit("Work for a worker", {
      state: own.url,
      workspace: ws,
      model: `scripted:${traj}`,
      retrieval: "lexical",
      sandbox: "none",
      thread: "w-run",
      json: true,
    });
    const watch = await startViewer({ workspace: process.cwd(), state: own.url });
    const w = spawnWorker(own.url, path.join(scratch, "w"));
    try {
      const row = (await until(async () => {
        const t = ((await get(watch, "/api/threads")).body.threads as any[]).find((x) => x.thread === "w-run");
        return t?.status === "running" && t.queue?.worker && t.steps >= 1 ? t : null;
      })) as { queue: { state: string; worker: string } };
      expect(row.queue.state).toBe("held");
      expect(row.queue.worker).toMatch(new RegExp(`^[^:]+:${w.child.pid}:[0-9a-f]{6}$`));
      const held = (await get(watch, tp("w-run"))).body;
      expect(held).toMatchObject({ status: "running", goal: "Work for a worker", queue: { state: "held", worker: row.queue.worker } });
      expect(await exitOf(w), w.err()).toEqual({ code: 0, signal: null });
      const done = ((await get(watch, "/api/threads")).body.threads as any[]).find((x) => x.thread === "w-run");
      expect(done).toMatchObject({ status: "finished", origin: "worker", steps: 3, queue: { state: "done", worker: null } });
      const steps = (await get(watch, `${tp("w-run")}/steps`)).body;
      expect(steps.steps.map((s: any) => s.actions.map((a: any) => a.tool))).toEqual([["run_command"], ["run_command"], ["finish"]]);
      expect(steps.steps[0].actions[0].feedback.stdout.text).toContain("first");
    } finally {
      if (w.child.exitCode === null) w.child.kill("SIGKILL");
      await watch.close();
      await own.drop();
    }
  }, 240_000);

  it("answers an unknown thread with a 404 naming the database without its password", async () => {
    const { status, body } = await get(viewer, tp("no-such-run"));
    expect(status).toBe(404);
    expect(body.error).toMatch(/^unknown thread "no-such-run" in postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/ll_web_\w+$/);
  });

  it("refuses a database without ledgerloop tables in one line, and creates none", async () => {
    const empty = await createTestDatabase("webempty");
    try {
      const err = await startViewer({ workspace: process.cwd(), state: empty.url }).then(
        () => null,
        (e: Error) => e,
      );
      expect(err?.message).toMatch(
        /^no ledgerloop state in postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/ll_webempty_\w+ yet; start a run with `ledgerloop run --state …`$/,
      );
      const c = new pg.Client({ connectionString: empty.url });
      await c.connect();
      try {
        expect((await c.query("SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'")).rows[0].n).toBe(0);
      } finally {
        await c.end();
      }
    } finally {
      await empty.drop();
    }
  });

  it("a malformed URL or a refused password is one line before the viewer listens, the password never shown", async () => {
    const wrong = new URL(db.url);
    wrong.password = "definitely-wrong";
    const cases: Array<[string, RegExp]> = [
      ["mysql://u:pw@127.0.0.1/db", /^invalid state URL mysql:\/\/u:\*\*\*@127\.0\.0\.1\/db: the scheme must be postgres:\/\/ or postgresql:\/\/$/],
      [wrong.toString(), /^PostgreSQL at 127\.0\.0\.1:\d+ refused the login of user "postgres"/],
    ];
    for (const [url, msg] of cases) {
      const err = await handleWeb({ state: url }).then(
        (v) => v.close().then(() => null),
        (e: Error) => e,
      );
      expect(err?.message).toMatch(msg);
      expect(err?.message.split("\n")).toHaveLength(1);
      expect(err?.message).not.toMatch(/definitely-wrong|:pw@/);
    }
  });

  it("answers while the database is gone with a one-line 503 naming it, and recovers when it is back", async () => {
    const down = await createTestDatabase("webdown");
    const admin = new pg.Client({ connectionString: TEST_PG_URL });
    await admin.connect();
    let v: Viewer | undefined;
    try {
      await (await openPgState(down.url)).close();
      v = await startViewer({ workspace: process.cwd(), state: down.url, onError: () => {} });
      expect((await get(v, "/api/threads")).status).toBe(200);
      // The database refuses new sessions and its open ones are ended: what a restart or failover looks like.
      await admin.query(`ALTER DATABASE "${down.name}" ALLOW_CONNECTIONS false`);
      await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", [down.name]);
      for (const p of ["/api/threads", tp("any")]) {
        const r = await get(v, p);
        expect([p, r.status]).toEqual([p, 503]);
        expect(r.body.error).toMatch(/PostgreSQL/);
        expect(r.body.error).toContain(`127.0.0.1`);
        expect(r.body.error.split("\n")).toHaveLength(1);
        expect(r.body.error).not.toContain(new URL(down.url).password);
      }
      await admin.query(`ALTER DATABASE "${down.name}" ALLOW_CONNECTIONS true`);
      expect((await get(v, "/api/threads")).body).toMatchObject({ backend: "postgres", threads: [] });
    } finally {
      await admin.query(`ALTER DATABASE "${down.name}" ALLOW_CONNECTIONS true`).catch(() => {});
      await admin.end();
      await v?.close();
      await down.drop();
    }
  });

  it("ledgerloop web takes the state from LEDGERLOOP_STATE_URL and prints the URL, not the password", async () => {
    const lines: string[] = [];
    const orig = process.stderr.write.bind(process.stderr);
    const before = process.env.LEDGERLOOP_STATE_URL;
    process.env.LEDGERLOOP_STATE_URL = db.url;
    process.stderr.write = ((chunk: string | Uint8Array) => {
      lines.push(String(chunk));
      return true;
    }) as typeof process.stderr.write;
    let v: Viewer | undefined;
    try {
      v = await handleWeb({});
    } finally {
      process.stderr.write = orig;
      if (before === undefined) delete process.env.LEDGERLOOP_STATE_URL;
      else process.env.LEDGERLOOP_STATE_URL = before;
    }
    try {
      const out = lines.join("");
      expect(out).toContain(v.url);
      expect(out).toMatch(/read-only view of postgres:\/\/postgres:\*\*\*@/);
      expect(out).not.toContain(new URL(db.url).password);
      expect((await get(v, "/api/threads")).body.threads).toHaveLength(3);
    } finally {
      await v.close();
    }
  });

  describe.skipIf(!hasChromium)(`in Chromium (${CHROMIUM})`, () => {
    let browser: Browser;
    beforeAll(async () => {
      const { chromium } = await import("playwright-core");
      browser = await chromium.launch({
        executablePath: CHROMIUM,
        args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"],
      });
    }, 60_000);
    afterAll(async () => {
      await browser?.close();
    });

    it("lists the runs with the worker holding each, and opens the finished run's steps", async () => {
      const page = await browser.newPage({ viewport: { width: 1480, height: 940 } });
      const problems: string[] = [];
      page.on("pageerror", (e) => problems.push(`pageerror: ${e.message}`));
      page.on("console", (m) => {
        if (m.type() === "error") problems.push(`console: ${m.text()}`);
      });
      try {
        await page.goto(viewer.url);
        const item = (t: string) => page.locator(`.thread-item[data-thread="${t}"]`);
        await item(HELD).waitFor();
        expect(await item(HELD).locator(".pill").textContent()).toBe("running");
        expect(await item(HELD).locator(".thread-worker").textContent()).toBe("held by worker-a");
        expect(await item(QUEUED).locator(".pill").textContent()).toBe("queued");
        expect(await item(QUEUED).locator(".thread-worker").textContent()).toBe("waiting for a worker");
        expect(await item(ran).locator(".thread-worker").count()).toBe(0);
        expect(await page.locator("#workspace").textContent()).toMatch(/^postgres:\/\/postgres:\*\*\*@/);

        await item(ran).click();
        await page.locator("#step-4").waitFor();
        expect(await page.locator(".step").count()).toBe(4);
        expect(await page.locator("#thread-header .pill").first().textContent()).toBe("finished");
        expect(await page.locator("#thread-header .facts").innerText()).toMatch(/processes\s+api stopped/i);

        await item(HELD).click();
        await page.locator("#thread-header .facts", { hasText: "worker" }).waitFor();
        expect(await page.locator("#thread-header .facts").innerText()).toMatch(/worker\s+held by worker-a/i);
        expect(problems).toEqual([]);
      } finally {
        await page.close();
      }
    });
  });
});
