import fs from "node:fs";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { inflateRawSync } from "node:zlib";
import { afterAll, expect, it } from "vitest";
import { cliAsync, jsonLines } from "../helpers/cli.js";
import { describePg, pgQuery, useTestDatabase } from "../helpers/postgres.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";
import { nodeOfRequest, startOpenAIStub, stubToolCall, type StubRequestBody } from "../helpers/openai-stub.js";
import { exitOf, spawnWorker, until } from "./queue-fixtures.js";

// `submit --setup`: a --repo run's worker clones afresh at every start and takeover; what git
// ignores is re-created by the declared setup command, and the model is told the run moved.

afterAll(() => cleanupTemp());

function gitRepo(files: Record<string, string>): string {
  const dir = tempWorkspace(undefined, files);
  const g = (...a: string[]) => execFileSync("git", ["-c", "user.email=t@e", "-c", "user.name=t", ...a], { cwd: dir });
  g("init", "-q");
  g("add", "-A");
  g("commit", "-qm", "start");
  return dir;
}

/**
 * `steps` decide steps; odd ones append their key to counter.txt only when the ignored file the
 * setup makes is there (so a key missing after a takeover means the file was missing), even ones
 * write a tracked file.
 */
function needsBuildTrajectory(dir: string, steps: number): string {
  const decide = [];
  for (let k = 1; k <= steps; k++) {
    decide.push(
      k % 2
        ? { content: `step ${k}`, tool_calls: [{ name: "run_command", args: { command: `test -f build/dep.txt && echo a${k} >> counter.txt` } }] }
        : { content: `step ${k}`, tool_calls: [{ name: "write_file", args: { path: `out/f${k}.txt`, content: `written at step ${k}\n` } }] },
    );
  }
  decide.push({ content: "done", tool_calls: [{ name: "finish", args: { summary: `${steps} steps done` } }] });
  const plan = [{ content: "plan", tool_calls: [{ name: "update_plan", args: { subtasks: [{ id: "w", description: "steps", status: "in_progress" }] } }] }];
  const file = path.join(dir, `needs-build-${steps}.json`);
  fs.writeFileSync(file, JSON.stringify({ plan, decide }));
  return file;
}

