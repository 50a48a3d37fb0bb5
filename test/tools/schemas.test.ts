import { describe, expect, it } from "vitest";
import { getTool, TOOLS, toolSpecs, validateToolCall } from "../../src/agent/tools/index.js";

const TOOL_NAMES = [
  "read_file",
  "write_file",
  "edit_file",
  "list_files",
  "search_code",
  "run_command",
  "run_tests",
  "start_process",
  "process_status",
  "process_output",
  "stop_process",
  "update_plan",
  "record_decision",
  "git_commit",
  "finish",
];

describe("tool registry", () => {
  it("exposes the public tool names in a stable order", () => {
    expect(TOOLS.map((t) => t.name)).toEqual(TOOL_NAMES);
    expect(toolSpecs().map((s) => s.name)).toEqual(TOOL_NAMES);
  });

  it("finds each tool by name and nothing else", () => {
    for (const t of TOOLS) expect(getTool(t.name)).toBe(t);
    expect(getTool("nope")).toBeUndefined();
    expect(getTool("READ_FILE")).toBeUndefined();
  });

  it("says which tools run a shell command (checked by the policy before they start) and what each may write", () => {
    expect(TOOLS.filter((t) => t.runsCommand).map((t) => t.name)).toEqual(["run_command", "run_tests", "start_process"]);
    // Unset means "anything": the step's walk is dropped after such a tool, never trusted blindly.
    expect(Object.fromEntries(TOOLS.map((t) => [t.name, t.writes ?? "anything"]))).toEqual({
      read_file: "nothing",
      write_file: "reported",
      edit_file: "reported",
      list_files: "nothing",
      search_code: "nothing",
      run_command: "reported",
      run_tests: "reported",
      // A background process writes whenever it likes; while one runs, act drops every kept walk anyway.
      start_process: "anything",
      process_status: "nothing",
      process_output: "nothing",
      stop_process: "anything",
      update_plan: "nothing",
      record_decision: "nothing",
      git_commit: "anything",
      finish: "nothing",
    });
    const bad = getTool("read_file")!.bind({ path: 5 });
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.issues[0]!.path).toEqual(["path"]);
  });

  it("marks only commands and test runs as not idempotent", () => {
    const notIdempotent = TOOLS.filter((t) => !t.idempotent).map((t) => t.name);
    expect(notIdempotent.sort()).toEqual(["git_commit", "run_command", "run_tests", "start_process"]);
  });

  it("gives every tool a strict object schema without a $schema key", () => {
    for (const spec of toolSpecs()) {
      expect(spec.parameters).not.toHaveProperty("$schema");
      expect(spec.parameters.type).toBe("object");
      expect(spec.parameters.additionalProperties).toBe(false);
      expect(spec.description.length).toBeGreaterThan(40);
    }
  });

  it("builds specs for a subset of tools", () => {
    const subset = TOOLS.filter((t) => t.name === "finish" || t.name === "read_file");
    expect(toolSpecs(subset).map((s) => s.name)).toEqual(["read_file", "finish"]);
  });
});

describe("model-facing tool specs", () => {
  // A change here changes what every model is told: review the snapshot diff like an API change.
  it.each(toolSpecs().map((s) => [s.name, s] as const))("%s", (_name, spec) => {
    expect(spec).toMatchSnapshot();
  });
});

type Case = [label: string, args: unknown];
type RejectCase = [label: string, args: unknown, fragments: string[]];

const plan = (...subtasks: unknown[]) => ({ subtasks });
const st = (id: string, status = "pending", description = `do ${id}`) => ({ id, description, status });

