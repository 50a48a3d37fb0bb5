import net from "node:net";
import { afterAll, expect, it } from "vitest";
import pg from "pg";
import { DEMO_TASK } from "../../src/cli/demo.js";
import { PG_SCHEMA_VERSION } from "../../src/ledger/pg-db.js";
import { LESSONS_NS } from "../../src/memory/lessons.js";
import { nsKey } from "../../src/memory/store-common.js";
import { cliAsync, jsonLines } from "../helpers/cli.js";
import { DEMO_TRAJECTORY, DEMO_WORKSPACE, cleanupTemp, tempWorkspace } from "../helpers/workspace.js";
import { describePg, useTestDatabase } from "../helpers/postgres.js";

afterAll(() => cleanupTemp());

const doctorState = (stdout: string) =>
  (JSON.parse(stdout) as { checks: Array<{ name: string; ok: boolean; detail: string }> }).checks.find((c) => c.name === "state");

describePg("ledgerloop with --state postgres://…", () => {
  const db = useTestDatabase("cli");

  it("doctor --state checks the database read-only, run --state puts the demo run in it, and the password is never printed", async () => {
    const password = new URL(db.url).password;
    const before = await cliAsync(["doctor", "--state", db.url, "--json"]);
    expect(doctorState(before.stdout)).toMatchObject({ ok: true });
    expect(doctorState(before.stdout)!.detail).toMatch(
      /^PostgreSQL 1\d[.\d]* at postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/ll_cli_\w+: no ledgerloop tables yet/,
    );

    const ws = tempWorkspace(DEMO_WORKSPACE);
    const r = await cliAsync(["run", DEMO_TASK, "-w", ws, "--model", `scripted:${DEMO_TRAJECTORY}`, "--thread", "T", "--state", db.url, "--json", "-q"], {
      timeoutMs: 170_000,
    });
    expect(r.stderr).not.toContain(password);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout.trim().split("\n").at(-1)!)).toMatchObject({ thread: "T", status: "finished" });
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    const n = (await c.query("SELECT count(*)::int AS n FROM ll_events WHERE thread_id = 'T'")).rows[0].n as number;
    await c.end();
    expect(n).toBeGreaterThan(20);

    const after = await cliAsync(["doctor", "--state", db.url, "--json"]);
    expect(doctorState(after.stdout)!.detail).toMatch(new RegExp(`schema version ${PG_SCHEMA_VERSION} \\(current\\), 1 run$`));
    expect(after.stdout).not.toContain(password);

    // threads, ledger and report read the run back from PostgreSQL (the report's file changes from
    // the workspace's own revision store).
    const [threads, ledger, report] = await Promise.all([
      cliAsync(["threads", "--state", db.url, "--json"]),
      cliAsync(["ledger", "T", "--state", db.url, "--json"]),
      cliAsync(["report", "T", "-w", ws, "--json"], { env: { LEDGERLOOP_STATE_URL: db.url } }),
    ]);
    expect(threads.code, threads.stderr).toBe(0);
    expect(jsonLines(threads.stdout)).toEqual([
      expect.objectContaining({ thread: "T", status: "finished", origin: "cli", events: n, checkpointsIn: "state-db" }),
    ]);
    expect(ledger.code, ledger.stderr).toBe(0);
    const events = jsonLines<{ type: string; seq: number; payload: { status?: string } }>(ledger.stdout);
    expect(events.map((e) => e.seq)).toEqual(Array.from({ length: n }, (_, i) => i + 1));
    expect(events.at(-1)).toMatchObject({ type: "run_status", payload: { status: "finished" } });
    expect(report.code, report.stderr).toBe(0);
    const rep = JSON.parse(report.stdout) as { status: string; files: Array<{ path: string }>; lastTests: { failed: number } | null };
    expect(rep.status).toBe("finished");
    expect(rep.files.map((f) => f.path)).toContain("dashboard/aggregate.js");
    expect(await cliAsync(["ledger", "nope", "--state", db.url])).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/unknown thread "nope" in postgres:\/\/postgres:\*\*\*@/),
    });

    // context and memory read PostgreSQL too: the newest prompt on the run's branch, and its lessons.
    const [context, memory] = await Promise.all([
      cliAsync(["context", "T", "-w", ws, "--json"], { env: { LEDGERLOOP_STATE_URL: db.url } }),
      cliAsync(["memory", "list", "--state", db.url, "--json"]),
    ]);
    expect(context.code, context.stderr).toBe(0);
    const prompt = JSON.parse(context.stdout) as { eventId: string; step: number; messages: Array<{ role: string }> };
    const built = events.filter((e) => e.type === "context_built") as unknown as Array<{ id: string; payload: { step: number } }>;
    expect(prompt).toMatchObject({ eventId: built.at(-1)!.id, step: built.at(-1)!.payload.step });
    expect(prompt.messages.map((m) => m.role)).toContain("system");
    expect(memory.code, memory.stderr).toBe(0);
    const c2 = new pg.Client({ connectionString: db.url });
    await c2.connect();
    const stored = (await c2.query("SELECT key FROM ll_store WHERE namespace = $1 ORDER BY key", [nsKey(LESSONS_NS)])).rows.map((r) => r.key as string);
    await c2.end();
    expect(stored.length).toBeGreaterThan(0);
    expect(
      jsonLines<{ key: string }>(memory.stdout)
        .map((l) => l.key)
        .sort(),
    ).toEqual(stored);
    // The commands about this machine's files say so instead of showing the local file as the state.
    const stats = await cliAsync(["stats", "-w", ws], { env: { LEDGERLOOP_STATE_URL: db.url } });
    expect(stats.code).toBe(2);
    expect(stats.stderr).toMatch(
      /reading them from PostgreSQL \(--state \/ LEDGERLOOP_STATE_URL\) is not implemented yet \(.*context, memory.*take --state; logs and stats are about this machine's files\)/,
    );
  });

  it("a refused password or an unreachable server is one line before anything runs", async () => {
    const u = new URL(db.url);
    u.password = "definitely-wrong";
    const ws = tempWorkspace(DEMO_WORKSPACE);
    const r = await cliAsync(["run", DEMO_TASK, "-w", ws, "--model", `scripted:${DEMO_TRAJECTORY}`, "--state", u.toString(), "-q"]);
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toMatch(/^ledgerloop: PostgreSQL at 127\.0\.0\.1:\d+ refused the login of user "postgres"/);
    expect(r.stderr).not.toContain("definitely-wrong");

    const port = await new Promise<number>((resolve) => {
      const s = net.createServer().listen(0, "127.0.0.1", () => {
        const p = (s.address() as net.AddressInfo).port;
        s.close(() => resolve(p));
      });
    });
    const doc = await cliAsync(["doctor", "--json"], { env: { LEDGERLOOP_STATE_URL: `postgres://u:pw@127.0.0.1:${port}/db` } });
    expect(doc.code).toBe(1);
    expect(doctorState(doc.stdout)).toMatchObject({ ok: false });
    expect(doctorState(doc.stdout)!.detail).toMatch(/cannot reach PostgreSQL at 127\.0\.0\.1:\d+ \(ECONNREFUSED\)/);
  });
});
