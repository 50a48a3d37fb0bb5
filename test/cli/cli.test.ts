import fs from "node:fs";
import path from "node:path";
import { createHash } from "node:crypto";
import { inflateRawSync } from "node:zlib";
import { Database } from "../../src/sqlite/driver.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { BIN, cli, jsonLines } from "../helpers/cli.js";
import { DEMO_TRAJECTORY, cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

afterAll(() => cleanupTemp());

const sha = (file: string) => createHash("sha256").update(fs.readFileSync(file)).digest("hex");
const oneLine = (s: string) => s.trim().split("\n").length === 1;

describe("ledgerloop demo and the inspection commands", () => {
  let ws: string;
  let thread: string;
  beforeAll(() => {
    ws = path.join(tempWorkspace(), "demo");
    const r = cli(["demo", "--workspace", ws, "--json"]);
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out).toMatchObject({ status: "finished", steps: 10, stateDir: path.join(fs.realpathSync(ws), ".ledgerloop") });
    thread = out.thread;
  });

  it("prints the help", () => {
    const r = cli(["--help"]);
    expect(r.code).toBe(0);
    for (const c of [
      "run",
      "resume",
      "demo",
      "history",
      "ledger",
      "threads",
      "context",
      "memory",
      "rewind",
      "fork",
      "diff",
      "replay",
      "gc",
      "delete",
      "stats",
      "index",
      "search",
      "exec",
      "doctor",
      "report",
    ]) {
      expect(r.stdout).toContain(c);
    }
  });

  it("threads lists the run with its goal and final status", () => {
    const rows = jsonLines(cli(["threads", "-w", ws, "--json"]).stdout);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ thread, status: "finished" });
    expect(String(rows[0]!.goal)).toMatch(/health/);
    expect(rows[0]!.checkpoints).toBeGreaterThan(40);
  });

  it("history lists every checkpoint with its parent, step and next node", () => {
    const rows = jsonLines<{ checkpointId: string; parentCheckpointId: string | null; step: number; next: string[]; createdAt: string }>(
      cli(["history", thread, "-w", ws, "--json"]).stdout,
    );
    const db = new Database(path.join(ws, ".ledgerloop/state.db"), { readonly: true });
    const count = (db.prepare("SELECT COUNT(*) AS n FROM checkpoints WHERE thread_id = ?").get(thread) as { n: number }).n;
    db.close();
    expect(rows).toHaveLength(count);
    // Newest first, each pointing at the next row as its parent, down to the input checkpoint.
    for (let i = 0; i < rows.length - 1; i++) expect(rows[i]!.parentCheckpointId).toBe(rows[i + 1]!.checkpointId);
    expect(rows.at(-1)!.parentCheckpointId).toBeNull();
    expect(rows[0]!.next).toEqual([]);
    expect(rows.map((r) => r.step)).toEqual([...rows.map((r) => r.step)].sort((a, b) => b - a));
    expect(rows.some((r) => r.next.includes("act"))).toBe(true);
    expect(Number.isNaN(Date.parse(rows[0]!.createdAt))).toBe(false);
  });

  it("ledger filters by type and by file, with the documented fields", () => {
    const decisions = jsonLines(cli(["ledger", thread, "-w", ws, "--type", "decision", "--json"]).stdout);
    expect(decisions).toHaveLength(1);
    for (const k of ["id", "parentId", "seq", "type", "causedBy", "ts", "payload"]) expect(decisions[0]).toHaveProperty(k);
    const byFile = jsonLines<{ type: string; payload: { tool?: string } }>(
      cli(["ledger", thread, "-w", ws, "--file", "services/orders/server.js", "--json"]).stdout,
    );
    // Only the shell command touched this file: its feedback and the snapshot that recorded the change.
    expect(byFile.map((e) => e.type)).toEqual(["environment_feedback", "workspace_snapshot"]);
    const chain = jsonLines<{ type: string }>(cli(["ledger", thread, "-w", ws, "--chain", String(decisions[0]!.causedBy), "--json"]).stdout);
    expect(chain.map((e) => e.type)).toEqual(["model_call", "agent_action", "environment_feedback", "decision"]);
    const bad = cli(["ledger", thread, "-w", ws, "--type", "bogus"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/unknown event type "bogus"/);
  });

  it("context explains a step: what the model saw, why, and what was left out", () => {
    const r = cli(["context", thread, "-w", ws, "--step", "7", "--json"]);
    expect(r.code, r.stderr).toBe(0);
    const c = JSON.parse(r.stdout) as {
      step: number;
      tokens: number;
      budget: number;
      items: Array<{ section: string; source: string; tokens: number }>;
      omitted: unknown[];
      messages: Array<{ role: string; content: string }>;
    };
    expect(c.step).toBe(7);
    expect(c.tokens).toBeLessThanOrEqual(c.budget);
    const sections = new Set(c.items.map((i) => i.section));
    for (const s of ["system", "tools", "goal", "plan", "decisions", "status", "recent"]) expect(sections.has(s)).toBe(true);
    expect(c.items.some((i) => i.section === "focus" && i.source.startsWith("file:"))).toBe(true);
    // Step 7 follows the failing test run: the prompt carries its failing test names.
    expect(c.messages.map((m) => m.content).join("\n")).toContain("orders service answers /health");
    const human = cli(["context", thread, "-w", ws, "--step", "7"]);
    expect(human.stdout).toMatch(/^step 7: \d+ of \d+ tokens/);
    expect(human.stdout).toContain("included:");
    const missing = cli(["context", thread, "-w", ws, "--step", "99"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/no prompt for step 99; steps with prompts: 1-10/);
  });

  it("report summarises the run: plan, decision, files changed, test runs, problems; and the run wrote it to reports/", () => {
    const r = cli(["report", thread, "-w", ws, "--json"]);
    expect(r.code, r.stderr).toBe(0);
    const rep = JSON.parse(r.stdout);
    expect(rep).toMatchObject({ thread, status: "finished", steps: 10 });
    expect(rep.plan.map((s: { status: string }) => s.status)).toEqual(["completed", "completed", "completed", "completed"]);
    expect(rep.decisions).toHaveLength(1);
    expect(rep.files.map((f: { path: string }) => f.path).sort()).toEqual(["dashboard/aggregate.js", "services/orders/server.js", "services/users/server.js"]);
    expect(rep.tests.map((t: { failed: number }) => t.failed)).toEqual([2, 0]);
    expect(rep.problems).toEqual([expect.objectContaining({ step: 6, tool: "run_tests", errorClass: "test_failure" })]);
    expect(rep.finishSummary).toMatch(/4 passed/);
    const md = fs.readFileSync(path.join(ws, ".ledgerloop", "reports", `${thread}.md`), "utf8");
    expect(md).toContain(`# Run ${thread}: finished`);
    expect(md).toContain("## Files changed");
    expect(md).toMatch(/step 6: 2 passed, 2 failed/);
  });

  it("memory lists the lessons the run learned and forgets one on request", () => {
    const lessons = jsonLines<{ key: string; text: string; sources: Array<{ threadId: string }> }>(cli(["memory", "list", "-w", ws, "--json"]).stdout);
    expect(lessons.length).toBeGreaterThan(0);
    expect(lessons.every((l) => l.sources[0]!.threadId === thread)).toBe(true);
    const relevant = jsonLines<{ text: string }>(cli(["memory", "list", "-w", ws, "--json", "--query", "test command"]).stdout);
    expect(relevant[0]!.text).toMatch(/test command/);
    const forget = cli(["memory", "forget", lessons[0]!.key.slice(0, 8), "-w", ws]);
    expect(forget.code, forget.stderr).toBe(0);
    expect(jsonLines(cli(["memory", "list", "-w", ws, "--json"]).stdout)).toHaveLength(lessons.length - 1);
    expect(cli(["memory", "forget", "nonexistent", "-w", ws]).code).toBe(1);
  });

  it("human output of ledger lists every event, and a reader closing the pipe early is not an error", () => {
    const r = cli(["ledger", thread, "-w", ws]);
    expect(r.code).toBe(0);
    const all = jsonLines(cli(["ledger", thread, "-w", ws, "--json"]).stdout);
    expect(all.length).toBeGreaterThan(50);
    expect(r.stdout.trim().split("\n")).toHaveLength(all.length);
    const piped = spawnSync("bash", ["-c", `"${process.execPath}" "${BIN}" ledger ${thread} -w "${ws}" | head -1; exit \${PIPESTATUS[0]}`], {
      encoding: "utf8",
    });
    expect(piped.stdout.trim().split("\n")).toHaveLength(1);
    expect(piped.stderr).not.toMatch(/EPIPE|Unhandled/);
    expect(piped.status).toBe(0);
  });
});