const ACCEPTED: Record<string, Case[]> = {
  read_file: [
    ["path only", { path: "src/a.ts" }],
    ["a range", { path: "a", startLine: 1, endLine: 1 }],
    ["startLine only", { path: "a", startLine: 40 }],
    ["endLine only", { path: "a", endLine: 3 }],
  ],
  write_file: [
    ["content", { path: "a.txt", content: "x\n" }],
    ["empty content", { path: "a.txt", content: "" }],
  ],
  edit_file: [
    ["a replacement", { path: "a", oldText: "x", newText: "y" }],
    ["a deletion (empty newText)", { path: "a", oldText: "x", newText: "" }],
  ],
  list_files: [
    ["no arguments", {}],
    ["a path", { path: "src" }],
    ["a glob", { glob: "*.ts" }],
    ["path and glob", { path: "src", glob: "**/*.test.ts" }],
  ],
  search_code: [
    ["a query", { query: "user role" }],
    ["k at both bounds", { query: "x", k: 1 }],
    ["k = 50", { query: "x", k: 50 }],
  ],
  run_command: [
    ["a command", { command: "ls -la" }],
    ["timeoutMs at the minimum", { command: "ls", timeoutMs: 100 }],
    ["timeoutMs at the maximum", { command: "ls", timeoutMs: 30 * 60 * 1000 }],
  ],
  run_tests: [
    ["no arguments (detected command)", {}],
    ["an explicit command", { command: "npm test" }],
  ],
  start_process: [
    ["a command", { command: "node server.js" }],
    ["every option", { command: "PORT=4101 node server.js", name: "api.v2_x-1", readyPort: 4101, readyPattern: "listening on \\d+", readyTimeoutMs: 600_000 }],
    ["a port at both bounds", { command: "x", readyPort: 1 }],
  ],
  process_status: [["a name", { name: "api" }]],
  process_output: [
    ["a name", { name: "api" }],
    ["tail and grep", { name: "api", tail: 500, grep: "ERROR|WARN" }],
  ],
  stop_process: [["a name", { name: "api" }]],
  update_plan: [
    ["one subtask", plan(st("s1"))],
    ["every status", plan(st("a", "pending"), st("b", "in_progress"), st("c", "completed"), st("d", "blocked"))],
  ],
  record_decision: [["a decision", { text: "Use SQLite for the ledger: one file, no server." }]],
  git_commit: [
    ["a message", { message: "Add /health" }],
    ["a message and paths", { message: "Fix ids", paths: ["src/a.ts", "test"] }],
  ],
  finish: [["a summary", { summary: "Added /health; tests pass." }]],
};