describePg("submit --setup: a --repo run's ignored files after a move", () => {
  const db = useTestDatabase("setup");

  /** Each decide prompt of the run, in order: its ledger seq and the newest message the model read (the volatile part). */
  const prompts = async (thread: string) => {
    const rows = await pgQuery<{ seq: number; payload: string }>(
      db.url,
      "SELECT seq, payload FROM ll_events WHERE thread_id = $1 AND type = 'context_built' ORDER BY seq",
      [thread],
    );
    const out: Array<{ seq: number; newest: string }> = [];
    for (const r of rows) {
      const ref = (JSON.parse(r.payload) as { promptRef: string }).promptRef;
      const [blob] = await pgQuery<{ data: Buffer }>(db.url, "SELECT data FROM ll_blobs WHERE hash = $1", [ref]);
      const messages = JSON.parse(inflateRawSync(blob!.data).toString("utf8")) as Array<{ role: string; content: string }>;
      out.push({ seq: r.seq, newest: messages.filter((m) => m.role === "user").at(-1)!.content });
    }
    return out;
  };
  const submit = (thread: string, repo: string, model: string, extra: string[]) =>
    cliAsync(["submit", "steps", "--repo", repo, "--state", db.url, "--model", `scripted:${model}`, "--retrieval", "lexical", "--thread", thread, ...extra]);

  it("bad --setup values are refused with one clear line each, nothing queued", async () => {
    const repo = gitRepo({ "README.md": "x\n" });
    const scratch = tempWorkspace();
    const model = needsBuildTrajectory(scratch, 1);
    const tasks = path.join(scratch, "tasks.jsonl");
    fs.writeFileSync(tasks, `${JSON.stringify({ task: "a", repo, setup: "  " })}\n${JSON.stringify({ task: "b", repo, setup: 7 })}\n`);
    const bad = await Promise.all([
      submit("b1", repo, model, ["--setup", "   "]),
      submit("b2", repo, model, ["--setup", "x".repeat(2001)]),
      cliAsync(["submit", "x", "--workspace", scratch, "--state", db.url, "--model", `scripted:${model}`, "--setup", "npm ci"]),
      cliAsync(["submit", "--tasks", tasks, "--state", db.url, "--model", `scripted:${model}`]),
    ]);
    expect(bad.map((b) => b.stderr.trim())).toEqual([
      'ledgerloop: --setup must not be empty: give the command a worker runs in its fresh clone (e.g. "npm ci")',
      "ledgerloop: --setup is 2001 characters long; at most 2000 (put a longer one in a script of the repository)",
      "ledgerloop: --setup goes with --repo: a --workspace is used as it is, the files git ignores included, so there is nothing to set up again",
      `ledgerloop: --tasks ${tasks}: nothing was queued; 2 task(s) to fix:\n` +
        '  line 1: --setup must not be empty: give the command a worker runs in its fresh clone (e.g. "npm ci")\n' +
        "  line 2: setup: Invalid input: expected string, received number",
    ]);
    expect(bad.map((b) => b.code)).toEqual([2, 2, 2, 2]);
    // Refused before the database was opened: not even the tables were created.
    expect(await pgQuery(db.url, "SELECT to_regclass('ll_submissions') AS t")).toEqual([{ t: null }]);
  });

  it("a run taken over by another worker gets its ignored files back from the setup command, and the model is told once", async () => {
    const repo = gitRepo({ "README.md": "repo\n", ".gitignore": "build/\n" });
    const scratch = tempWorkspace();
    const model = needsBuildTrajectory(scratch, 16);
    const setup = "mkdir -p build && echo ok > build/dep.txt";
    const sub = await submit("mv", repo, model, ["--setup", setup, "--json"]);
    expect(sub.code, sub.stderr).toBe(0);
    const actions = async () =>
      Number((await pgQuery<{ n: string }>(db.url, "SELECT COUNT(*) AS n FROM ll_events WHERE thread_id = 'mv' AND type = 'agent_action'"))[0]!.n);

    const a = spawnWorker(db.url, path.join(scratch, "a"));
    await until(async () => (await actions()) >= 6);
    a.child.kill("SIGKILL");
    await exitOf(a);
    const [{ last }] = (await pgQuery<{ last: number }>(db.url, "SELECT MAX(seq) AS last FROM ll_events WHERE thread_id = 'mv'")) as [{ last: number }];
    const b = spawnWorker(db.url, path.join(scratch, "b"), ["--keep-dirs"]);
    expect(await exitOf(b), b.err()).toEqual({ code: 0, signal: null });
    expect(jsonLines(b.out())).toEqual([expect.objectContaining({ thread: "mv", outcome: "ran", status: "finished", resumed: true })]);

    // The setup ran on both workers, logged with its outcome.
    for (const w of [a, b]) expect(w.err()).toContain(`mv: setup \`${setup}\`: ok in `);
    // Every step found the ignored file (a key is missing only for a command the kill interrupted).
    const interrupted = (
      await pgQuery<{ command: string }>(
        db.url,
        `SELECT a.payload::jsonb -> 'args' ->> 'command' AS command FROM ll_events f JOIN ll_events a ON a.id = f.caused_by
         WHERE f.thread_id = 'mv' AND f.type = 'environment_feedback' AND f.payload::jsonb ->> 'status' = 'interrupted'`,
      )
    ).map((r) => r.command.match(/echo (a\d+)/)![1]);
    const clone = path.join(scratch, "b", "mv");
    const keys = fs.readFileSync(path.join(clone, "counter.txt"), "utf8").split("\n").filter(Boolean);
    expect(keys).toEqual(["a1", "a3", "a5", "a7", "a9", "a11", "a13", "a15"].filter((k) => !interrupted.includes(k)));
    expect(fs.readFileSync(path.join(clone, "build", "dep.txt"), "utf8")).toBe("ok\n");
    // build/ is ignored: it came from the setup, not from the run's revisions.
    expect(execFileSync("git", ["status", "--porcelain"], { cwd: clone, encoding: "utf8" })).not.toContain("build");

    // The model was told in the first prompt after the takeover, and only then.
    const all = await prompts("mv");
    const told = all.filter((p) => p.newest.includes("# Workspace moved"));
    expect(told).toHaveLength(1);
    expect(told[0]!.seq).toBeGreaterThan(last);
    expect(all.filter((p) => p.seq > last)[0]).toBe(told[0]);
    expect(told[0]!.newest).toContain("files git ignores (installed dependencies, build outputs, caches, virtualenvs) were not carried over");
    expect(told[0]!.newest).toMatch(
      new RegExp(
        `The setup command declared with the task, \`${setup.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\`, was run in this copy and exited 0 after \\d+\\.\\d s\\.`,
      ),
    );
    expect(all.some((p) => p.newest.includes("# Workspace setup"))).toBe(false);
  });

  it("a failing setup command does not stop the run: the model's first prompt shows the failure and the end of its output", async () => {
    const repo = gitRepo({ "README.md": "repo\n", ".gitignore": "build/\n" });
    const scratch = tempWorkspace();
    const model = needsBuildTrajectory(scratch, 2);
    const setup = "echo compiling; echo 'cc: command not found' >&2; exit 3";
    const sub = await submit("bad", repo, model, ["--setup", setup]);
    expect(sub.code, sub.stderr).toBe(0);
    const w = spawnWorker(db.url, path.join(scratch, "w"));
    expect(await exitOf(w), w.err()).toEqual({ code: 0, signal: null });
    expect(jsonLines(w.out())).toEqual([expect.objectContaining({ thread: "bad", outcome: "ran", status: "finished", resumed: false })]);
    expect(w.err()).toMatch(/bad: setup `.*`: failed \(exit 3\) in \d+\.\d s; the end of its output:\ncompiling\ncc: command not found/);
    const [first, ...rest] = await prompts("bad");
    expect(first!.newest).toContain(
      "# Workspace setup\nThe setup command declared with the task, `echo compiling; echo 'cc: command not found' >&2; exit 3`, was run in this copy and FAILED (exit 3) after",
    );
    expect(first!.newest).toContain("The end of its output:\n```\ncompiling\ncc: command not found\n```");
    expect(first!.newest).not.toContain("# Workspace moved");
    expect(rest.length).toBeGreaterThan(0);
    expect(rest.some((p) => p.newest.includes("# Workspace setup"))).toBe(false);
  });

  it("a decide prompt refused as too long is retried smaller with the worker's note still in it", async () => {
    // A first prompt large enough to be cut to 70 %: retrieved code the task's words find.
    const big = Array.from({ length: 300 }, (_, i) => `line ${i}: the quick brown fox jumps over the lazy dog`).join("\n");
    const repo = gitRepo({ "README.md": "repo\n", "fox.txt": big });
    const scratch = tempWorkspace();
    let refused = false;
    const stub = await startOpenAIStub({
      respond: (body) => {
        const node = nodeOfRequest(body);
        if (node === "plan")
          return {
            tool_calls: [
              stubToolCall("p1", "update_plan", { subtasks: [{ id: "w", description: "find the quick brown fox in fox.txt", status: "in_progress" }] }),
            ],
          };
        if (node !== "decide") return { content: "A lesson." };
        if (!refused) {
          refused = true;
          return { status: 400, code: "context_length_exceeded", message: "This model's maximum context length is 2000 tokens." };
        }
        return { tool_calls: [stubToolCall("c1", "finish", { summary: "done" })] };
      },
    });
    try {
      const sub = await cliAsync(
        [
          "submit",
          "find the quick brown fox jumps over the lazy dog",
          "--repo",
          repo,
          "--state",
          db.url,
          "--model",
          "openai:stub-model",
          "--retrieval",
          "lexical",
          "--thread",
          "cl",
          "--setup",
          "exit 4",
        ],
        { env: { OPENAI_API_KEY: "sk-proj-Setup7Lr2Vx5Nw7Kt1Bm4Hc9Jd3" } },
      );
      expect(sub.code, sub.stderr).toBe(0);
      const w = spawnWorker(db.url, path.join(scratch, "w"), [], {
        OPENAI_BASE_URL: stub.url,
        OPENAI_API_KEY: "sk-proj-Setup7Lr2Vx5Nw7Kt1Bm4Hc9Jd3",
        LEDGERLOOP_MODEL_RETRY_BASE_MS: "10",
      });
      expect(await exitOf(w), w.err()).toEqual({ code: 0, signal: null });
      expect(jsonLines(w.out()), w.err()).toEqual([expect.objectContaining({ thread: "cl", outcome: "ran", status: "finished" })]);
      const decides = stub.requests.filter((b: StubRequestBody) => nodeOfRequest(b) === "decide");
      expect(decides).toHaveLength(2);
      for (const d of decides) expect(JSON.stringify(d.messages)).toContain("was run in this copy and FAILED (exit 4)");
      expect(JSON.stringify(decides[1]!.messages).length).toBeLessThan(JSON.stringify(decides[0]!.messages).length);
    } finally {
      await stub.close();
    }
  });
});
