import fs from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createCodingAgent, recursionLimitFor } from "../../src/agent/graph.js";
import { listRuns } from "../../src/ledger/run-status.js";
import { createRuntime, type ProgressEvent, type Runtime } from "../../src/runtime.js";
import type { LedgerEvent, TaskStateValue } from "../../src/state.js";
import { DEMO_TRAJECTORY, DEMO_WORKSPACE, cleanupTemp, readTree, tempWorkspace } from "../helpers/workspace.js";

// Time travel as a script, Studio or the SDK does it: no ledgerloop command, only the graph's own
// API (getStateHistory, invoke with a checkpoint_id, updateState). The graph itself must put the
// files back to the checkpoint's revision before the next action, and continue the ledger there.

const runtimes: Runtime[] = [];
afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((r) => r.close()));
  cleanupTemp();
});

async function scriptAgent(workspace: string, model: string) {
  const progress: ProgressEvent[] = [];
  const restoredTrees: Array<Record<string, string>> = [];
  const rt = await createRuntime(
    { workspace, model, retrieval: "lexical" },
    {
      progress: (e) => {
        progress.push(e);
        // The moment the graph reports a restore is before the node (and so the action) runs.
        if (/workspace restored/.test(e.text)) restoredTrees.push(readTree(workspace));
      },
    },
  );
  runtimes.push(rt);
  return { rt, agent: createCodingAgent({ runtime: rt }), progress, restoredTrees };
}

const cfg = (thread: string, checkpoint?: string) => ({
  configurable: { thread_id: thread, ...(checkpoint ? { checkpoint_id: checkpoint } : {}) },
  recursionLimit: recursionLimitFor(50),
  durability: "sync" as const,
});

const revisionTree = (rt: Runtime, rev: string) =>
  Object.fromEntries([...rt.revisions.files(rev).keys()].map((f) => [f, rt.revisions.readFile(rev, f).toString("utf8")]));

