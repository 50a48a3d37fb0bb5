import fs from "node:fs";
import path from "node:path";
import { afterAll, expect, it } from "vitest";
import pg from "pg";
import { cliAsync, jsonLines } from "../helpers/cli.js";
import { describePg, useTestDatabase } from "../helpers/postgres.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";
import { exitOf, spawnWorker, until, writeTrajectory } from "./queue-fixtures.js";

afterAll(() => cleanupTemp());

describePg("ledgerloop cancel / requeue / submit --priority", () => {
  const db = useTestDatabase("control");
  const lease = async (c: pg.Client, thread: string) =>
    (await c.query("SELECT state, note FROM ll_run_leases WHERE thread_id = $1", [thread])).rows[0] as { state: string; note: string };
  const statusOf = async (thread: string) =>
    jsonLines<{ thread: string; status: string }>((await cliAsync(["threads", "--state", db.url, "--json"])).stdout).find((t) => t.thread === thread)?.status;

  it("a queued run is cancelled at once and never taken; higher priority runs first; requeue runs the cancelled one to its end", async () => {
    const scratch = tempWorkspace();
    const model = `scripted:${writeTrajectory(scratch, 2)}`;
    const submit = (thread: string, extra: string[] = []) =>
      cliAsync([
        "submit",
        "two",
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
    for (const [t, extra] of [
      ["low", []],
      ["gone", []],
      ["high", ["--priority", "5"]],
    ] as const) {
      const s = await submit(t, [...extra]);
      expect(s.code, s.stderr).toBe(0);
    }
    const bad = await submit("odd", ["--priority", "1.5"]);
    expect(bad.stderr.trim()).toBe('ledgerloop: --priority must be a whole number, got "1.5"');

    const cancel = await cliAsync(["cancel", "gone", "--state", db.url]);
    expect(cancel.code, cancel.stderr).toBe(0);
    expect(cancel.stderr.trim()).toBe("cancelled run gone (it was queued); `ledgerloop requeue gone` continues it");
    expect(await statusOf("gone")).toBe("cancelled");
    const again = await cliAsync(["cancel", "gone", "--state", db.url]);
    expect([again.code, again.stderr.trim()]).toEqual([2, 'ledgerloop: run "gone" is cancelled already; nothing to cancel']);
    const unknown = await cliAsync(["cancel", "nope", "--state", db.url]);
    expect(unknown.stderr.trim()).toBe('ledgerloop: no run "nope" was submitted to this state\'s queue; list runs with `ledgerloop threads --state …`');

    // One slot: the order it takes the runs in is the queue's.
    const w = spawnWorker(db.url, path.join(scratch, "w"), ["--concurrency", "1"]);
    expect(await exitOf(w), w.err()).toEqual({ code: 0, signal: null });
    expect(jsonLines<{ thread: string; outcome: string }>(w.out()).map((o) => [o.thread, o.outcome])).toEqual([
      ["high", "ran"],
      ["low", "ran"],
    ]);

    const done = await cliAsync(["requeue", "low", "--state", db.url]);
    expect(done.stderr.trim()).toBe(
      'ledgerloop: run "low" is done; only a failed, paused, cancelled or rewound run can be queued again; give --from <checkpoint> to continue it from an earlier one',
    );
    const requeue = await cliAsync(["requeue", "gone", "--state", db.url, "--json"]);
    expect(requeue.code, requeue.stderr).toBe(0);
    expect(JSON.parse(requeue.stdout)).toEqual({ thread: "gone", jobId: expect.any(String), was: "cancelled" });
    const w2 = spawnWorker(db.url, path.join(scratch, "w2"));
    expect(await exitOf(w2), w2.err()).toEqual({ code: 0, signal: null });
    expect(jsonLines(w2.out())).toEqual([expect.objectContaining({ thread: "gone", outcome: "ran", status: "finished" })]);
    expect(await statusOf("gone")).toBe("finished");
  });

  it("a running run is cancelled by its worker at the next step boundary; requeued, it continues without running a command twice", async () => {
    const scratch = tempWorkspace();
    const steps = 24;
    const model = `scripted:${writeTrajectory(scratch, steps)}`;
    const ws = tempWorkspace(undefined, { "README.md": "x\n" });
    const s = await cliAsync([
      "submit",
      "long",
      "--workspace",
      ws,
      "--state",
      db.url,
      "--model",
      model,
      "--retrieval",
      "lexical",
      "--thread",
      "held",
      "--json",
    ]);
    expect(s.code, s.stderr).toBe(0);
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    const actions = async () => Number((await c.query("SELECT COUNT(*) AS n FROM ll_events WHERE thread_id = 'held' AND type = 'agent_action'")).rows[0].n);
    try {
      const w = spawnWorker(db.url, path.join(scratch, "w"));
      await until(async () => (await actions()) >= 4);
      const cancel = await cliAsync(["cancel", "held", "--state", db.url, "--json"]);
      expect(cancel.code, cancel.stderr).toBe(0);
      expect(JSON.parse(cancel.stdout)).toEqual({ thread: "held", state: "cancel_requested", worker: expect.stringMatching(new RegExp(`:${w.child.pid}:`)) });
      expect(await exitOf(w), w.err()).toEqual({ code: 0, signal: null });
      expect(jsonLines(w.out())).toEqual([expect.objectContaining({ thread: "held", outcome: "cancelled", status: "interrupted" })]);
      const l = await lease(c, "held");
      expect(l.state).toBe("cancelled");
      expect(l.note).toMatch(/^cancelled by .+; stopped after step \d+ on /);
      expect(await statusOf("held")).toBe("cancelled");
      const stoppedAt = await actions();
      expect(stoppedAt).toBeLessThan(steps + 1);
      // Stopped at a step boundary: every action it recorded has its feedback.
      const unanswered = await c.query(
        "SELECT a.id FROM ll_events a WHERE a.thread_id = 'held' AND a.type = 'agent_action' AND NOT EXISTS (SELECT 1 FROM ll_events f WHERE f.caused_by = a.id AND f.type = 'environment_feedback')",
      );
      expect(unanswered.rowCount).toBe(0);

      expect((await cliAsync(["requeue", "held", "--state", db.url])).code).toBe(0);
      const w2 = spawnWorker(db.url, path.join(scratch, "w2"));
      expect(await exitOf(w2), w2.err()).toEqual({ code: 0, signal: null });
      expect(jsonLines(w2.out())).toEqual([expect.objectContaining({ thread: "held", outcome: "ran", status: "finished", resumed: true })]);
      const counter = fs.readFileSync(path.join(ws, "counter.txt"), "utf8").trim().split("\n");
      expect(counter).toEqual(Array.from({ length: steps / 2 }, (_, k) => `a${2 * k + 1}`));
    } finally {
      await c.end();
    }
  });
});
