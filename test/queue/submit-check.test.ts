import fs from "node:fs";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { afterAll, expect, it } from "vitest";
import { handleSubmit, type SubmitArgs } from "../../src/cli/submit.js";
import { describePg, pgQuery, useTestDatabase } from "../helpers/postgres.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";
import { writeTrajectory } from "./queue-fixtures.js";

afterAll(() => cleanupTemp());

function gitRepo(): { dir: string; head: string } {
  const dir = tempWorkspace(undefined, { "README.md": "hello\n" });
  const g = (...a: string[]) => execFileSync("git", ["-c", "user.email=t@e", "-c", "user.name=t", ...a], { cwd: dir, encoding: "utf8" });
  g("init", "-q", "-b", "main");
  g("add", "-A");
  g("commit", "-qm", "start");
  g("tag", "v1");
  return { dir, head: g("rev-parse", "HEAD").trim() };
}

describePg("submit checks what it can before queueing; --tasks queues a batch whole or not at all", () => {
  const db = useTestDatabase("submitcheck");
  const queued = async () => {
    // No table at all when nothing reached the database (every check runs before it is opened).
    if (!(await pgQuery<{ t: string | null }>(db.url, "SELECT to_regclass('ll_submissions') AS t"))[0]!.t) return [];
    return (await pgQuery<{ thread_id: string }>(db.url, "SELECT thread_id FROM ll_submissions ORDER BY thread_id")).map((r) => r.thread_id);
  };
  const failure = async (task: string | undefined, args: SubmitArgs) => {
    try {
      await handleSubmit(task, { state: db.url, ...args });
    } catch (err) {
      return (err as Error).message;
    }
    throw new Error(`submit ${JSON.stringify(args)} was accepted`);
  };

  it("each unusable flag is refused with an error naming it, and nothing is queued", async () => {
    const scratch = tempWorkspace();
    const model = `scripted:${writeTrajectory(scratch, 1)}`;
    const ws = tempWorkspace(undefined, { "a.txt": "a\n" });
    const { dir: repo } = gitRepo();
    const notJson = path.join(scratch, "broken.json");
    fs.writeFileSync(notJson, "{ not json");
    const missing = path.join(scratch, "gone");
    expect(await failure("x", { workspace: missing, model })).toBe(
      `--workspace ${missing} does not exist on this machine; give a directory every worker can read and write`,
    );
    expect(await failure("x", { workspace: path.join(ws, "a.txt"), model })).toBe(`--workspace ${path.join(ws, "a.txt")} is not a directory`);
    expect(await failure("x", { repo: missing, model })).toBe(`--repo ${missing} does not exist on this machine`);
    expect(await failure("x", { repo: "http://127.0.0.1:9/nope.git", model })).toMatch(
      /^--repo http:\/\/127\.0\.0\.1:9\/nope\.git is not reachable from this machine: fatal: unable to access .*/,
    );
    expect(await failure("x", { repo, ref: "no-such-branch", model })).toBe(`--ref no-such-branch is not a branch, tag or commit of ${repo}`);
    expect(await failure("x", { repo, ref: "deadbeefdeadbeef", model })).toBe(`--ref deadbeefdeadbeef is not a branch, tag or commit of ${repo}`);
    expect(await failure("x", { workspace: ws, model: "claude:opus" })).toBe(
      '--model "claude:opus" is not a model ledgerloop knows: use openai:<model-name> or scripted:<trajectory.json>',
    );
    expect(await failure("x", { workspace: ws, model: "scripted:nope/t.json" })).toBe(
      `--model scripted:nope/t.json: the trajectory file ${path.resolve("nope/t.json")} does not exist`,
    );
    expect(await failure("x", { workspace: ws, model: `scripted:${notJson}` })).toMatch(
      new RegExp(`^--model scripted:${notJson}: cannot read trajectory ${notJson}: `),
    );
    expect(await failure("x", { workspace: ws, model, summaryModel: "gpt4" })).toBe(
      '--summary-model "gpt4" is not a model ledgerloop knows: use openai:<model-name> or scripted:<trajectory.json>',
    );
    expect(await queued()).toEqual([]);
  });

  it("what workers must find is stored absolute; a branch, a tag and a commit of a local repository resolve", async () => {
    const { dir: repo, head } = gitRepo();
    const scratch = tempWorkspace();
    const traj = writeTrajectory(scratch, 1);
    const ws = tempWorkspace();
    const cwd = process.cwd();
    process.chdir(scratch);
    try {
      await handleSubmit("rel", { state: db.url, workspace: path.relative(scratch, ws), model: `scripted:${path.basename(traj)}`, thread: "rel" });
    } finally {
      process.chdir(cwd);
    }
    for (const [thread, ref] of [
      ["branch", "main"],
      ["tag", "v1"],
      ["commit", head.slice(0, 12)],
    ] as const)
      await handleSubmit("r", { state: db.url, repo, ref, model: `scripted:${traj}`, thread });
    // --no-check: a repository only the workers reach is queued as given (their release-and-retry handles it).
    await handleSubmit("r", { state: db.url, repo: "/only/on/workers", model: `scripted:${traj}`, thread: "unchecked", check: false });
    const rows = await pgQuery<{ thread_id: string; source: string; settings: string }>(
      db.url,
      "SELECT thread_id, source, settings FROM ll_submissions ORDER BY thread_id",
    );
    const byThread = Object.fromEntries(rows.map((r) => [r.thread_id, { source: JSON.parse(r.source), model: JSON.parse(r.settings).model }]));
    expect(byThread.rel).toEqual({ source: { kind: "workspace", path: ws }, model: `scripted:${traj}` });
    expect(byThread.commit!.source).toEqual({ kind: "repo", repo, ref: head.slice(0, 12) });
    expect(byThread.unchecked!.source).toEqual({ kind: "repo", repo: "/only/on/workers" });
    expect(Object.keys(byThread).sort()).toEqual(["branch", "commit", "rel", "tag", "unchecked"]);
  });

  it("--tasks reports every bad line and queues nothing; a good file is queued whole, each task over the flags", async () => {
    const scratch = tempWorkspace();
    const traj = writeTrajectory(scratch, 1);
    const { dir: repo } = gitRepo();
    const ws = tempWorkspace();
    const before = await queued();
    const bad = path.join(scratch, "bad.jsonl");
    fs.writeFileSync(
      bad,
      [
        JSON.stringify({ task: "fine", thread: "b1" }),
        JSON.stringify({ task: "bad ref", thread: "b2", repo, ref: "nope" }),
        "",
        "{ broken",
        JSON.stringify({ task: "odd key", thread: "b4", colour: "red" }),
        JSON.stringify({ task: "again", thread: "b1" }),
      ].join("\n"),
    );
    const msg = await failure(undefined, { tasks: bad, workspace: ws, model: `scripted:${traj}` });
    expect(msg.split("\n")).toEqual([
      `--tasks ${bad}: nothing was queued; 4 task(s) to fix:`,
      `  line 2: --ref nope is not a branch, tag or commit of ${repo}`,
      expect.stringMatching(/^ {2}line 4: not JSON: /),
      "  line 5: unknown key(s) colour: a task sets task, thread, repo, ref, workspace, model, summaryModel, maxSteps, budget, priority, setup",
      '  line 6: thread "b1" is also given on line 1',
    ]);
    expect(await queued()).toEqual(before);

    const good = path.join(scratch, "good.json");
    fs.writeFileSync(
      good,
      JSON.stringify([
        { task: "one", thread: "g1" },
        { task: "two", thread: "g2", repo, ref: "v1", priority: 3 },
        { task: "three", thread: "g3", maxSteps: 4 },
      ]),
    );
    const out = await handleSubmit(undefined, { state: db.url, tasks: good, workspace: ws, model: `scripted:${traj}`, maxSteps: 9 });
    expect(out.map((o) => o.thread)).toEqual(["g1", "g2", "g3"]);
    const rows = await pgQuery<{ thread_id: string; source: string; settings: string; priority: number; state: string }>(
      db.url,
      "SELECT s.thread_id, s.source, s.settings, l.priority, l.state FROM ll_submissions s JOIN ll_run_leases l USING (thread_id) WHERE s.thread_id LIKE 'g%' ORDER BY 1",
    );
    expect(rows.map((r) => [r.thread_id, JSON.parse(r.source).kind, JSON.parse(r.settings).maxSteps, r.priority, r.state])).toEqual([
      ["g1", "workspace", 9, 0, "queued"],
      ["g2", "repo", 9, 3, "queued"],
      ["g3", "workspace", 4, 0, "queued"],
    ]);
    // A batch whose thread is taken already: none of it is queued.
    fs.writeFileSync(
      good,
      JSON.stringify([
        { task: "new", thread: "g4" },
        { task: "taken", thread: "g1" },
      ]),
    );
    expect(await failure(undefined, { tasks: good, workspace: ws, model: `scripted:${traj}` })).toBe(
      'thread "g1" already exists in the state database; pick another --thread',
    );
    expect(await queued()).not.toContain("g4");
  });
});