describe("time travel from a script (the graph API alone)", () => {
  it("invoke with an early checkpoint_id of the demo restores that checkpoint's files before the next action and continues its ledger branch", async () => {
    const ws = tempWorkspace(DEMO_WORKSPACE);
    const original = readTree(ws);
    const { rt, agent, restoredTrees } = await scriptAgent(ws, `scripted:${DEMO_TRAJECTORY}`);
    const done = (await agent.invoke({ goal: "Add /health to both services and the dashboard" }, cfg("demo"))) as { status: string; summary: string | null };
    expect(done.status).toBe("finished");
    expect(done.summary).toMatch(/health/i);
    const final = readTree(ws);
    expect(final).not.toEqual(original);

    // The checkpoint before step 4's action: an edit_file whose oldText only the files of that time have.
    const history = [];
    for await (const s of agent.getStateHistory(cfg("demo"))) history.push(s);
    const early = history.findLast((s) => s.next.includes("act") && (s.values as TaskStateValue).step === 4)!;
    const ev = early.values as TaskStateValue;
    expect(ev.workspaceRev).not.toBeNull();
    const before = (await rt.ledger.list("demo")).length;

    const again = (await agent.invoke(null, cfg("demo", String(early.config.configurable?.checkpoint_id)))) as { status: string };
    expect(again.status).toBe("finished");
    // Before the action ran, the files were exactly that checkpoint's revision (not the finished run's).
    expect(restoredTrees).toHaveLength(1);
    expect(restoredTrees[0]).toEqual(revisionTree(rt, ev.workspaceRev!));
    expect(restoredTrees[0]).not.toEqual(final);
    // So the edit applied (on the finished run's files its oldText is gone), and the run ends where it ended.
    const head = (await agent.getState(cfg("demo"))).values as TaskStateValue;
    const branch = await rt.ledger.branch(head.ledgerHead);
    const travel = branch.filter((e): e is LedgerEvent<"time_travel"> => e.type === "time_travel");
    expect(travel).toHaveLength(1);
    expect(travel[0]!.payload).toMatchObject({ kind: "restore", revision: ev.workspaceRev, savedRevision: null });
    // The branch is the checkpoint's own history, then the restore, then only new events.
    const own = await rt.ledger.branch(ev.ledgerHead);
    const at = branch.indexOf(travel[0]!);
    expect(branch.slice(0, at).map((e) => e.id)).toEqual(own.map((e) => e.id));
    expect(branch.slice(at + 1).every((e) => e.seq > before)).toBe(true);
    const stepFour = branch
      .slice(at + 1)
      .find((e): e is LedgerEvent<"environment_feedback"> => e.type === "environment_feedback" && e.payload.tool === "edit_file");
    expect(stepFour?.payload.status).toBe("ok");
    expect(readTree(ws)).toEqual(final);
    // The registry knows the run, started by a script, with its checkpoints in the state database.
    expect(listRuns(rt.db).find((r) => r.thread === "demo")).toMatchObject({ origin: "script", checkpointsIn: "state-db", status: "finished" });
  }, 180_000);

  it("an updateState fork restores the files, saves edits made outside the run as a revision first, and each fork sees only its own branch", async () => {
    const ws = tempWorkspace(undefined, { "notes.md": "keep\n" });
    const traj = path.join(tempWorkspace(), "probe.json");
    const call = (command: string) => ({ tool_calls: [{ name: "run_command", args: { command } }] });
    fs.writeFileSync(
      traj,
      JSON.stringify({
        decide: [
          call("echo one > a.txt"),
          call("echo two >> a.txt"),
          // What a.txt holds when this action runs is what it copies.
          call("cp a.txt seen.txt; echo three >> a.txt"),
          { tool_calls: [{ name: "finish", args: { summary: "probed" } }] },
        ],
      }),
    );
    const { rt, agent, restoredTrees } = await scriptAgent(ws, `scripted:${traj}`);
    expect(((await agent.invoke({ goal: "probe" }, cfg("p"))) as { status: string }).status).toBe("finished");
    expect(readTree(ws)).toMatchObject({ "a.txt": "one\ntwo\nthree\n", "seen.txt": "one\ntwo\n" });
    const firstRunEvents = await rt.ledger.list("p");

    // The user edits the workspace after the run; a script then forks from before step 3's action.
    fs.writeFileSync(path.join(ws, "a.txt"), "a user's edit\n");
    fs.rmSync(path.join(ws, "seen.txt"));
    const history = [];
    for await (const s of agent.getStateHistory(cfg("p"))) history.push(s);
    const target = history.findLast((s) => s.next.includes("act") && (s.values as TaskStateValue).step === 3)!;
    const forkCfg = await agent.updateState(target.config, { failureStreak: 0 });
    expect(((await agent.invoke(null, { ...cfg("p"), configurable: forkCfg.configurable })) as { status: string }).status).toBe("finished");

    // Files: the action saw the checkpoint's a.txt, not the user's edit nor the finished run's.
    expect(readTree(ws)).toEqual({ "a.txt": "one\ntwo\nthree\n", "seen.txt": "one\ntwo\n", "notes.md": "keep\n" });
    expect(restoredTrees[0]).toMatchObject({ "a.txt": "one\ntwo\n", "notes.md": "keep\n" });
    // The user's edit is not lost: saved as a revision, named in the ledger.
    const head = (await agent.getState(cfg("p"))).values as TaskStateValue;
    const branch = await rt.ledger.branch(head.ledgerHead);
    const travel = branch.find((e): e is LedgerEvent<"time_travel"> => e.type === "time_travel")!;
    expect(travel.payload.kind).toBe("restore");
    expect(travel.payload.savedRevision).toBeTruthy();
    expect(rt.revisions.readFile(travel.payload.savedRevision!, "a.txt").toString("utf8")).toBe("a user's edit\n");
    expect(rt.revisions.files(travel.payload.savedRevision!).has("seen.txt")).toBe(false);
    // Ledger: the fork's branch holds none of the abandoned future (the first run's step 3 and after).
    const abandoned = firstRunEvents.filter((e) => e.seq > firstRunEvents.find((x) => x.id === (target.values as TaskStateValue).ledgerHead)!.seq);
    const onFork = new Set(branch.map((e) => e.id));
    expect(abandoned.length).toBeGreaterThan(3);
    expect(abandoned.some((e) => onFork.has(e.id))).toBe(false);
    // Two restores would mean the workspace was moved twice: once is right.
    expect(restoredTrees).toHaveLength(1);
  }, 180_000);
});