const REJECTED: Record<string, RejectCase[]> = {
  read_file: [
    ["no path", {}, ["Invalid arguments for read_file", "path:", "expected string, received undefined"]],
    ["empty path", { path: "" }, ["path:", "Too small"]],
    ["path not a string", { path: 3 }, ["path:", "expected string, received number"]],
    ["startLine 0", { path: "a", startLine: 0 }, ["startLine:", "expected number to be >=1"]],
    ["fractional startLine", { path: "a", startLine: 1.5 }, ["startLine:", "expected int"]],
    ["endLine < startLine", { path: "a", startLine: 5, endLine: 2 }, ["endLine: endLine must be >= startLine"]],
    ["an unknown key", { path: "a", lines: 10 }, ["(arguments): Unrecognized key", '"lines"']],
    ["an array instead of an object", [1], ["(arguments):", "expected object, received array"]],
  ],
  write_file: [
    ["no content", { path: "a" }, ["content:", "expected string, received undefined"]],
    ["content not a string", { path: "a", content: 5 }, ["content:", "expected string, received number"]],
    ["an unknown key", { path: "a", content: "", mode: "0644" }, ['Unrecognized key: "mode"']],
  ],
  edit_file: [
    ["empty oldText", { path: "a", oldText: "", newText: "x" }, ["oldText:", "Too small", ">=1 characters"]],
    ["no newText", { path: "a", oldText: "x" }, ["newText:", "expected string, received undefined"]],
    ["an unknown key", { path: "a", oldText: "x", newText: "y", all: true }, ['Unrecognized key: "all"']],
  ],
  list_files: [
    ["empty path", { path: "" }, ["path:", "Too small"]],
    ["empty glob", { glob: "" }, ["glob:", "Too small"]],
    ["an unknown key", { recursive: true }, ['Unrecognized key: "recursive"']],
  ],
  search_code: [
    ["empty query", { query: "" }, ["query:", "Too small"]],
    ["query over 500 chars", { query: "x".repeat(501) }, ["query:", "Too big"]],
    ["k = 0", { query: "x", k: 0 }, ["k:", ">=1"]],
    ["k = 51", { query: "x", k: 51 }, ["k:", "<=50"]],
  ],
  run_command: [
    ["no command", {}, ["command:", "expected string, received undefined"]],
    ["timeoutMs 10", { command: "ls", timeoutMs: 10 }, ["timeoutMs:", "expected number to be >=100"]],
    ["timeoutMs over 30 minutes", { command: "ls", timeoutMs: 30 * 60 * 1000 + 1 }, ["timeoutMs:", "Too big"]],
    ["an unknown key", { command: "ls", cwd: "/" }, ['Unrecognized key: "cwd"']],
  ],
  run_tests: [
    ["empty command", { command: "" }, ["command:", "Too small"]],
    ["an unknown key", { filter: "a" }, ['Unrecognized key: "filter"']],
  ],
  start_process: [
    ["no command", {}, ["command:", "expected string, received undefined"]],
    ["a name with a space", { command: "x", name: "my api" }, ["name:", "Invalid string"]],
    ["a name starting with a dash", { command: "x", name: "-api" }, ["name:"]],
    ["port 0", { command: "x", readyPort: 0 }, ["readyPort:", ">=1"]],
    ["port 65536", { command: "x", readyPort: 65536 }, ["readyPort:", "<=65535"]],
    ["readyTimeoutMs over 10 minutes", { command: "x", readyTimeoutMs: 600_001 }, ["readyTimeoutMs:", "Too big"]],
    ["an unknown key", { command: "x", cwd: "/" }, ['Unrecognized key: "cwd"']],
  ],
  process_status: [
    ["no name", {}, ["name:", "expected string, received undefined"]],
    ["empty name", { name: "" }, ["name:", "Too small"]],
  ],
  process_output: [
    ["tail 0", { name: "a", tail: 0 }, ["tail:", ">=1"]],
    ["tail 501", { name: "a", tail: 501 }, ["tail:", "<=500"]],
    ["an unknown key", { name: "a", head: 3 }, ['Unrecognized key: "head"']],
  ],
  stop_process: [["an unknown key", { name: "a", signal: "KILL" }, ['Unrecognized key: "signal"']]],
  update_plan: [
    ["an empty list", plan(), ["subtasks:", "expected array to have >=1 items"]],
    ["duplicate ids", plan(st("s1"), st("s1")), ["subtasks: subtask ids must be unique"]],
    ["a bad status", plan(st("s1", "done")), ["subtasks.0.status:", 'expected one of "pending"|"in_progress"|"completed"|"blocked"']],
    ["an empty id", plan(st("")), ["subtasks.0.id:", "Too small"]],
    ["a missing description", plan({ id: "s1", status: "pending" }), ["subtasks.0.description:"]],
    // `evidence` exists on the stored Subtask but is the runtime's to set, not the model's.
    ["evidence on a subtask", plan({ ...st("s1"), evidence: "ev1" }), ["subtasks.0:", 'Unrecognized key: "evidence"']],
    ["more than 50 subtasks", plan(...Array.from({ length: 51 }, (_, i) => st(`s${i}`))), ["subtasks:", "Too big"]],
    ["no subtasks key", {}, ["subtasks:", "expected array, received undefined"]],
  ],
  record_decision: [
    ["empty text", { text: "" }, ["text:", "Too small"]],
    ["text over 2000 chars", { text: "x".repeat(2001) }, ["text:", "Too big"]],
  ],
  git_commit: [
    ["no message", {}, ["message:", "expected string, received undefined"]],
    ["a blank message", { message: "   " }, ["message:", "Too small"]],
    ["an empty path list", { message: "x", paths: [] }, ["paths:", "Too small"]],
    ["an unknown key", { message: "x", amend: true }, ["Unrecognized key", "amend"]],
  ],
  finish: [
    ["no summary", {}, ["summary:", "expected string, received undefined"]],
    ["summary over 4000 chars", { summary: "x".repeat(4001) }, ["summary:", "Too big"]],
  ],
};

