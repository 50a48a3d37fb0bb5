import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, demoRun, jsonLines } from "../helpers/cli.js";
import { cleanupTemp, readTree, tempWorkspace } from "../helpers/workspace.js";

afterAll(() => cleanupTemp());

describe("time travel, search and storage through the CLI, on the demo run", () => {
  let ws: string;
  let thread: string;
  let finalTree: Record<string, string>;
  let history: Array<{ checkpointId: string; next: string[]; agentStep: number | null }>;
  beforeAll(() => {
    ({ ws, thread } = demoRun());
    finalTree = readTree(ws);
    history = jsonLines(cli(["history", thread, "-w", ws, "--json"]).stdout);
  });

  const beforeAct = (step: number) => history.filter((h) => h.agentStep === step && h.next.includes("act")).at(-1)!.checkpointId;

  it("history --step N gives the checkpoint before agent step N acted, and fork commands that run as printed from any directory", () => {
    const json = jsonLines<{ checkpointId: string; agentStep: number; next: string[] }>(cli(["history", thread, "-w", ws, "--step", "4", "--json"]).stdout);
    expect(json).toHaveLength(1);
    expect(json[0]).toMatchObject({ agentStep: 4, next: ["act"], checkpointId: beforeAct(4) });
    const human = cli(["history", thread, "-w", ws, "--step", "4"]);
    expect(human.stdout).toMatch(/step {3}4 {2}before act/);
    const fork = /^fork there: +(.+)$/m.exec(human.stdout)![1]!;
    // As printed: node <bin> fork ... -w <abs>; run from / with no other help.
    const [node, bin, ...args] = fork.split(" ");
    expect(node).toBe("node");
    expect(path.isAbsolute(bin!)).toBe(true);
    const r = cli([...args, "--json"], { cwd: "/" });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ fromThread: thread, fromCheckpoint: beforeAct(4) });
    // diff without --from/--to is the whole run: the same as from its first checkpoint to its latest.
    const whole = JSON.parse(cli(["diff", thread, "-w", ws, "--stat", "--json"]).stdout);
    const explicit = JSON.parse(
      cli(["diff", thread, "-w", ws, "--stat", "--json", "--from", history.at(-1)!.checkpointId, "--to", history[0]!.checkpointId]).stdout,
    );
    expect(whole.stat.length).toBeGreaterThan(0);
    expect(whole).toEqual(explicit);
    const missing = cli(["history", thread, "-w", ws, "--step", "99"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/no checkpoint before agent step 99 acted in this run: its agent steps are 1\.\.\d+/);
  });

  it("diff --stat between two checkpoints names the files the steps changed", () => {
    const r = cli(["diff", thread, "-w", ws, "--from", beforeAct(4), "--to", history[0]!.checkpointId, "--stat", "--json"]);
    expect(r.code, r.stderr).toBe(0);
    const stat = JSON.parse(r.stdout).stat as Array<{ path: string; added: number }>;
    expect(stat.map((s) => s.path).sort()).toEqual(["dashboard/aggregate.js", "services/orders/server.js", "services/users/server.js"]);
    const unified = cli(["diff", thread, "-w", ws, "--from", beforeAct(7), "--to", beforeAct(8)]);
    expect(unified.stdout).toContain("+++ b/services/orders/server.js");
    expect(unified.stdout).toMatch(/^\+.*\/health/m);
  });

  it("replay reproduces the run with zero model calls, by default in a new temp directory it leaves for the user", () => {
    const r = cli(["replay", thread, "-w", ws, "--json", "-q"]);
    expect(r.code, r.stderr).toBe(0);
    const rep = JSON.parse(r.stdout);
    try {
      expect(path.dirname(rep.workspace)).toBe(os.tmpdir());
      expect(path.basename(rep.workspace)).toMatch(/^ledgerloop-replay-/);
      expect(rep).toMatchObject({ status: "finished", recordedStatus: "finished", modelCalls: 0, divergences: [] });
      expect(readTree(rep.workspace)).toEqual(finalTree);
    } finally {
      fs.rmSync(rep.workspace, { recursive: true, force: true });
    }
  });

  it("replay from a mid-run checkpoint reports no divergence and exits 0", () => {
    const r = cli(["replay", thread, "-w", ws, "--into", path.join(tempWorkspace(), "replay"), "--from", beforeAct(7), "--json", "-q"]);
    expect(r.code, r.stderr).toBe(0);
    const rep = JSON.parse(r.stdout);
    expect(rep).toMatchObject({ status: "finished", recordedStatus: "finished", modelCalls: 0, divergences: [] });
    expect(readTree(rep.workspace)).toEqual(finalTree);
  });

  it("search finds code by meaning of words and identifiers, paths relative and best first", () => {
    const idx = cli(["index", "-w", ws, "--json"]);
    expect(idx.code, idx.stderr).toBe(0);
    const r = cli(["search", "aggregate service health probe", "-w", ws, "-k", "3", "--json"]);
    expect(r.code, r.stderr).toBe(0);
    const { results } = JSON.parse(r.stdout) as { results: Array<{ path: string; score: number; sources: Record<string, number> }> };
    expect(results[0]!.path).toBe("dashboard/aggregate.js");
    for (let i = 1; i < results.length; i++) expect(results[i - 1]!.score).toBeGreaterThanOrEqual(results[i]!.score);
    expect(Object.keys(results[0]!.sources).length).toBeGreaterThan(0);
    const events = JSON.parse(cli(["search", "orders health failing", "-w", ws, "--scope", "events", "--json"]).stdout).results;
    expect(events.length).toBeGreaterThan(0);
  });

  it("rewind restores the files of a checkpoint (search follows them), and resume finishes the run again", () => {
    const hits = (q: string) =>
      (JSON.parse(cli(["search", q, "-w", ws, "--json"]).stdout).results as Array<{ path: string; preview: string }>).filter(
        (h) => h.path === "dashboard/aggregate.js",
      );
    // Search answers from what the files hold (n-grams, symbols, paths; no vectors without a running
    // Chroma server): the fork above, run as printed, may have left the workspace at an earlier step.
    const aggregate = () => fs.readFileSync(path.join(ws, "dashboard/aggregate.js"), "utf8");
    expect(hits("AbortSignal timeout probe").length > 0).toBe(aggregate().includes("AbortSignal"));
    const r = cli(["rewind", thread, "-w", ws, "--to", beforeAct(5).slice(0, 20), "--json"]);
    expect(r.code, r.stderr).toBe(0);
    expect(fs.readFileSync(path.join(ws, "dashboard/aggregate.js"), "utf8")).toContain("not implemented");
    // The index follows the branch: the implementation the rewind undid is no longer found.
    expect(
      hits("AbortSignal timeout probe")
        .map((h) => h.preview)
        .join("\n"),
    ).not.toContain("AbortSignal");
    fs.writeFileSync(path.join(ws, "scratch.txt"), "mine\n");
    const refused = cli(["rewind", thread, "-w", ws, "--to", beforeAct(5)]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/edits made outside the run .*\+scratch\.txt.*--force/);
    fs.rmSync(path.join(ws, "scratch.txt"));
    const resumed = cli(["resume", thread, "-w", ws, "--json", "-q"]);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ status: "finished" });
    expect(readTree(ws)).toEqual(finalTree);
  });

  it("fork --into gives a new thread its own copy of files and state", () => {
    const into = path.join(tempWorkspace(), "fork");
    const r = cli(["fork", thread, "-w", ws, "--at", beforeAct(3), "--into", into, "--thread", "forked", "--json"]);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ thread: "forked", fromThread: thread });
    expect(fs.readFileSync(path.join(into, "dashboard/aggregate.js"), "utf8")).toContain("not implemented");
    const threads = jsonLines<{ thread: string }>(cli(["threads", "-w", into, "--json"]).stdout);
    expect(threads.map((t) => t.thread)).toEqual(["forked"]);
    const resumed = cli(["resume", "forked", "-w", into, "--json", "-q"]);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(readTree(into)).toEqual(finalTree);
  });

  it("gc --keep-last shrinks the state and keeps the run resumable and replayable; stats reports sizes", () => {
    const before = JSON.parse(cli(["stats", "-w", ws, "--json"]).stdout);
    expect(before.checkpoints.count).toBeGreaterThan(40);
    expect(before.ledger.events).toBeGreaterThan(50);
    expect(before.revisions.count).toBeGreaterThan(3);
    expect(before.index.bytes).toBeGreaterThan(0);
    const gc = JSON.parse(cli(["gc", "-w", ws, "--keep-last", "5", "--json"]).stdout);
    expect(gc.checkpointsDeleted).toBeGreaterThan(20);
    expect(gc.bytesAfter).toBeLessThan(gc.bytesBefore);
    const after = JSON.parse(cli(["stats", "-w", ws, "--json"]).stdout);
    expect(after.checkpoints.count).toBe(before.checkpoints.count - gc.checkpointsDeleted);
    expect(after.ledger.events).toBe(before.ledger.events);
    const replay = JSON.parse(cli(["replay", thread, "-w", ws, "--into", path.join(tempWorkspace(), "replay"), "--json", "-q"]).stdout);
    expect(replay.divergences).toEqual([]);
  });
});
