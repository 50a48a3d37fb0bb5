import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { demoRun } from "../helpers/cli.js";
import { packagesLoaded } from "../helpers/packages-loaded.js";
import { cleanupTemp, REPO, tempWorkspace } from "../helpers/workspace.js";

// Fast start is a matter of what a command loads: `--help` needs commander only, and the
// inspection commands SQLite (and zod) only, never LangGraph, Chroma, tree-sitter or execa.
const HEAVY = ["@langchain/", "langsmith", "openai", "chromadb", "web-tree-sitter", "execa", "gpt-tokenizer", "@xenova/", "tsx"];

let ws = "";
let thread = "";
beforeAll(() => {
  ({ ws, thread } = demoRun());
}, 400_000);
afterAll(() => cleanupTemp());

/** `node -e` of an ES module resolving the package by name, as a consumer does (the repository's own exports map). */
const importing = (code: string) => ["--input-type=module", "-e", code];

describe("what importing the package loads (built)", () => {
  it('import("ledgerloop") loads zod only: LangGraph, LangChain, SQLite and pg wait for first use', () => {
    const r = packagesLoaded(
      importing('const m = await import("ledgerloop"); if (typeof m.openAgent !== "function" || !m.TaskState.shape.goal) process.exit(3);'),
      [],
    );
    expect(r.code, r.stderr).toBe(0);
    expect([...r.packages]).toEqual(["zod"]);
  });

  it("building a model from its spec loads no LangChain: `run` checks the spec so before it starts the Chroma server", () => {
    const factory = path.join(REPO, "dist", "src", "models", "factory.js");
    const script = path.join(tempWorkspace(), "one.json");
    fs.writeFileSync(script, JSON.stringify({ decide: [{ tool_calls: [{ name: "finish", args: { summary: "done" } }] }] }));
    const r = packagesLoaded(
      importing(
        `const { createModel } = await import(${JSON.stringify(factory)});` +
          `const m = [createModel(${JSON.stringify(`scripted:${script}`)}), createModel("openai:gpt-4o-mini", { env: { OPENAI_BASE_URL: "http://127.0.0.1:9/v1" } })];` +
          'if (m.some((x) => typeof x.invoke !== "function")) process.exit(3);',
      ),
      [],
    );
    expect(r.code, r.stderr).toBe(0);
    expect([...r.packages]).toEqual(["zod"]);
  });

  it("the graph and model builders moved to ledgerloop/graph and ledgerloop/models, and are there", () => {
    const code =
      'const g = await import("ledgerloop/graph"); const m = await import("ledgerloop/models"); const root = await import("ledgerloop");' +
      "console.log(JSON.stringify({ graph: [typeof g.createCodingAgent, typeof g.recursionLimitFor, typeof g.graph]," +
      " models: [typeof m.createModel, typeof m.chatModelFromInstance, typeof m.LangChainChatModel, typeof m.isToolCallingChatModel]," +
      ' root: ["createCodingAgent", "createModel", "LangChainChatModel"].filter((k) => k in root) }));';
    const r = spawnSync(process.execPath, importing(code), { cwd: REPO, encoding: "utf8", timeout: 60_000 });
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ graph: ["function", "function", "object"], models: ["function", "function", "function", "function"], root: [] });
  });
});

describe("what each command loads (compiled CLI, before bundling)", () => {
  it("--help loads commander and the command table (specs and loaders), no command's module", () => {
    const r = packagesLoaded(["--help"]);
    expect(r.code).toBe(0);
    expect([...r.packages]).toEqual(["commander"]);
    expect(r.own).toEqual(["dist/src/cli/command-specs.js", "dist/src/cli/command-table.js", "dist/src/cli/main.js"]);
  });

  it("<command> --help loads that command's module and no other's", () => {
    const r = packagesLoaded(["history", "--help"]);
    expect(r.code).toBe(0);
    expect(r.own.filter((f) => f.startsWith("dist/src/cli/"))).toEqual([
      "dist/src/cli/command-specs.js",
      "dist/src/cli/command-table.js",
      "dist/src/cli/common.js",
      "dist/src/cli/history.js",
      "dist/src/cli/main.js",
    ]);
  });

  it.each([
    ["threads", () => ["threads", "-w", ws]],
    ["history", () => ["history", thread, "-w", ws]],
    ["ledger", () => ["ledger", thread, "-w", ws]],
    ["context", () => ["context", thread, "-w", ws]],
    ["report", () => ["report", thread, "-w", ws]],
    ["stats", () => ["stats", "-w", ws]],
  ])("%s needs SQLite, not LangGraph, Chroma or tree-sitter", (_name, args) => {
    const r = packagesLoaded(args());
    expect(r.code, r.stderr).toBe(0);
    expect(r.packages.has("libsql")).toBe(true);
    expect([...r.packages].filter((p) => HEAVY.some((h) => p.startsWith(h)))).toEqual([]);
  });

  // A run loads its model's client, the MCP SDK and the PostgreSQL driver when it uses them: a
  // scripted run on a SQLite state uses none. execa comes with the first command: none runs here.
  it("a scripted run on a SQLite state that runs no command loads neither the OpenAI client, the MCP SDK, pg nor execa", () => {
    const run = path.join(tempWorkspace(), "ws");
    fs.cpSync(path.join(REPO, "examples/demo/workspace"), run, { recursive: true });
    const script = path.join(tempWorkspace(), "one-step.json");
    fs.writeFileSync(script, JSON.stringify({ decide: [{ tool_calls: [{ name: "finish", args: { summary: "done" } }] }] }));
    const r = packagesLoaded(["run", "finish at once", "-w", run, "--model", `scripted:${script}`, "--max-steps", "1", "-q"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.packages.has("@langchain/langgraph")).toBe(true);
    expect([...r.packages].filter((p) => ["@langchain/openai", "openai", "@modelcontextprotocol/sdk", "ajv", "pg", "pg-boss", "execa"].includes(p))).toEqual(
      [],
    );
  });

  it("migrate between two SQLite states loads no PostgreSQL driver", () => {
    const to = path.join(tempWorkspace(), "state");
    const r = packagesLoaded(["migrate", "--from", ws, "--to", to, "--json"]);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ threads: [{ thread, result: "migrated" }] });
    expect(r.packages.has("libsql")).toBe(true);
    expect([...r.packages].filter((p) => p.startsWith("pg"))).toEqual([]);
  });

  // Loading zod and building the event schemas cost more than the rest of these commands: only an
  // append needs them (ledger/event-rows.ts). diff reads the checkpoint tables, without a runtime.
  it.each([
    ["threads", () => ["threads", "-w", ws]],
    ["history", () => ["history", thread, "-w", ws]],
    ["ledger", () => ["ledger", thread, "-w", ws]],
    ["diff --stat", () => ["diff", thread, "--stat", "-w", ws]],
  ])("%s reads the ledger without loading zod", (_name, args) => {
    const r = packagesLoaded(args());
    expect(r.code, r.stderr).toBe(0);
    expect(r.packages.has("zod")).toBe(false);
    expect([...r.packages].filter((p) => HEAVY.some((h) => p.startsWith(h)))).toEqual([]);
  });
});
