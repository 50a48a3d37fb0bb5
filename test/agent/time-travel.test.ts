import fs from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { checkpointsOf, comparable, fork, replay, rewind, TimeTravelError } from "../../src/runs/time-travel.js";
import { collectGarbage } from "../../src/ledger/maintenance.js";
import { loadTrajectory, ScriptedModel } from "../../src/models/scripted.js";
import { createRuntime, type Runtime } from "../../src/runtime.js";
import type { LedgerEvent, TaskStateValue } from "../../src/state.js";
import { testAgent, type TestAgent } from "../helpers/agent.js";
import { DEMO_TRAJECTORY, DEMO_WORKSPACE, cleanupTemp, readTree, tempWorkspace } from "../helpers/workspace.js";

let agents: TestAgent[] = [];
const extra: Runtime[] = [];
afterEach(async () => {
  await Promise.all(agents.map((a) => a.close()));
  await Promise.all(extra.splice(0).map((r) => r.close()));
  agents = [];
  cleanupTemp();
});

/** Where a replay puts its workspace: inside a test temp dir, so cleanupTemp removes it (replay's own default is a new temp dir it leaves for the user). */
const scratch = () => path.join(tempWorkspace(), "replay");
const call = (name: string, args: Record<string, unknown>) => ({ tool_calls: [{ name, args }] });
const values = (t: { checkpoint: { channel_values: unknown } }) => t.checkpoint.channel_values as TaskStateValue;

/** The checkpoint at which step `step`'s actions are about to run (the older of the two holding them). */
async function beforeAct(rt: Runtime, thread: string, step: number) {
  return (await checkpointsOf(rt, thread)).findLast((t) => values(t).step === step && values(t).pendingActions.length > 0 && t.metadata?.source === "loop")!;
}

const SHELL_SCRIPT = {
  decide: [
    call("run_command", { command: "echo fresh > untracked.txt" }),
    call("run_command", { command: "sed -i 's/one/ONE/' a.txt" }),
    call("run_command", { command: "rm b.txt" }),
    call("run_command", { command: "mv c.txt d.txt" }),
    call("finish", { summary: "done" }),
  ],
};
const FILES = { "a.txt": "one\ntwo\n", "b.txt": "bee\n", "c.txt": "sea\n" };

async function shellRun(): Promise<{ a: TestAgent; ws: string; original: Record<string, string>; final: Record<string, string> }> {
  const ws = tempWorkspace(undefined, FILES);
  const original = readTree(ws);
  const a = await testAgent(ws, SHELL_SCRIPT);
  agents.push(a);
  expect((await a.run("shell edits")).status).toBe("finished");
  return { a, ws, original, final: readTree(ws) };
}

