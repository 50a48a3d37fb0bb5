import fs from "node:fs";
import path from "node:path";
import { afterAll, expect, it } from "vitest";
import { cliAsync, jsonLines } from "../helpers/cli.js";
import { describePg, pgQuery, useTestDatabase } from "../helpers/postgres.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";
import { exitOf, spawnWorker, writeTrajectory } from "./queue-fixtures.js";

afterAll(() => cleanupTemp());

interface Ev {
  id: string;
  seq: number;
  type: string;
  parent_id: string | null;
  caused_by: string | null;
  payload: Record<string, unknown>;
}

describePg("ledgerloop requeue --from <checkpoint>", () => {
  const db = useTestDatabase("requeue_from");
  const events = async (thread: string) =>
    (
      await pgQuery<Ev>(db.url, "SELECT id, seq, type, parent_id, caused_by, payload::jsonb AS payload FROM ll_events WHERE thread_id = $1 ORDER BY seq", [
        thread,
      ])
    ).map((e) => ({ ...e, seq: Number(e.seq) }));
  const leaseOf = async (thread: string) =>
    (
      await pgQuery<{ state: string; job_id: string; note: string }>(db.url, "SELECT state, job_id, note FROM ll_run_leases WHERE thread_id = $1", [thread])
    )[0]!;

  it("a finished run continues from the chosen checkpoint through a worker: files, ledger branch and steps from there; a wrong checkpoint queues nothing", async () => {
    const scratch = tempWorkspace();
    const ws = tempWorkspace(undefined, { "README.md": "x\n" });
    const submit = (thread: string, steps: number, dir: string) =>
      cliAsync([
        "submit",
        "go",
        "--workspace",
        dir,
        "--state",
        db.url,
        "--model",
        `scripted:${writeTrajectory(scratch, steps)}`,
        "--retrieval",
        "lexical",
        "--thread",
        thread,
      ]);
    for (const [t, steps, dir] of [
      ["main", 6, ws],
      ["other", 2, tempWorkspace(undefined, { "README.md": "y\n" })],
    ] as const) {
      const s = await submit(t, steps, dir);
      expect(s.code, s.stderr).toBe(0);
    }
    const w = spawnWorker(db.url, path.join(scratch, "w"), ["--concurrency", "1"]);
    expect(await exitOf(w), w.err()).toEqual({ code: 0, signal: null });
    expect(fs.readFileSync(path.join(ws, "counter.txt"), "utf8")).toBe("a1\na3\na5\n");

    const before = async (thread: string, step: number) => {
      const h = await cliAsync(["history", thread, "--state", db.url, "--step", String(step), "--json"]);
      expect(h.code, h.stderr).toBe(0);
      return JSON.parse(h.stdout) as { checkpointId: string; agentStep: number };
    };
    const foreign = (await before("other", 1)).checkpointId;
    const target = (await before("main", 3)).checkpointId;
    const eventsBefore = await events("main");
    const leaseBefore = await leaseOf("main");
    expect(leaseBefore.state).toBe("done");

    // Refused in one line each; neither the queue row nor the ledger changes.
    const notOurs = await cliAsync(["requeue", "main", "--from", foreign, "--state", db.url]);
    expect([notOurs.code, notOurs.stderr.trim()]).toEqual([
      1,
      `ledgerloop: checkpoint ${foreign} is of run other, not of main; \`ledgerloop history main --state …\` lists its checkpoints`,
    ]);
    const unknown = await cliAsync(["requeue", "main", "--from", "1f0000-no-such", "--state", db.url]);
    expect([unknown.code, unknown.stderr.trim()]).toEqual([
      1,
      "ledgerloop: no checkpoint 1f0000-no-such in run main; `ledgerloop history main --state …` lists its checkpoints",
    ]);
    const nobody = await cliAsync(["requeue", "ghost", "--from", target, "--state", db.url]);
    expect(nobody.stderr.trim()).toBe('ledgerloop: no run "ghost" was submitted to this state\'s queue; list runs with `ledgerloop threads --state …`');
    const plain = await cliAsync(["requeue", "main", "--state", db.url]);
    expect(plain.stderr.trim()).toBe(
      'ledgerloop: run "main" is done; only a failed, paused, cancelled or rewound run can be queued again; give --from <checkpoint> to continue it from an earlier one',
    );
    expect(await leaseOf("main")).toEqual(leaseBefore);
    expect(await events("main")).toEqual(eventsBefore);

    const rq = await cliAsync(["requeue", "main", "--from", target.slice(0, 12), "--state", db.url, "--json"]);
    expect(rq.code, rq.stderr).toBe(0);
    expect(JSON.parse(rq.stdout)).toEqual({ thread: "main", jobId: expect.any(String), was: "done", from: target });
    expect((await leaseOf("main")).note).toMatch(new RegExp(`^queued again by .+ from checkpoint ${target}$`));

    const w2 = spawnWorker(db.url, path.join(scratch, "w2"));
    expect(await exitOf(w2), w2.err()).toEqual({ code: 0, signal: null });
    expect(jsonLines(w2.out())).toEqual([expect.objectContaining({ thread: "main", outcome: "ran", status: "finished", resumed: true })]);

    const all = await events("main");
    const action3 = eventsBefore.find((e) => e.type === "agent_action" && e.payload.step === 3)!;
    const jump = all.filter((e) => e.seq > eventsBefore.at(-1)!.seq)[0]!;
    // The branch continues from the checkpoint's ledger head (step 3's action, decided, not yet acted) ...
    expect(jump).toMatchObject({ type: "time_travel", parent_id: action3.id, payload: expect.objectContaining({ kind: "rewind", toCheckpoint: target }) });
    const after = all.filter((e) => e.seq > jump.seq);
    // ... so step 3 is acted again (the files were moved back to before it) and the next decision is step 4, not 7.
    expect(after.find((e) => e.type === "environment_feedback")!.caused_by).toBe(action3.id);
    expect(after.filter((e) => e.type === "agent_action").map((e) => e.payload.step)).toEqual([4, 5, 6, 7]);
    expect(fs.readFileSync(path.join(ws, "counter.txt"), "utf8")).toBe("a1\na3\na5\n");
  });
});
