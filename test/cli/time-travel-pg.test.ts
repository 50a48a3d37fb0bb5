import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import pg from "pg";
import { DEMO_TASK } from "../../src/cli/demo.js";
import type { HistoryRow } from "../../src/inspect/history.js";
import { cliAsync, jsonLines } from "../helpers/cli.js";
import { DEMO_TRAJECTORY, DEMO_WORKSPACE, cleanupTemp, readTree, tempWorkspace } from "../helpers/workspace.js";
import { describePg, useTestDatabase } from "../helpers/postgres.js";

afterAll(() => cleanupTemp());

/** One line of `history --json`. */
type Row = HistoryRow;

const AGGREGATE = "dashboard/aggregate.js";

// The demo run on PostgreSQL, then history, diff, rewind and fork through --state: the checkpoints
// and ledger are read and written there, the files are the -w workspace's, and a revision that
// workspace's store lacks (a fresh directory standing for another machine) comes from the replica.
describePg("time travel from the CLI on a PostgreSQL state", () => {
  const db = useTestDatabase("ttpg");
  let ws: string;
  let finalTree: Record<string, string>;
  let history: Row[];
  const beforeAct = (step: number) => history.filter((h) => h.agentStep === step && h.next.includes("act")).at(-1)!.checkpointId;
  const state = () => ["--state", db.url];

  beforeAll(async () => {
    ws = tempWorkspace(DEMO_WORKSPACE);
    const r = await cliAsync(["run", DEMO_TASK, "-w", ws, "--model", `scripted:${DEMO_TRAJECTORY}`, "--thread", "T", ...state(), "--json", "-q"], {
      timeoutMs: 170_000,
    });
    expect(r.code, r.stderr || r.stdout).toBe(0);
    finalTree = readTree(ws);
    const h = await cliAsync(["history", "T", "-w", ws, ...state(), "--json"]);
    expect(h.code, h.stderr).toBe(0);
    history = jsonLines<Row>(h.stdout);
  }, 180_000);

  it("history --state lists the run's checkpoints from PostgreSQL, newest first, each with its parent", async () => {
    expect(history.length).toBeGreaterThan(20);
    expect(history[0]).toMatchObject({ status: "finished", next: [] });
    expect(history.at(-1)).toMatchObject({ step: -1, parentCheckpointId: null });
    // Newest first, and each checkpoint's parent is the one listed after it (one straight line).
    for (let i = 0; i + 1 < history.length; i++) expect(history[i]!.parentCheckpointId).toBe(history[i + 1]!.checkpointId);
    for (const s of [3, 5]) expect(beforeAct(s)).toMatch(/\w/);
    // The text listing and the environment variable read the same.
    const text = await cliAsync(["history", "T", "-w", ws], { env: { LEDGERLOOP_STATE_URL: db.url } });
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout.trim().split("\n")).toHaveLength(history.length);
    expect(text.stdout).toContain(history[0]!.checkpointId);
    expect(text.stderr).not.toContain(new URL(db.url).password);
    const unknown = await cliAsync(["history", "nope", "-w", ws, ...state()]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/unknown thread "nope" in postgres:\/\/postgres:\*\*\*@/);
  });

  it("diff --state --stat between the first and last checkpoint names the changed files, also from a workspace that never ran the steps", async () => {
    const args = ["diff", "T", ...state(), "--from", history.at(-1)!.checkpointId, "--to", history[0]!.checkpointId, "--stat", "--json"];
    const r = await cliAsync([...args, "-w", ws]);
    expect(r.code, r.stderr || r.stdout).toBe(0);
    const stat = (JSON.parse(r.stdout) as { stat: Array<{ path: string }> }).stat.map((s) => s.path).sort();
    expect(stat).toContain(AGGREGATE);
    expect(stat).toContain("services/orders/server.js");
    // Another machine: an empty directory whose own store has no revision; both come from the replica.
    const elsewhere = tempWorkspace();
    const remote = await cliAsync([...args, "-w", elsewhere]);
    expect(remote.code, remote.stderr).toBe(0);
    expect((JSON.parse(remote.stdout) as { stat: Array<{ path: string }> }).stat.map((s) => s.path).sort()).toEqual(stat);
    const unified = await cliAsync(["diff", "T", ...state(), "-w", elsewhere, "--from", beforeAct(5), "--to", history[0]!.checkpointId]);
    expect(unified.code, unified.stderr).toBe(0);
    expect(unified.stdout).toContain(`+++ b/${AGGREGATE}`);
  });

  it("rewind --state restores an early checkpoint's files, and resume --state finishes the run again with the final files", async () => {
    const r = await cliAsync(["rewind", "T", "-w", ws, ...state(), "--to", beforeAct(5).slice(0, 20), "--json"]);
    expect(r.code, r.stderr || r.stdout).toBe(0);
    const rew = JSON.parse(r.stdout) as { toCheckpoint: string; checkpointId: string; restored: { modified: string[] } };
    expect(rew.toCheckpoint).toBe(beforeAct(5));
    expect(rew.restored.modified).toContain(AGGREGATE);
    expect(fs.readFileSync(path.join(ws, AGGREGATE), "utf8")).toContain("not implemented");
    expect(readTree(ws)).not.toEqual(finalTree);
    // The new head is in PostgreSQL: a fork of the target, listed first.
    const after = jsonLines<Row>((await cliAsync(["history", "T", "-w", ws, ...state(), "--json"])).stdout);
    // It runs `act` next, as the target did: its channel values are its own, not those a later
    // checkpoint of the thread stored under the same versions (RedactingPostgresSaver.getNextVersion).
    expect(after[0]).toMatchObject({ checkpointId: rew.checkpointId, parentCheckpointId: beforeAct(5), next: ["act"] });
    // And the ledger there continues on the target's branch with the time_travel event.
    const ledger = jsonLines<{ type: string; payload: { kind?: string; toCheckpoint?: string } }>(
      (await cliAsync(["ledger", "T", ...state(), "--json"])).stdout,
    );
    expect(ledger.at(-1)).toMatchObject({ type: "time_travel", payload: { kind: "rewind", toCheckpoint: beforeAct(5) } });

    const resumed = await cliAsync(["resume", "T", "-w", ws, ...state(), "--json", "-q"], { timeoutMs: 170_000 });
    expect(resumed.code, resumed.stderr || resumed.stdout).toBe(0);
    expect(JSON.parse(resumed.stdout.trim().split("\n").at(-1)!)).toMatchObject({ status: "finished" });
    expect(readTree(ws)).toEqual(finalTree);
  }, 200_000);

  it("fork --state --into a new directory, from a workspace that never ran the steps, gets the fork's files from the replica and resumes to the final files", async () => {
    const elsewhere = tempWorkspace();
    const into = path.join(tempWorkspace(), "fork");
    const r = await cliAsync(["fork", "T", "-w", elsewhere, ...state(), "--at", beforeAct(3), "--into", into, "--thread", "F", "--json"]);
    expect(r.code, r.stderr || r.stdout).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ thread: "F", fromThread: "T", fromCheckpoint: beforeAct(3) });
    expect(fs.readFileSync(path.join(into, AGGREGATE), "utf8")).toContain("not implemented");
    // Only the run's files: the directory it was asked from got none of them.
    expect(readTree(elsewhere)).toEqual({});
    const threads = jsonLines<{ thread: string; status: string }>((await cliAsync(["threads", ...state(), "--json"])).stdout);
    expect(threads.map((t) => t.thread).sort()).toEqual(["F", "T"]);
    const forkHistory = jsonLines<Row>((await cliAsync(["history", "F", "-w", into, ...state(), "--json"])).stdout);
    expect(forkHistory.length).toBeGreaterThanOrEqual(2);

    const resumed = await cliAsync(["resume", "F", "-w", into, ...state(), "--json", "-q"], { timeoutMs: 170_000 });
    expect(resumed.code, resumed.stderr || resumed.stdout).toBe(0);
    expect(readTree(into)).toEqual(finalTree);
  }, 200_000);

  it("replay --state re-runs the recording read from PostgreSQL with zero model calls, in a scratch workspace with its own state", async () => {
    const into = path.join(tempWorkspace(), "replay");
    const r = await cliAsync(["replay", "T", "-w", ws, ...state(), "--into", into, "--json", "-q"], { timeoutMs: 170_000 });
    expect(r.code, r.stderr || r.stdout).toBe(0);
    const rep = JSON.parse(r.stdout) as { workspace: string; thread: string };
    expect(rep).toMatchObject({ workspace: into, fromThread: "T", status: "finished", recordedStatus: "finished", modelCalls: 0, divergences: [] });
    expect(readTree(rep.workspace)).toEqual(finalTree);
    // The replay's thread is in the scratch workspace's SQLite state, not in the shared database.
    expect(fs.existsSync(path.join(rep.workspace, ".ledgerloop", "state.db"))).toBe(true);
    const threads = jsonLines<{ thread: string }>((await cliAsync(["threads", ...state(), "--json"])).stdout);
    expect(threads.map((t) => t.thread)).not.toContain(rep.thread);
    const local = jsonLines<{ thread: string }>((await cliAsync(["threads", "-w", rep.workspace, "--json"])).stdout);
    expect(local.map((t) => t.thread)).toEqual([rep.thread]);
  }, 200_000);

  it("rewind --state in a workspace that never ran the steps (another machine) writes the checkpoint's files there from the replica", async () => {
    const elsewhere = tempWorkspace();
    const r = await cliAsync(["rewind", "T", "-w", elsewhere, ...state(), "--to", beforeAct(5), "--json"]);
    expect(r.code, r.stderr || r.stdout).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ toCheckpoint: beforeAct(5) });
    expect(fs.readFileSync(path.join(elsewhere, AGGREGATE), "utf8")).toContain("not implemented");
    expect(Object.keys(readTree(elsewhere)).sort()).toEqual(Object.keys(finalTree).sort());
    const head = jsonLines<Row>((await cliAsync(["history", "T", "-w", elsewhere, ...state(), "--json"])).stdout)[0]!;
    expect(head).toMatchObject({ parentCheckpointId: beforeAct(5), next: ["act"] });
  });

  it("fork --state without --into sets the shared workspace's files to the checkpoint's and registers the new thread there", async () => {
    const r = await cliAsync(["fork", "T", "-w", ws, ...state(), "--at", beforeAct(3), "--thread", "G", "--json"]);
    expect(r.code, r.stderr || r.stdout).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ thread: "G", fromThread: "T", workspace: ws });
    expect(fs.readFileSync(path.join(ws, AGGREGATE), "utf8")).toContain("not implemented");
    const threads = jsonLines<{ thread: string }>((await cliAsync(["threads", ...state(), "--json"])).stdout);
    expect(threads.map((t) => t.thread).sort()).toEqual(["F", "G", "T"]);
    const forked = jsonLines<Row>((await cliAsync(["history", "G", "-w", ws, ...state(), "--json"])).stdout);
    expect(forked[0]).toMatchObject({ next: ["act"], agentStep: 3 });
  });

  it("resume, rewind and fork refuse, in one line naming the worker, a run a queue worker holds or is about to take", async () => {
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    try {
      await c.query("INSERT INTO ll_submissions (thread_id, task, source, settings, submitted_at) VALUES ('T', 'x', '{}', '{}', 'now') ON CONFLICT DO NOTHING");
      await c.query(
        "INSERT INTO ll_run_leases (thread_id, state, worker, token, expires_at) VALUES ('T', 'held', 'host:42:abc', 'tok', now() + interval '1 hour')",
      );
      for (const args of [
        ["resume", "T"],
        ["rewind", "T", "--to", beforeAct(5)],
        ["fork", "T", "--at", beforeAct(5), "--thread", "H"],
      ]) {
        const r = await cliAsync([...args, "-w", ws, ...state()]);
        expect(r.code, r.stderr).toBe(75);
        expect(r.stderr.trim()).toMatch(new RegExp(`^ledgerloop: run T is being driven by worker host:42:abc; stop that worker .* before \`${args[0]}\`$`));
      }
      await c.query("UPDATE ll_run_leases SET state = 'queued', worker = NULL, token = NULL, expires_at = NULL WHERE thread_id = 'T'");
      const queued = await cliAsync(["resume", "T", "-w", ws, ...state(), "-q"]);
      expect(queued.code).toBe(75);
      expect(queued.stderr.trim()).toBe("ledgerloop: run T is queued for the workers (a worker will take it up); `resume` would race it");
    } finally {
      await c.query("DELETE FROM ll_run_leases WHERE thread_id = 'T'");
      await c.query("DELETE FROM ll_submissions WHERE thread_id = 'T'");
      await c.end();
    }
  });

  it("the commands that do not read PostgreSQL yet refuse --state in a sentence naming those that do", async () => {
    const r = await cliAsync(["stats", "-w", ws], { env: { LEDGERLOOP_STATE_URL: db.url } });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/is not implemented yet \(.*history.*diff, rewind, fork, replay.* take --state; logs and stats are about this machine's files\)/);
  });
});