describe("rewind", () => {
  it("restores files changed by shell commands (edit, delete, rename, new untracked file), moves the ledger branch, and resumes from there", async () => {
    const { a, ws, original, final } = await shellRun();
    expect(final).toEqual({ "a.txt": "ONE\ntwo\n", "d.txt": "sea\n", "untracked.txt": "fresh\n" });
    const eventsBefore = await a.events();

    // Back to before step 3's action (the delete): step 1 and 2's changes stay, 3 and 4's are undone.
    const mid = await beforeAct(a.rt, "t1", 3);
    const r = await rewind(a.rt, "t1", mid.checkpoint.id.slice(0, 30));
    expect(readTree(ws)).toEqual({ "a.txt": "ONE\ntwo\n", "b.txt": "bee\n", "c.txt": "sea\n", "untracked.txt": "fresh\n" });
    expect(r.restored).toEqual({ created: ["b.txt", "c.txt"], modified: [], deleted: ["d.txt"] });
    const head = (await checkpointsOf(a.rt, "t1"))[0]!;
    expect(head.checkpoint.id).toBe(r.checkpointId);
    expect(head.parentConfig?.configurable?.checkpoint_id).toBe(mid.checkpoint.id);
    // The ledger view of the run is now that branch, ending with the rewind itself.
    const branch = await a.rt.ledger.branch(values(head).ledgerHead);
    expect(branch.at(-1)).toMatchObject({ type: "time_travel", payload: { kind: "rewind", toCheckpoint: mid.checkpoint.id } });
    const after = new Set(branch.map((e) => e.id));
    const abandoned = eventsBefore.filter((e) => e.seq > branch.at(-2)!.seq);
    expect(abandoned.length).toBeGreaterThan(0);
    expect(abandoned.some((e) => after.has(e.id))).toBe(false);

    // Back to the very start, then resume: the run redoes its work and ends where it ended before.
    await rewind(a.rt, "t1", (await checkpointsOf(a.rt, "t1")).at(-1)!.checkpoint.id);
    expect(readTree(ws)).toEqual(original);
    expect((await a.run(null)).status).toBe("finished");
    expect(readTree(ws)).toEqual(final);
    // The abandoned branches are still in the ledger, inspectable, and a later rewind can go to them.
    expect((await a.events()).length).toBeGreaterThan(eventsBefore.length * 2);
    const oldBranchCp = (await checkpointsOf(a.rt, "t1")).find((t) => t.checkpoint.id === mid.checkpoint.id)!;
    await rewind(a.rt, "t1", oldBranchCp.checkpoint.id);
    expect(readTree(ws)["b.txt"]).toBe("bee\n");
  });

  it("can take the demo run to every one of its checkpoints with files, ledger and graph state consistent", async () => {
    const ws = tempWorkspace(DEMO_WORKSPACE);
    const a = await testAgent(ws, loadTrajectory(DEMO_TRAJECTORY));
    agents.push(a);
    await a.run("demo");
    const { createCodingAgent } = await import("../../src/agent/graph.js");
    const agent = createCodingAgent({ runtime: a.rt });
    const history = [];
    for await (const snap of agent.getStateHistory({ configurable: { thread_id: "t1" } })) history.push(snap);
    expect(history.length).toBeGreaterThan(40);
    const spec = (await a.events()).find((e): e is LedgerEvent<"task_spec"> => e.type === "task_spec")!;
    for (const target of history) {
      const id = String(target.config.configurable?.checkpoint_id);
      const r = await rewind(a.rt, "t1", id);
      const tv = target.values as TaskStateValue;
      // Files: exactly the revision the checkpoint names (or the run's start, before the first one).
      const rev = tv.workspaceRev ?? spec.payload.revision!;
      expect(r.revision).toBe(rev);
      const expected = Object.fromEntries([...a.rt.revisions.files(rev).keys()].map((f) => [f, a.rt.revisions.readFile(rev, f).toString("utf8")]));
      expect(readTree(ws)).toEqual(expected);
      // Graph: the new head is a child of the target and will run the same next node.
      const head = await agent.getState({ configurable: { thread_id: "t1" } });
      expect(head.parentConfig?.configurable?.checkpoint_id).toBe(id);
      // (The input checkpoint's pending __start__ task is its route: plan.)
      expect(head.next).toEqual(target.next[0] === "__start__" ? ["plan"] : target.next);
      // Ledger: the target's branch, then the rewind itself.
      const branch = await a.rt.ledger.branch((head.values as TaskStateValue).ledgerHead);
      const before = tv.ledgerHead ? await a.rt.ledger.branch(tv.ledgerHead) : [];
      expect(branch.slice(0, -1).map((e) => e.id)).toEqual(before.map((e) => e.id));
      expect(branch.at(-1)).toMatchObject({ type: "time_travel", payload: { kind: "rewind", toCheckpoint: id } });
    }
  });

  it("refuses to overwrite edits made outside the run, and with force saves them as a revision first", async () => {
    const { a, ws } = await shellRun();
    fs.writeFileSync(path.join(ws, "a.txt"), "hand edit\n");
    fs.writeFileSync(path.join(ws, "notes.md"), "mine\n");
    const start = (await checkpointsOf(a.rt, "t1")).at(-1)!;
    await expect(rewind(a.rt, "t1", start.checkpoint.id)).rejects.toThrow(TimeTravelError);
    await expect(rewind(a.rt, "t1", start.checkpoint.id)).rejects.toThrow(
      /edits made outside the run since its last revision \((?=.*~a\.txt)(?=.*\+notes\.md).*--force/,
    );
    expect(fs.readFileSync(path.join(ws, "a.txt"), "utf8")).toBe("hand edit\n");
    const r = await rewind(a.rt, "t1", start.checkpoint.id, { force: true });
    expect(readTree(ws)).toEqual(FILES);
    // The hand edits are not lost: they are a revision of their own.
    expect(r.savedRevision).toBeTruthy();
    expect(a.rt.revisions.readFile(r.savedRevision!, "notes.md").toString()).toBe("mine\n");
    const ev = (await a.events()).at(-1) as LedgerEvent<"time_travel">;
    expect(ev.payload.savedRevision).toBe(r.savedRevision);
  });

  it("names an unknown checkpoint", async () => {
    const { a } = await shellRun();
    await expect(rewind(a.rt, "t1", "nope-nope")).rejects.toThrow(/no checkpoint nope-nope in thread t1/);
  });
});

describe("fork", () => {
  it("continues two branches apart, each seeing only its own ledger history and its own files", async () => {
    const ws = tempWorkspace(undefined, FILES);
    const a = await testAgent(ws, SHELL_SCRIPT);
    agents.push(a);
    await a.run("shell edits");
    const at = await beforeAct(a.rt, "t1", 2);
    const copyDir = path.join(tempWorkspace(), "fork");
    // The fork gets its own workspace and its own script from the fork point on.
    const forkModel = new ScriptedModel({
      // Turns 0 and 1 were taken before the fork point; the fork answers from turn 2 on.
      decide: [
        call("list_files", {}),
        call("list_files", {}),
        call("run_command", { command: "echo fork > only-fork.txt" }),
        call("finish", { summary: "fork done" }),
      ],
    });
    const f = await fork(a.rt, "t1", at.checkpoint.id, {
      newThread: "t1-fork",
      workspace: copyDir,
      runtime: (dir) => createRuntime({ workspace: dir, model: "scripted:fork", retrieval: "lexical" }, { model: forkModel }),
    });
    extra.push(f.runtime);
    // The fork starts its own revision line (a shared Chroma keeps its vectors apart).
    expect((await f.runtime.runs.get("t1-fork"))?.settings?.vectorLine).toBe("t1-fork");
    // The copy is the workspace as it was at the fork point.
    expect(readTree(f.workspace)).toEqual({ ...FILES, "untracked.txt": "fresh\n" });
    const { createCodingAgent } = await import("../../src/agent/graph.js");
    const forkAgent = createCodingAgent({ runtime: f.runtime });
    await forkAgent.invoke(null, { configurable: { thread_id: "t1-fork" }, durability: "sync", recursionLimit: 100 });
    const forkState = (await forkAgent.getState({ configurable: { thread_id: "t1-fork" } })).values as TaskStateValue;
    expect(forkState.status).toBe("finished");
    expect(readTree(f.workspace)["only-fork.txt"]).toBe("fork\n");
    expect(readTree(ws)["only-fork.txt"]).toBeUndefined();

    const forkBranch = await f.runtime.ledger.branch(forkState.ledgerHead);
    const origBranch = await a.rt.ledger.branch(((await checkpointsOf(a.rt, "t1"))[0]!.checkpoint.channel_values as TaskStateValue).ledgerHead);
    const fp = forkBranch.findIndex((e) => e.type === "time_travel");
    expect(forkBranch[fp]!.payload).toMatchObject({ kind: "fork", fromThread: "t1", fromCheckpoint: at.checkpoint.id });
    // The fork's history up to the fork point mirrors the original's, as its own copies...
    expect(forkBranch.slice(0, fp).map((e) => e.type)).toEqual(origBranch.slice(0, fp).map((e) => e.type));
    expect(forkBranch.every((e) => e.threadId === "t1-fork")).toBe(true);
    // ...and after it, each branch has only its own actions.
    const cmds = (es: LedgerEvent[]) =>
      es.filter((e) => e.type === "agent_action").map((e) => (e.payload as { args: { command?: string } }).args.command ?? "");
    expect(cmds(forkBranch)).toContain("echo fork > only-fork.txt");
    expect(cmds(forkBranch)).not.toContain("rm b.txt");
    expect(cmds(origBranch)).toContain("rm b.txt");
    expect(cmds(origBranch)).not.toContain("echo fork > only-fork.txt");
    // The original thread is untouched by the fork.
    expect((await a.rt.ledger.list("t1")).some((e) => e.type === "time_travel")).toBe(false);
  });
});

describe("replay and gc", () => {
  it("replays the demo run with zero model calls and no divergence", async () => {
    const ws = tempWorkspace(DEMO_WORKSPACE);
    const a = await testAgent(ws, loadTrajectory(DEMO_TRAJECTORY));
    agents.push(a);
    expect((await a.run("demo")).status).toBe("finished");
    const callsBefore = a.model.requests.length;
    const r = await replay(a.rt, "t1", { workspace: scratch() });
    extra.push(r.runtime);
    expect(a.model.requests.length).toBe(callsBefore); // the scripted model was never asked again
    expect(r.modelCalls).toBe(0);
    expect(r.divergences).toEqual([]);
    expect(r).toMatchObject({ status: "finished", recordedStatus: "finished", steps: 10 });
    const recorded = (await a.events()).filter((e) => e.type === "model_call").length;
    expect(r.replayedTurns).toBe(recorded);
    expect(readTree(r.workspace)).toEqual(readTree(ws));
  });

  it("does not count wall-clock times a command prints as a divergence", async () => {
    const ws = tempWorkspace(undefined, { "n.txt": "1\n" });
    const a = await testAgent(ws, {
      decide: [call("run_command", { command: "date -u +%FT%T.%NZ; date; date +%T.%N; cat n.txt" }), call("finish", { summary: "x" })],
    });
    agents.push(a);
    await a.run("clock");
    const r = await replay(a.rt, "t1", { workspace: scratch() });
    extra.push(r.runtime);
    expect(r.divergences).toEqual([]);
    // The times did differ (nanoseconds), and the rest of the output is still compared.
    const outputs = async (rt: typeof a.rt, thread: string) =>
      (await rt.ledger.list(thread, { types: ["environment_feedback"] })).map((e) => String((e.payload as { output?: string }).output));
    const [rec] = await outputs(a.rt, "t1");
    const [rep] = await outputs(r.runtime, r.thread);
    expect(rec).not.toBe(rep);
    expect(rec).toMatch(/^1$/m);
    expect(comparable({ payload: { tool: "run_command", status: "ok", output: rec!.replace(/^1$/m, "2") } } as never, ws)).not.toEqual(
      comparable({ payload: { tool: "run_command", status: "ok", output: rec! } } as never, ws),
    );
  });

  it("strips the recorded run's workspace path, not the replaying command's (a run made elsewhere)", async () => {
    const ws = tempWorkspace(undefined, { "n.txt": "1\n" });
    const a = await testAgent(ws, { decide: [call("run_command", { command: 'pwd; ls "$PWD"' }), call("finish", { summary: "x" })] });
    agents.push(a);
    await a.run("where");
    // The same state opened from another directory: as a replay started on another machine, or of a worker's run.
    const elsewhere = await createRuntime({ ...a.rt.settings, workspace: tempWorkspace(), stateDir: a.rt.stateDir }, { model: a.model });
    extra.push(elsewhere);
    const r = await replay(elsewhere, "t1", { workspace: scratch() });
    extra.push(r.runtime);
    expect(r.divergences).toEqual([]);
    const [rec] = (await a.rt.ledger.list("t1", { types: ["environment_feedback"] })).map((e) => String((e.payload as { output?: string }).output));
    expect(rec).toContain(fs.realpathSync(ws));
  });

  it("reports the step where a replay diverges from the recording", async () => {
    // Outside the workspace and outside /tmp (commands get a private /tmp under bwrap).
    const outside = fs.mkdtempSync("/var/tmp/ll-clock-");
    fs.writeFileSync(path.join(outside, "clock.txt"), "tick 1\n");
    const ws = tempWorkspace(undefined, { "n.txt": "1\n" });
    const a = await testAgent(ws, {
      decide: [call("run_command", { command: "cat n.txt" }), call("run_command", { command: `cat ${outside}/clock.txt` }), call("finish", { summary: "x" })],
    });
    agents.push(a);
    await a.run("read");
    // Something outside the workspace changed since the recording: step 2 reads it.
    fs.writeFileSync(path.join(outside, "clock.txt"), "tick 2\n");
    const r = await replay(a.rt, "t1", { workspace: scratch() });
    extra.push(r.runtime);
    expect(r.divergences.map((d) => [d.step, d.tool, d.field])).toEqual([[2, "run_command", "output"]]);
    expect(String(r.divergences[0]!.recorded)).toContain("tick 1");
    expect(String(r.divergences[0]!.replayed)).toContain("tick 2");
    fs.rmSync(outside, { recursive: true, force: true });
  });

  it("replays from a mid-run checkpoint: steps before it are not compared again, later ones are", async () => {
    const outside = fs.mkdtempSync("/var/tmp/ll-clock-");
    fs.writeFileSync(path.join(outside, "clock.txt"), "tick 1\n");
    const ws = tempWorkspace(undefined, { "n.txt": "1\n" });
    // Step 1 prints the workspace path: the copy of its result in the replay's ledger names the
    // original workspace, which once showed up as a false divergence at a step before the start.
    const a = await testAgent(ws, {
      decide: [
        call("run_command", { command: "pwd; cat n.txt" }),
        call("run_command", { command: `pwd; cat ${outside}/clock.txt` }),
        call("finish", { summary: "x" }),
      ],
    });
    agents.push(a);
    await a.run("read");
    const from = (await beforeAct(a.rt, "t1", 2)).checkpoint.id;
    const same = await replay(a.rt, "t1", { from, workspace: scratch() });
    extra.push(same.runtime);
    expect(same.divergences).toEqual([]);
    expect(same.replayedTurns).toBe(1); // only finish's answer: step 2's was already in the copy

    fs.writeFileSync(path.join(outside, "clock.txt"), "tick 2\n");
    const changed = await replay(a.rt, "t1", { from, workspace: scratch() });
    extra.push(changed.runtime);
    expect(changed.divergences.map((d) => [d.step, d.tool, d.field])).toEqual([[2, "run_command", "output"]]);
    expect(String(changed.divergences[0]!.replayed)).toContain("tick 2");
    fs.rmSync(outside, { recursive: true, force: true });
  });

  it("gc prunes old checkpoints and blobs, reclaims space, and keeps branch heads resumable and runs replayable", async () => {
    const { a, ws } = await shellRun();
    await rewind(a.rt, "t1", (await beforeAct(a.rt, "t1", 2)).checkpoint.id);
    const before = await checkpointsOf(a.rt, "t1");
    const report = await collectGarbage(a.rt.db, a.rt.revisions, a.rt.stateDir, { keepLast: 3 });
    const after = await checkpointsOf(a.rt, "t1");
    expect(report.heads).toBe(2);
    expect(report.checkpointsDeleted).toBe(before.length - after.length);
    expect(report.checkpointsDeleted).toBeGreaterThan(10);
    expect(report.bytesAfter).toBeLessThan(report.bytesBefore);
    // Each kept checkpoint's parent is still a kept checkpoint (the chains stay walkable).
    const ids = new Set(after.map((t) => t.checkpoint.id));
    for (const t of after) {
      const p = t.parentConfig?.configurable?.checkpoint_id;
      if (p) expect(ids.has(p)).toBe(true);
    }
    // The head (the rewound branch) resumes to the end...
    expect((await a.run(null)).status).toBe("finished");
    expect(readTree(ws)).toEqual({ "a.txt": "ONE\ntwo\n", "d.txt": "sea\n", "untracked.txt": "fresh\n" });
    // ...and the run still replays from its first checkpoint.
    const r = await replay(a.rt, "t1", { workspace: scratch() });
    extra.push(r.runtime);
    expect(r.divergences).toEqual([]);
  });
});
