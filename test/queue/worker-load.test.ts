import path from "node:path";
import { afterAll, expect, it } from "vitest";
import pg from "pg";
import { cliAsync, jsonLines } from "../helpers/cli.js";
import { describePg, useTestDatabase } from "../helpers/postgres.js";
import { cleanupTemp, readTree, tempWorkspace } from "../helpers/workspace.js";
import { openPgState } from "../../src/ledger/pg-db.js";
import { startQueue, submitRun } from "../../src/queue/run-queue.js";
import { checkRunLedger, exitOf, spawnWorker, until, writeTrajectory } from "./queue-fixtures.js";

afterAll(() => cleanupTemp());

const RUNS = 18;
const STEPS = 21;

/**
 * The load test: 3 workers, 18 scripted runs of 21 decide steps (three rounds of their six slots) on shared workspaces; one
 * worker is SIGKILLed mid-way and another stopped with SIGTERM. Every run must finish, with a
 * gap-free ledger in which every action has exactly one feedback, no command run twice (each
 * appends its own key to counter.txt), and the files of the same run done alone — where the lines
 * of commands the ledger reports as interrupted (in flight when their worker died or was cut off;
 * never re-run) may be there or not.
 */
describePg("3 workers, 18 runs, one killed and one stopped", () => {
  const db = useTestDatabase("load");

  it("all runs finish exactly once", async () => {
    const scratch = tempWorkspace();
    const traj = writeTrajectory(scratch, STEPS);
    const model = `scripted:${traj}`;

    // The same run done alone, by the plain CLI on SQLite: the reference tree.
    const alone = tempWorkspace(undefined, { "README.md": "run\n" });
    const ref = await cliAsync(["run", "steps", "-w", alone, "--model", model, "--json", "-q"], { timeoutMs: 170_000 });
    expect(ref.code, ref.stderr).toBe(0);
    const reference = readTree(alone);
    expect(reference["counter.txt"]!.trim().split("\n")).toHaveLength(Math.ceil(STEPS / 2));

    const state = await openPgState(db.url);
    const boss = await startQueue(db.url);
    const workspaces: string[] = [];
    for (let i = 0; i < RUNS; i++) {
      const ws = tempWorkspace(undefined, { "README.md": "run\n" });
      workspaces.push(ws);
      await submitRun(state.pool, boss, {
        thread: `L${i}`,
        task: "steps",
        source: { kind: "workspace", path: ws },
        settings: { model, retrieval: "lexical", approve: "deny" } as never,
      });
    }
    await boss.stop({ graceful: false, wait: true });

    const workers = [0, 1, 2].map((i) => spawnWorker(db.url, path.join(scratch, `w${i}`), ["--concurrency", "2"]));
    const pids = workers.map((w) => w.child.pid!);
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    const heldMidway = async (pid: number) => {
      const r = await c.query(
        `SELECT l.thread_id FROM ll_run_leases l WHERE l.state = 'held' AND l.worker LIKE $1
           AND (SELECT COUNT(*) FROM ll_events e WHERE e.thread_id = l.thread_id AND e.type = 'agent_action') >= 6`,
        [`%:${pid}:%`],
      );
      return r.rowCount ? r.rows.map((x) => x.thread_id as string) : null;
    };
    try {
      const killedHeld = await until(() => heldMidway(pids[0]!));
      console.error(`load: killing worker 0 holding ${killedHeld.join(", ")}`);
      workers[0]!.child.kill("SIGKILL");
      expect(await exitOf(workers[0]!)).toEqual({ code: null, signal: "SIGKILL" });
      const stoppedHeld = await until(() => heldMidway(pids[1]!));
      console.error(`load: stopping worker 1 holding ${stoppedHeld.join(", ")}`);
      workers[1]!.child.kill("SIGTERM");
      // Graceful: its runs go back to the queue and it exits 0.
      expect(await exitOf(workers[1]!), workers[1]!.err()).toEqual({ code: 0, signal: null });
      expect(jsonLines<{ outcome: string }>(workers[1]!.out()).filter((o) => o.outcome === "handed_over").length).toBeGreaterThanOrEqual(1);
      console.error("load: waiting for worker 2");
      expect(await exitOf(workers[2]!, 600_000), workers[2]!.err()).toEqual({ code: 0, signal: null });

      const leases = (await c.query("SELECT thread_id, state, takeovers FROM ll_run_leases ORDER BY thread_id")).rows as Array<{
        thread_id: string;
        state: string;
        takeovers: number;
      }>;
      expect(leases.filter((l) => l.state === "done")).toHaveLength(RUNS);
      // The killed worker's runs were taken over once each.
      for (const t of killedHeld) expect(leases.find((l) => l.thread_id === t)!.takeovers).toBe(1);
      expect(stoppedHeld.length).toBeGreaterThanOrEqual(1);

      const threads = jsonLines<{ thread: string; status: string }>((await cliAsync(["threads", "--state", db.url, "--json"])).stdout);
      expect(threads.filter((t) => t.status === "finished")).toHaveLength(RUNS);

      let interruptedTotal = 0;
      for (let i = 0; i < RUNS; i++) {
        const thread = `L${i}`;
        // Nothing lost, nothing duplicated: one gap-free sequence, each decision one action with exactly one feedback.
        const { actions, feedback } = await checkRunLedger(c, thread, STEPS);
        const interrupted = new Set(
          feedback
            .filter((f) => (JSON.parse(f.payload) as { status: string }).status === "interrupted")
            .map((f) => actions.find((a) => a.id === f.caused_by)!.p.args.command?.match(/echo (a\d+)/)?.[1])
            .filter(Boolean),
        );
        interruptedTotal += interrupted.size;
        const tree = readTree(workspaces[i]!);
        const counter = tree["counter.txt"]!.trim().split("\n");
        // No command ran twice.
        expect(new Set(counter).size, thread).toBe(counter.length);
        // An interrupted command may have done its work before its worker died (a shared workspace
        // keeps whatever it wrote), or not: either is right, as long as it was not run again.
        const expected = {
          ...reference,
          "counter.txt": reference["counter.txt"]!.split("\n")
            .filter((l) => !interrupted.has(l) || counter.includes(l))
            .join("\n"),
        };
        expect(tree, thread).toEqual(expected);
      }
      // At most the commands in flight when a worker died or stopped (2 slots each).
      expect(interruptedTotal).toBeLessThanOrEqual(4);
    } finally {
      for (const w of workers) w.child.kill("SIGKILL");
      await c.end();
      await state.close();
    }
  }, 900_000);
});
