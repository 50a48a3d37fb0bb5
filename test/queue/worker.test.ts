import fs from "node:fs";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { inflateRawSync } from "node:zlib";
import { afterAll, expect, it } from "vitest";
import pg from "pg";
import { cliAsync, jsonLines } from "../helpers/cli.js";
import { describePg, pgQuery, useTestDatabase } from "../helpers/postgres.js";
import { cleanupTemp, readTree, tempWorkspace } from "../helpers/workspace.js";
import { QUEUE_SCHEMA, RUN_QUEUE, startQueue } from "../../src/queue/run-queue.js";
import { exitOf, spawnWorker, until, writeTrajectory } from "./queue-fixtures.js";

afterAll(() => cleanupTemp());

function gitRepo(files: Record<string, string>): string {
  const dir = tempWorkspace(undefined, files);
  const g = (...a: string[]) => execFileSync("git", ["-c", "user.email=t@e", "-c", "user.name=t", ...a], { cwd: dir });
  g("init", "-q");
  g("add", "-A");
  g("commit", "-qm", "start");
  return dir;
}

describePg("ledgerloop submit / worker", () => {
  const db = useTestDatabase("queue");

  it("a submitted run from a repository is cloned, driven to its end and listed with its worker; bad submissions are one line each", async () => {
    const repo = gitRepo({ "README.md": "hello\n" });
    const scratch = tempWorkspace();
    const traj = writeTrajectory(scratch, 4);
    const sub = await cliAsync([
      "submit",
      "four steps",
      "--repo",
      repo,
      "--state",
      db.url,
      "--model",
      `scripted:${traj}`,
      "--retrieval",
      "lexical",
      "--thread",
      "r1",
      "--json",
    ]);
    expect(sub.code, sub.stderr).toBe(0);
    expect(JSON.parse(sub.stdout)).toMatchObject({ thread: "r1", jobId: expect.any(String) });

    // Bad submissions: nothing queued, one line each. (retired-1: a run deleted whole, its id retired.)
    await pgQuery(db.url, "INSERT INTO ll_deleted_runs (thread_id) VALUES ('retired-1')");
    const bad = await Promise.all([
      cliAsync(["submit", "x", "--repo", repo, "--state", db.url, "--model", `scripted:${traj}`, "--thread", "r1"]),
      cliAsync(["submit", "x", "--state", db.url, "--model", `scripted:${traj}`]),
      cliAsync(["submit", "x", "--repo", repo, "--state", db.url, "--model", `scripted:${traj}`, "--thread", "../etc"]),
      cliAsync(["submit", "x", "--repo", repo, "--model", `scripted:${traj}`]),
      cliAsync(["submit", "x", "--repo", "https://bob:hunter2pass@git.example.com/o/r.git", "--state", db.url, "--model", `scripted:${traj}`]),
      cliAsync(["submit", "x", "--repo", repo, "--state", db.url, "--model", `scripted:${traj}`, "--thread", "retired-1"]),
    ]);
    expect(bad.map((b) => b.stderr.trim())).toEqual([
      'ledgerloop: thread "r1" already exists in the state database; pick another --thread',
      "ledgerloop: give exactly one of --repo <git url or path> and --workspace <dir every worker can reach>",
      `ledgerloop: invalid thread id "../etc": letters, digits, '.', '_' and '-' only, at most 128`,
      "ledgerloop: submit needs the PostgreSQL state the workers use: --state postgres://… or LEDGERLOOP_STATE_URL",
      "ledgerloop: the repository URL carries a password or token (https://bob:[REDACTED]:url-password@git.example.com/o/r.git), which would be stored in the shared database: give the workers the credential instead (a git credential helper or ~/.git-credentials on each worker machine, or GIT_ASKPASS) and submit the URL without it",
      'ledgerloop: thread "retired-1" was deleted (`ledgerloop delete`) and its id is not used again; pick another --thread',
    ]);
    expect(bad.map((b) => b.stderr).join("\n")).not.toContain("hunter2pass");
    expect(bad.every((b) => b.code !== 0)).toBe(true);

    const queued = await cliAsync(["threads", "--state", db.url, "--json"]);
    expect(jsonLines(queued.stdout)).toEqual([
      expect.objectContaining({ thread: "r1", status: "queued", events: 0, queue: expect.objectContaining({ state: "queued", worker: null }) }),
    ]);

    const w = spawnWorker(db.url, path.join(scratch, "w"), ["--keep-dirs"]);
    expect(await exitOf(w), w.err()).toEqual({ code: 0, signal: null });
    expect(jsonLines(w.out())).toEqual([{ thread: "r1", outcome: "ran", status: "finished", steps: 5, resumed: false }]);
    const threads = jsonLines<{ thread: string; status: string; origin: string; queue: { state: string; note: string } }>(
      (await cliAsync(["threads", "--state", db.url, "--json"])).stdout,
    );
    expect(threads).toEqual([
      expect.objectContaining({ thread: "r1", status: "finished", origin: "worker", queue: expect.objectContaining({ state: "done", worker: null }) }),
    ]);
    expect(threads[0]!.queue.note).toMatch(/^finished after 5 step\(s\) on /);
    // The clone is the worker's own: the repository itself was never written.
    expect(execFileSync("git", ["status", "--porcelain"], { cwd: repo, encoding: "utf8" })).toBe("");
    expect(fs.readdirSync(repo).sort()).toEqual([".git", "README.md"]);
    const clone = path.join(scratch, "w", "r1");
    expect(fs.readFileSync(path.join(clone, "counter.txt"), "utf8")).toBe("a1\na3\n");
    expect(execFileSync("git", ["status", "--porcelain"], { cwd: clone, encoding: "utf8" })).toContain("?? counter.txt");
  });

  it("a job with an invalid payload ends failed at once; a run whose repository is gone is released to the queue twice, then ends failed with the reason", async () => {
    const scratch = tempWorkspace();
    const traj = writeTrajectory(scratch, 2);
    const token = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789";
    const sub = await cliAsync([
      "submit",
      `gone; call it with OPENAI_API_KEY=${token}`,
      "--repo",
      path.join(scratch, "no-such-repo"),
      "--no-check",
      "--state",
      db.url,
      "--model",
      `scripted:${traj}`,
      "--thread",
      "gone",
      "--json",
    ]);
    expect(sub.code, sub.stderr).toBe(0);
    const boss = await startQueue(db.url);
    const badId = await boss.send(RUN_QUEUE, { thread: 42, extra: true });
    await boss.stop({ graceful: false, wait: true });

    // 1 s instead of the default 5 (the job rows below show each wait): the test does not wait out 15 s.
    const w = spawnWorker(db.url, path.join(scratch, "w"), ["--retry-delay-seconds", "1"]);
    expect(await exitOf(w), w.err()).toEqual({ code: 0, signal: null });
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    try {
      const bad = (await c.query(`SELECT state::text, retry_count, output FROM ${QUEUE_SCHEMA}.job WHERE id = $1`, [badId])).rows[0];
      expect(bad).toMatchObject({ state: "failed", retry_count: 0 });
      expect(JSON.stringify(bad.output)).toContain("invalid run job");
      // The task is stored as the ledger stores a goal: redacted.
      const task = (await c.query("SELECT task FROM ll_submissions WHERE thread_id = 'gone'")).rows[0].task as string;
      expect(task).toMatch(/^gone; call it with OPENAI_API_KEY=\[REDACTED/);
      expect(task).not.toContain(token);
      const lease = (await c.query("SELECT state, note, releases FROM ll_run_leases WHERE thread_id = 'gone'")).rows[0];
      expect(lease.state).toBe("failed");
      expect(lease.releases).toBe(2);
      expect(lease.note).toMatch(/could not materialise the run \(attempt 3 of 3\): cannot materialise run gone from .*no-such-repo/);
      // Each attempt was a job of its own (released, not retried by the queue): two handed back, the last failed.
      // Attempt n's job waits n × --retry-delay-seconds before a worker may take it.
      const jobs = (
        await c.query(
          `SELECT state::text, retry_count, EXTRACT(EPOCH FROM start_after - created_on)::float8 AS wait FROM ${QUEUE_SCHEMA}.job WHERE data->>'thread' = 'gone' ORDER BY created_on`,
        )
      ).rows;
      expect(jobs).toEqual([
        { state: "completed", retry_count: 0, wait: 0 },
        { state: "completed", retry_count: 0, wait: 1 },
        { state: "failed", retry_count: 0, wait: 2 },
      ]);
      expect(
        jsonLines<{ thread: string; outcome: string; detail?: string }>(w.out())
          .filter((o) => o.thread === "gone")
          .map((o) => o.outcome),
      ).toEqual(["handed_over", "handed_over", "failed"]);
    } finally {
      await c.end();
    }
  });

  it("a run released because its repository could not be reached is taken again once it can be, and runs to its end", async () => {
    const scratch = tempWorkspace();
    const traj = writeTrajectory(scratch, 2);
    const later = path.join(scratch, "repo-later");
    const sub = await cliAsync([
      "submit",
      "later",
      "--repo",
      later,
      "--no-check",
      "--state",
      db.url,
      "--model",
      `scripted:${traj}`,
      "--retrieval",
      "lexical",
      "--thread",
      "later",
      "--json",
    ]);
    expect(sub.code, sub.stderr).toBe(0);
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    try {
      const w = spawnWorker(db.url, path.join(scratch, "w"));
      // The first attempt fails and releases the run (retried 5 s later); then the repository appears.
      await until(async () => (await c.query("SELECT releases FROM ll_run_leases WHERE thread_id = 'later'")).rows[0].releases === 1);
      fs.cpSync(gitRepo({ "README.md": "later\n" }), later, { recursive: true });
      expect(await exitOf(w), w.err()).toEqual({ code: 0, signal: null });
      expect(jsonLines<{ outcome: string; status?: string }>(w.out()).map((o) => [o.outcome, o.status])).toEqual([
        ["handed_over", undefined],
        ["ran", "finished"],
      ]);
      // The run ended here: its clone is removed (no --keep-dirs).
      expect(fs.existsSync(path.join(scratch, "w", "later"))).toBe(false);
      expect(fs.readdirSync(path.join(scratch, "w"))).toEqual([]);
      // Materialised at last: the earlier release no longer counts.
      expect((await c.query("SELECT state, releases FROM ll_run_leases WHERE thread_id = 'later'")).rows[0]).toEqual({ state: "done", releases: 0 });
    } finally {
      await c.end();
    }
  });

  it("a worker that is SIGKILLed mid-run loses the run to another worker, which finishes it without running any command twice", async () => {
    const scratch = tempWorkspace();
    const traj = writeTrajectory(scratch, 24);
    const ws = tempWorkspace(undefined, { "README.md": "shared\n" });
    const sub = await cliAsync([
      "submit",
      "long",
      "--workspace",
      ws,
      "--state",
      db.url,
      "--model",
      `scripted:${traj}`,
      "--retrieval",
      "lexical",
      "--thread",
      "k1",
      "--json",
    ]);
    expect(sub.code, sub.stderr).toBe(0);
    const a = spawnWorker(db.url, path.join(scratch, "a"));
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    try {
      await until(async () => Number((await c.query("SELECT COUNT(*) AS n FROM ll_events WHERE thread_id = 'k1' AND type = 'agent_action'")).rows[0].n) >= 6);
      a.child.kill("SIGKILL");
      await exitOf(a);
      const b = spawnWorker(db.url, path.join(scratch, "b"), ["--keep-dirs"]);
      expect(await exitOf(b), b.err()).toEqual({ code: 0, signal: null });
      expect(jsonLines(b.out())).toEqual([expect.objectContaining({ thread: "k1", outcome: "ran", status: "finished", resumed: true })]);
      const lease = (await c.query("SELECT state, takeovers FROM ll_run_leases WHERE thread_id = 'k1'")).rows[0];
      expect(lease).toEqual({ state: "done", takeovers: 1 });
      const counter = fs.readFileSync(path.join(ws, "counter.txt"), "utf8").trim().split("\n");
      expect(new Set(counter).size).toBe(counter.length);
      const feedback = (
        await c.query(
          "SELECT payload::jsonb->>'status' AS status, payload::jsonb->>'tool' AS tool FROM ll_events WHERE thread_id = 'k1' AND type = 'environment_feedback' ORDER BY seq",
        )
      ).rows as Array<{ status: string; tool: string }>;
      const interrupted = feedback.filter((f) => f.status === "interrupted").length;
      // Every command either ran once or was reported interrupted (not run again).
      expect(counter.length + feedback.filter((f) => f.status === "interrupted" && f.tool === "run_command").length).toBeGreaterThanOrEqual(12);
      expect(interrupted).toBeLessThanOrEqual(1);
      const seqs = (await c.query("SELECT seq FROM ll_events WHERE thread_id = 'k1' ORDER BY seq")).rows.map((r) => r.seq as number);
      expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
    } finally {
      await c.end();
    }
  });

  it("SIGTERM lets a running command finish before the run goes back to the queue; one still running after the grace period is cut off and reported interrupted", async () => {
    const scratch = tempWorkspace();
    // Step 1 announces itself (a file), then takes a while; step 2 is quick.
    const trajectory = (slow: string) => ({
      plan: [{ content: "plan", tool_calls: [{ name: "update_plan", args: { subtasks: [{ id: "work", description: "two steps", status: "in_progress" }] } }] }],
      decide: [
        { content: "slow", tool_calls: [{ name: "run_command", args: { command: `touch running.flag && ${slow} >> counter.txt` } }] },
        { content: "quick", tool_calls: [{ name: "run_command", args: { command: "echo two >> counter.txt" } }] },
        { content: "done", tool_calls: [{ name: "finish", args: { summary: "two steps" } }] },
      ],
    });
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    const stopMidCommand = async (thread: string, slow: string, grace: string) => {
      const traj = path.join(scratch, `${thread}.json`);
      fs.writeFileSync(traj, JSON.stringify(trajectory(slow)));
      const ws = tempWorkspace(undefined, { "README.md": "x\n" });
      const sub = await cliAsync([
        "submit",
        "two",
        "--workspace",
        ws,
        "--state",
        db.url,
        "--model",
        `scripted:${traj}`,
        "--retrieval",
        "lexical",
        "--thread",
        thread,
        "--json",
      ]);
      expect(sub.code, sub.stderr).toBe(0);
      const a = spawnWorker(db.url, path.join(scratch, `${thread}-a`), ["--stop-grace-seconds", grace]);
      // Stopped while the slow command runs: the flag is written by the command itself.
      await until(async () => fs.existsSync(path.join(ws, "running.flag")), 50);
      a.child.kill("SIGTERM");
      expect(await exitOf(a), a.err()).toEqual({ code: 0, signal: null });
      expect(jsonLines(a.out())).toEqual([expect.objectContaining({ thread, outcome: "handed_over" })]);
      const b = spawnWorker(db.url, path.join(scratch, `${thread}-b`));
      expect(await exitOf(b), b.err()).toEqual({ code: 0, signal: null });
      expect(jsonLines(b.out())).toEqual([expect.objectContaining({ thread, outcome: "ran", status: "finished", resumed: true })]);
      const feedback = (
        await c.query(
          "SELECT payload::jsonb AS p FROM ll_events WHERE thread_id = $1 AND type = 'environment_feedback' AND payload::jsonb->>'tool' = 'run_command' ORDER BY seq",
          [thread],
        )
      ).rows.map((r) => r.p as { status: string; errorClass: string | null; output: string; command: string });
      return { ws, feedback, counter: fs.readFileSync(path.join(ws, "counter.txt"), "utf8") };
    };
    try {
      // Within the grace period: the command ends on its own, ok, and is not run again.
      const drained = await stopMidCommand("g1", "sleep 2 && echo one", "60");
      expect(drained.feedback.map((f) => [f.status, f.errorClass])).toEqual([
        ["ok", null],
        ["ok", null],
      ]);
      expect(drained.counter).toBe("one\ntwo\n");
      // Past it: the command is killed, and the model reads why (not a bare SIGKILL).
      const cut = await stopMidCommand("g2", "sleep 60 && echo late", "1");
      expect(cut.feedback.map((f) => [f.status, f.errorClass])).toEqual([
        ["interrupted", "interrupted"],
        ["ok", null],
      ]);
      expect(cut.feedback[0]!.output).toContain("was stopped because the run was stopped");
      expect(cut.counter).toBe("two\n");
    } finally {
      await c.end();
    }
  });

  it("a run from a repository taken over on another worker continues from the revisions in PostgreSQL: a fresh clone plus the run's files", async () => {
    const repo = gitRepo({ "README.md": "repo\n", "src/a.txt": "a\n" });
    const scratch = tempWorkspace();
    const traj = writeTrajectory(scratch, 24);
    // The same run done alone (SQLite, on a copy of the repository's files): the reference.
    // It runs beside the queued one (a separate workspace and SQLite state): it is only read at the end.
    const alone = tempWorkspace(undefined, { "README.md": "repo\n", "src/a.txt": "a\n" });
    const referenceRun = cliAsync(["run", "long", "-w", alone, "--model", `scripted:${traj}`, "--json", "-q"], { timeoutMs: 170_000 });

    const sub = await cliAsync([
      "submit",
      "long",
      "--repo",
      repo,
      "--state",
      db.url,
      "--model",
      `scripted:${traj}`,
      "--retrieval",
      "lexical",
      "--thread",
      "k2",
      "--json",
    ]);
    expect(sub.code, sub.stderr).toBe(0);
    const a = spawnWorker(db.url, path.join(scratch, "a"));
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    try {
      await until(async () => Number((await c.query("SELECT COUNT(*) AS n FROM ll_events WHERE thread_id = 'k2' AND type = 'agent_action'")).rows[0].n) >= 8);
      a.child.kill("SIGKILL");
      await exitOf(a);
      // Worker b has its own directory: nothing of a's clone is visible to it.
      const b = spawnWorker(db.url, path.join(scratch, "b"), ["--keep-dirs"]);
      expect(await exitOf(b), b.err()).toEqual({ code: 0, signal: null });
      expect(jsonLines(b.out())).toEqual([expect.objectContaining({ thread: "k2", outcome: "ran", status: "finished", resumed: true })]);
      const interrupted = new Set(
        (
          await c.query(
            `SELECT a.payload::jsonb -> 'args' ->> 'command' AS command FROM ll_events f JOIN ll_events a ON a.id = f.caused_by
             WHERE f.thread_id = 'k2' AND f.type = 'environment_feedback' AND f.payload::jsonb ->> 'status' = 'interrupted'`,
          )
        ).rows.map((r) => (r.command as string).match(/echo (a\d+)/)?.[1]),
      );
      const ref = await referenceRun;
      expect(ref.code, ref.stderr).toBe(0);
      const reference = readTree(alone);
      const clone = path.join(scratch, "b", "k2");
      const tree = Object.fromEntries(Object.entries(readTree(clone)).filter(([k]) => !k.startsWith(".git/")));
      const expected = {
        ...reference,
        "counter.txt": reference["counter.txt"]!.split("\n")
          .filter((l) => !interrupted.has(l))
          .join("\n"),
      };
      expect(tree).toEqual(expected);
      // One trace across both workers: the second found the trace ids the first stored in PostgreSQL.
      const trace = JSON.parse((await c.query("SELECT trace FROM ll_runs WHERE thread_id = 'k2'")).rows[0].trace as string) as { traceId: string };
      const traceIds = (dir: string) =>
        new Set(jsonLines<{ traceId?: string }>(fs.readFileSync(path.join(dir, ".ledgerloop", "logs", "k2.jsonl"), "utf8")).map((l) => l.traceId));
      expect(traceIds(path.join(scratch, "a", "k2"))).toEqual(new Set([trace.traceId]));
      expect(traceIds(clone)).toEqual(new Set([trace.traceId]));
      // The clone's git sees the run's work as changes to the pinned commit.
      const pinned = (await c.query("SELECT commit_sha FROM ll_submissions WHERE thread_id = 'k2'")).rows[0].commit_sha as string;
      expect(execFileSync("git", ["rev-parse", "HEAD"], { cwd: clone, encoding: "utf8" }).trim()).toBe(pinned);
      expect(execFileSync("git", ["status", "--porcelain"], { cwd: clone, encoding: "utf8" }).split("\n").sort().filter(Boolean)).toEqual([
        "?? counter.txt",
        "?? out/",
      ]);
      // No setup command was declared: the first prompt after the takeover, and only it, says what is missing.
      const newest = (
        await c.query<{ data: Buffer }>(
          `SELECT b.data FROM ll_events e JOIN ll_blobs b ON b.hash = e.payload::jsonb ->> 'promptRef' WHERE e.thread_id = 'k2' AND e.type = 'context_built' ORDER BY e.seq`,
        )
      ).rows.map(
        (r) =>
          (JSON.parse(inflateRawSync(r.data).toString("utf8")) as Array<{ role: string; content: string }>).filter((m) => m.role === "user").at(-1)!.content,
      );
      const told = newest.filter((m) => m.includes("# Workspace moved"));
      expect(told).toHaveLength(1);
      expect(told[0]).toContain("No setup command was declared with the task, so whatever ignored files you created before the move are missing here");
    } finally {
      await c.end();
    }
  });
});
