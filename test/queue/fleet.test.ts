import path from "node:path";
import { afterAll, expect, it } from "vitest";
import { cliAsync, jsonLines } from "../helpers/cli.js";
import { describePg, pgQuery, useTestDatabase } from "../helpers/postgres.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";
import { PG_SCHEMA_VERSION } from "../../src/ledger/pg-db.js";
import type { WorkerRow } from "../../src/queue/fleet.js";
import { exitOf, spawnWorker, until, writeTrajectory } from "./queue-fixtures.js";

afterAll(() => cleanupTemp());

describePg("the fleet: ledgerloop workers, threads and doctor see live and dead workers", () => {
  const db = useTestDatabase("fleet");
  const workers = async () => {
    const r = await cliAsync(["workers", "--state", db.url, "--json"]);
    expect(r.code, r.stderr).toBe(0);
    return jsonLines<WorkerRow>(r.stdout);
  };
  const queueCheck = async () => {
    const r = await cliAsync(["doctor", "--state", db.url, "--json"]);
    return (JSON.parse(r.stdout) as { checks: Array<{ name: string; ok: boolean; detail: string }> }).checks.find((c) => c.name === "queue")!;
  };
  const actions = async (thread: string) =>
    Number((await pgQuery<{ n: string }>(db.url, "SELECT COUNT(*) AS n FROM ll_events WHERE thread_id = $1 AND type = 'agent_action'", [thread]))[0]!.n);
  const submit = (thread: string, model: string, extra: string[] = []) =>
    cliAsync([
      "submit",
      "steps",
      "--workspace",
      tempWorkspace(undefined, { "README.md": "x\n" }),
      "--state",
      db.url,
      "--model",
      model,
      "--retrieval",
      "lexical",
      "--thread",
      thread,
      "--json",
      ...extra,
    ]);

  it("a killed worker shows dead with its run marked lease-expired; doctor fails the dead fleet, then counts the takeover apart from failures", async () => {
    const scratch = tempWorkspace();
    const s = await submit("long", `scripted:${writeTrajectory(scratch, 16)}`);
    expect(s.code, s.stderr).toBe(0);

    const w1 = spawnWorker(db.url, path.join(scratch, "w1"));
    await until(async () => (await actions("long")) >= 2);
    const [live] = await workers();
    expect(live).toMatchObject({
      status: "live",
      pid: w1.child.pid,
      slots: 1,
      version: "0.1.0",
      schemaVersion: PG_SCHEMA_VERSION,
      runs: [{ thread: "long", leaseExpired: false }],
    });
    const text = await cliAsync(["workers", "--state", db.url]);
    expect(text.stdout).toMatch(
      new RegExp(
        `^live +${live!.id.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}  host \\S+  pid ${w1.child.pid}  runs 1/1 \\(long\\)  heartbeat \\d+s ago  ledgerloop 0\\.1\\.0 \\(schema ${PG_SCHEMA_VERSION}\\)\\n$`,
      ),
    );

    w1.child.kill("SIGKILL");
    await exitOf(w1);
    // Its run stays held (no other worker to reap it) until its lease expires; then threads says so.
    const threads = await until(async () => {
      const r = await cliAsync(["threads", "--state", db.url]);
      return /lease expired/.test(r.stdout) && r.stdout;
    });
    expect(threads).toMatch(new RegExp(`\\[held by ${live!.id} — lease expired \\d+s ago\\]`));
    const dead = await until(async () => (await workers()).find((w) => w.status === "dead"));
    expect(dead).toMatchObject({ id: live!.id, runs: [{ thread: "long", leaseExpired: true }] });
    const idle = await queueCheck();
    expect(idle.ok).toBe(false);
    expect(idle.detail).toMatch(/workers: 0 live, 1 dead in the last hour; 1 run\(s\) held under an expired lease; no live worker will take this work/);

    const w2 = spawnWorker(db.url, path.join(scratch, "w2"));
    expect(await exitOf(w2), w2.err()).toEqual({ code: 0, signal: null });
    expect(jsonLines(w2.out())).toEqual([expect.objectContaining({ thread: "long", outcome: "ran", status: "finished", resumed: true })]);
    const after = await queueCheck();
    expect(after.ok, after.detail).toBe(true);
    expect(after.detail).toMatch(/: 0 queued, 0 active, 0 failed, 1 taken over .*; workers: 0 live, 1 dead in the last hour$/);
    // The one that exited on its own is listed as stopped, not dead.
    expect((await workers()).map((w) => [w.pid, w.status])).toEqual([
      [w2.child.pid, "stopped"],
      [w1.child.pid, "dead"],
    ]);
  });

  it("a running worker that sees a newer schema finishes its run and takes no other; a new one refuses to start", async () => {
    const scratch = tempWorkspace();
    const model = `scripted:${writeTrajectory(scratch, 12)}`;
    expect((await submit("first", model, ["--priority", "9"])).code).toBe(0);
    expect((await submit("second", model)).code).toBe(0);
    const w = spawnWorker(db.url, path.join(scratch, "w"), ["--concurrency", "1"]);
    try {
      await until(async () => (await actions("first")) >= 2);
      // A newer ledgerloop migrated the database meanwhile.
      await pgQuery(db.url, "INSERT INTO ll_schema_version (version) VALUES ($1)", [PG_SCHEMA_VERSION + 1]);
      const end = await exitOf(w);
      expect(end.code, w.err()).not.toBe(0);
      expect(w.err()).toMatch(
        new RegExp(
          `retired: the state database was migrated to schema version ${PG_SCHEMA_VERSION + 1}, newer than this ledgerloop 0\\.1\\.0 understands \\(${PG_SCHEMA_VERSION}\\)`,
        ),
      );
      expect(jsonLines(w.out())).toEqual([expect.objectContaining({ thread: "first", outcome: "ran", status: "finished" })]);
      const lease = await pgQuery<{ thread_id: string; state: string }>(
        db.url,
        "SELECT thread_id, state FROM ll_run_leases WHERE thread_id IN ('first', 'second') ORDER BY thread_id",
      );
      expect(lease).toEqual([
        { thread_id: "first", state: "done" },
        { thread_id: "second", state: "queued" },
      ]);
      const row = (await workers()).find((x) => x.pid === w.child.pid);
      expect(row).toMatchObject({ status: "stopped", note: expect.stringMatching(/newer than this ledgerloop/) });

      const refused = spawnWorker(db.url, path.join(scratch, "w2"));
      const r = await exitOf(refused);
      expect(r.code).not.toBe(0);
      expect(refused.err()).toMatch(
        new RegExp(`has schema version ${PG_SCHEMA_VERSION + 1}, newer than this ledgerloop understands \\(${PG_SCHEMA_VERSION}\\); upgrade ledgerloop`),
      );
      expect((await workers()).some((x) => x.pid === refused.child.pid)).toBe(false);
      expect((await pgQuery<{ state: string }>(db.url, "SELECT state FROM ll_run_leases WHERE thread_id = 'second'"))[0]!.state).toBe("queued");
    } finally {
      w.child.kill("SIGKILL");
      await pgQuery(db.url, "DELETE FROM ll_schema_version WHERE version > $1", [PG_SCHEMA_VERSION]);
    }
  });
});