describe("validateToolCall", () => {
  it("has accept and reject cases for every tool", () => {
    expect(Object.keys(ACCEPTED).sort()).toEqual([...TOOL_NAMES].sort());
    expect(Object.keys(REJECTED).sort()).toEqual([...TOOL_NAMES].sort());
  });

  for (const name of TOOL_NAMES) {
    describe(name, () => {
      it.each(ACCEPTED[name]!)("accepts %s", (_label, args) => {
        const v = validateToolCall(name, args);
        expect(v).toMatchObject({ ok: true, args });
        if (v.ok) expect(v.tool).toBe(getTool(name));
      });

      it.each(ACCEPTED[name]!)("binds %s again from what decide records (the schema accepts its own output)", (_label, args) => {
        const v = validateToolCall(name, args);
        if (!v.ok) throw new Error(v.error);
        const recorded = JSON.parse(JSON.stringify(v.args));
        const again = getTool(name)!.bind(recorded);
        expect(again.ok).toBe(true);
        if (again.ok) expect(again.args).toEqual(v.args);
      });

      it.each(ACCEPTED[name]!)("accepts %s as argument text", (_label, args) => {
        const v = validateToolCall(name, undefined, JSON.stringify(args));
        expect(v).toMatchObject({ ok: true, args });
      });

      it.each(REJECTED[name]!)("rejects %s", (_label, args, fragments) => {
        const v = validateToolCall(name, args);
        expect(v.ok).toBe(false);
        if (v.ok) return;
        expect(v.error.startsWith(`Invalid arguments for ${name}: `)).toBe(true);
        for (const f of fragments) expect(v.error).toContain(f);
        // The same call sent as raw JSON text fails the same way.
        expect(validateToolCall(name, undefined, JSON.stringify(args))).toEqual(v);
      });
    });
  }

  it("rejects an unknown tool, listing every available tool", () => {
    const v = validateToolCall("delete_everything", { path: "." });
    expect(v.ok).toBe(false);
    if (v.ok) return;
    expect(v.error).toContain('Unknown tool "delete_everything"');
    expect(v.error).toContain(`Available tools: ${TOOL_NAMES.join(", ")}.`);
  });

  it("says when the argument text is not JSON, quoting it", () => {
    const v = validateToolCall("read_file", undefined, '{"path": "a.ts",');
    expect(v.ok).toBe(false);
    if (v.ok) return;
    expect(v.error).toContain("Arguments of read_file are not valid JSON");
    expect(v.error).toContain('{"path": "a.ts",');
  });

  it("quotes at most 200 characters of bad argument text", () => {
    const text = `{${"x".repeat(1000)}`;
    const v = validateToolCall("finish", undefined, text);
    expect(v.ok).toBe(false);
    if (v.ok) return;
    expect(v.error).toContain("not valid JSON");
    expect(v.error).not.toContain("x".repeat(201));
    expect(v.error).toContain("x".repeat(199));
  });

  it("checks the tool name before parsing the argument text", () => {
    const v = validateToolCall("nope", undefined, "{not json");
    expect(v.ok).toBe(false);
    if (!v.ok) expect(v.error).toContain('Unknown tool "nope"');
  });

  it("prefers parsed args over argument text when both are given", () => {
    const v = validateToolCall("read_file", { path: "from-args" }, '{"path":"from-text"}');
    expect(v).toMatchObject({ ok: true, args: { path: "from-args" } });
  });

  it("treats missing arguments as an empty object", () => {
    expect(validateToolCall("list_files", undefined)).toMatchObject({ ok: true, args: {} });
    expect(validateToolCall("list_files", undefined, "null")).toMatchObject({ ok: true, args: {} });
    const v = validateToolCall("finish", undefined);
    expect(v.ok).toBe(false);
    if (!v.ok) expect(v.error).toContain("summary:");
  });

  it("reports at most five issues", () => {
    const v = validateToolCall("update_plan", plan(...Array.from({ length: 8 }, (_, i) => ({ id: `s${i}` }))));
    expect(v.ok).toBe(false);
    if (v.ok) return;
    const issues = v.error.replace(/^Invalid arguments for update_plan: /, "").split("; ");
    expect(issues).toHaveLength(5);
  });

  it("never throws, whatever the model sends", () => {
    const odd: unknown[] = [null, 0, "str", true, [], { path: { nested: 1 } }, Symbol("s")];
    for (const tool of [...TOOL_NAMES, "", "unknown"]) {
      for (const args of odd) expect(() => validateToolCall(tool, args)).not.toThrow();
      for (const text of ["", "}", "[", "undefined", "1e999", '"\\u"']) {
        expect(() => validateToolCall(tool, undefined, text)).not.toThrow();
      }
    }
  });
});