describe("bad input gets a one-line error, a non-zero exit, and nothing overwritten", () => {
  it("an unknown model", () => {
    const ws = tempWorkspace(undefined, { "a.txt": "a" });
    const r = cli(["run", "task", "-w", ws, "--model", "gpt-5"]);
    expect(r.code).toBe(2);
    expect(oneLine(r.stderr)).toBe(true);
    expect(r.stderr).toMatch(/unknown model "gpt-5"/);
    expect(fs.existsSync(path.join(ws, ".ledgerloop"))).toBe(false);
  });

  it("no model at all", () => {
    const ws = tempWorkspace();
    const r = cli(["run", "task", "-w", ws]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/no model given/);
  });

  it("a missing workspace", () => {
    const ws = path.join(tempWorkspace(), "nope");
    const r = cli(["run", "task", "-w", ws, "--model", `scripted:${DEMO_TRAJECTORY}`]);
    expect(r.code).toBe(2);
    expect(oneLine(r.stderr)).toBe(true);
    expect(r.stderr).toMatch(/workspace .*nope does not exist/);
    expect(fs.existsSync(ws)).toBe(false);
  });

  it("a malformed trajectory", () => {
    const ws = tempWorkspace(undefined, { "t.json": JSON.stringify({ decide: [{ tool_calls: [{ nam: "x" }] }] }) });
    const r = cli(["run", "task", "-w", ws, "--model", `scripted:${path.join(ws, "t.json")}`]);
    expect(r.code).not.toBe(0);
    expect(oneLine(r.stderr)).toBe(true);
    expect(r.stderr).toMatch(/invalid trajectory .*t\.json: decide\.0\.tool_calls\.0/);
  });

  it("a bad --max-steps", () => {
    const r = cli(["run", "task", "--max-steps", "many", "--model", `scripted:${DEMO_TRAJECTORY}`]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--max-steps must be a positive integer/);
  });

  it("a --budget under the settings schema's floor (1000) is refused before anything is written", () => {
    const ws = tempWorkspace();
    const r = cli(["run", "task", "-w", ws, "--budget", "999", "--model", `scripted:${DEMO_TRAJECTORY}`]);
    expect(r.code).toBe(2);
    expect(oneLine(r.stderr)).toBe(true);
    // The flag is checked by the setting's own schema, and the error names the flag.
    expect(r.stderr).toMatch(/--budget must be a whole number from 1000, got "999"/);
    expect(fs.existsSync(path.join(ws, ".ledgerloop"))).toBe(false);
  });

  it("a corrupt state.db is refused and left as it was", () => {
    const ws = tempWorkspace(undefined, { ".ledgerloop/state.db": "this is not sqlite ".repeat(300) });
    const db = path.join(ws, ".ledgerloop/state.db");
    const before = sha(db);
    for (const args of [
      ["run", "task", "-w", ws, "--model", `scripted:${DEMO_TRAJECTORY}`],
      ["threads", "-w", ws],
      ["history", "x", "-w", ws],
    ]) {
      const r = cli(args);
      expect(r.code).toBe(1);
      expect(oneLine(r.stderr)).toBe(true);
      expect(r.stderr).toMatch(/corrupt or not a SQLite database/);
    }
    expect(sha(db)).toBe(before);
  });

  it("a state.db of another application is refused and left as it was", () => {
    const ws = tempWorkspace();
    fs.mkdirSync(path.join(ws, ".ledgerloop"));
    const file = path.join(ws, ".ledgerloop/state.db");
    const other = new Database(file);
    other.exec("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users (name) VALUES ('ada');");
    other.close();
    const before = sha(file);
    const r = cli(["run", "task", "-w", ws, "--model", `scripted:${DEMO_TRAJECTORY}`]);
    expect(r.code).toBe(1);
    expect(oneLine(r.stderr)).toBe(true);
    expect(r.stderr).toMatch(/another application .*users/);
    expect(sha(file)).toBe(before);
  });

  it("inspection of a plain LangGraph checkpoint database says it holds no run, and writes nothing to it", async () => {
    const { SqliteSaver } = await import("@langchain/langgraph-checkpoint-sqlite");
    const { default: BetterSqlite } = await import("better-sqlite3");
    const ws = tempWorkspace();
    fs.mkdirSync(path.join(ws, ".ledgerloop"));
    const file = path.join(ws, ".ledgerloop/state.db");
    // LangGraph's own saver and driver (devDependencies), as a LangGraph user's file would be written.
    const plain = new BetterSqlite(file);
    await new SqliteSaver(plain).getTuple({ configurable: { thread_id: "x" } }); // creates its tables
    plain.close();
    const before = sha(file);
    for (const args of [["threads"], ["history", "x"], ["ledger", "x"], ["context", "x"], ["report", "x"], ["stats"], ["memory", "list"]]) {
      const r = cli([...args, "-w", ws]);
      expect(r.code, args.join(" ")).toBe(1);
      expect(oneLine(r.stderr)).toBe(true);
      expect(r.stderr).toMatch(/holds no ledgerloop run \(table ll_events is missing\)/);
    }
    expect(sha(file)).toBe(before);
    // Not stamped as ours, no ledgerloop table added.
    const after = new Database(file, { readonly: true });
    expect(after.pragma("application_id", { simple: true })).toBe(0);
    expect((after.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'll_%'").all() as unknown[]).length).toBe(0);
    after.close();
  });

  it("an unknown thread, and a thread id that is taken", () => {
    const ws = tempWorkspace(undefined, { "a.txt": "a\n" });
    const traj = path.join(ws, "..", `one-${path.basename(ws)}.json`);
    fs.writeFileSync(traj, JSON.stringify({ decide: [{ tool_calls: [{ name: "finish", args: { summary: "s" } }] }] }));
    try {
      expect(cli(["run", "task", "-w", ws, "--model", `scripted:${traj}`, "--thread", "A", "-q"]).code).toBe(0);
      for (const cmd of ["resume", "history", "ledger"]) {
        const r = cli([cmd, "nope", "-w", ws]);
        expect(r.code).toBe(1);
        expect(oneLine(r.stderr)).toBe(true);
        expect(r.stderr).toMatch(/unknown thread "nope"/);
      }
      const again = cli(["run", "other task", "-w", ws, "--model", `scripted:${traj}`, "--thread", "A"]);
      expect(again.code).toBe(1);
      expect(again.stderr).toMatch(/thread "A" already exists/);
      expect(jsonLines(cli(["threads", "-w", ws, "--json"]).stdout)).toHaveLength(1);
    } finally {
      fs.rmSync(traj, { force: true });
    }
  });

  it("a run that does not finish exits non-zero with its status", () => {
    const ws = tempWorkspace(undefined, { "a.txt": "a\n" });
    const traj = path.join(ws, "..", `ex-${path.basename(ws)}.json`);
    fs.writeFileSync(traj, JSON.stringify({ decide: [{ tool_calls: [{ name: "list_files", args: {} }] }] }));
    try {
      const r = cli(["run", "task", "-w", ws, "--model", `scripted:${traj}`, "--json", "-q"]);
      expect(r.code).toBe(1);
      expect(JSON.parse(r.stdout)).toMatchObject({ status: "script_exhausted", steps: 1 });
    } finally {
      fs.rmSync(traj, { force: true });
    }
  });
});

describe("secrets stay out of the state", () => {
  it("a token in the goal, in a file the agent reads and in the environment is in neither ledger nor checkpoints", () => {
    const token = "ghp_" + "Z9".repeat(18);
    const apiKey = "sk-" + "k".repeat(40);
    const ws = tempWorkspace(undefined, { ".env.local": `GITHUB_TOKEN=${token}\n` });
    const traj = path.join(ws, "..", `sec-${path.basename(ws)}.json`);
    fs.writeFileSync(
      traj,
      JSON.stringify({
        decide: [
          {
            tool_calls: [
              { name: "read_file", args: { path: ".env.local" } },
              { name: "run_command", args: { command: "printenv" } },
            ],
          },
          { tool_calls: [{ name: "finish", args: { summary: "done" } }] },
        ],
      }),
    );
    try {
      const r = cli(["run", `use the token ${token} to push`, "-w", ws, "--model", `scripted:${traj}`, "-q"], {
        env: { OPENAI_API_KEY: apiKey, MY_SERVICE_PASSWORD: "hunter2hunter2" },
      });
      expect(r.code, r.stderr).toBe(0);
      const dir = path.join(ws, ".ledgerloop");
      // Ledger, prompts, checkpoints and pending writes, read back from the database...
      const db = new Database(path.join(dir, "state.db"), { readonly: true });
      const rows = (sql: string) =>
        (db.prepare(sql).all() as Array<Record<string, unknown>>).map((r) =>
          Object.values(r)
            .map((v) => (Buffer.isBuffer(v) ? v.toString("latin1") : String(v)))
            .join(" "),
        );
      const prompts = (db.prepare("SELECT data FROM ll_blobs").all() as Array<{ data: Buffer }>).map((r) => inflateRawSync(r.data).toString("utf8"));
      const stored = [
        ...rows("SELECT * FROM ll_events"),
        ...prompts,
        ...rows("SELECT * FROM checkpoints"),
        ...rows("SELECT * FROM writes"),
        ...rows("SELECT * FROM ll_store"),
      ];
      db.close();
      // ...and every byte of the search index and the vector store. (Workspace revisions hold the
      // files verbatim, as git objects would: a secret committed to a workspace file is kept there.)
      const indexFiles = (fs.readdirSync(dir, { recursive: true }) as string[])
        .filter((f) => f.startsWith("index.db") || f.startsWith("chroma"))
        .map((f) => path.join(dir, f))
        .filter((f) => fs.statSync(f).isFile())
        .map((f) => fs.readFileSync(f).toString("latin1"));
      const bytes = [...stored, ...indexFiles].join("\n");
      expect(bytes.length).toBeGreaterThan(10_000);
      expect(bytes).not.toContain(token);
      expect(bytes).not.toContain(apiKey);
      expect(bytes).not.toContain("hunter2hunter2");
      expect(r.stderr).not.toContain(token);
    } finally {
      fs.rmSync(traj, { force: true });
    }
  });
});
