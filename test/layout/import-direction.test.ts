import { describe, expect, it } from "vitest";
import { coreFolderCycles, describeViolation, importCycles, importsOf, importViolations, ringOf, type SourceFile } from "./import-rings.js";
import { sources } from "./sources.js";

describe("import direction: core ← agent/tools ← agent/nodes ← agent ← runs | inspect ← eval ← entry points (src/cli, src/web, src/api, src/mcp-server, src/index.ts)", () => {
  it("no module of the code base imports against the rings", () => {
    const files = sources();
    expect(files.length).toBeGreaterThan(100);
    // The walk sees imports at all (a parser that found none would pass anything).
    const relative = files.flatMap((f) => importsOf(f)).filter((i) => i.specifier.startsWith("."));
    expect(relative.length).toBeGreaterThan(500);
    expect(importViolations(files).map(describeViolation)).toEqual([]);
  });

  it("places files in their rings", () => {
    expect(ringOf("src/runtime.ts")).toBe("core");
    expect(ringOf("src/ledger/runs.ts")).toBe("core");
    expect(ringOf("src/agent/tools/index.ts")).toBe("tools");
    expect(ringOf("src/agent/nodes/act.ts")).toBe("nodes");
    expect(ringOf("src/agent/graph.ts")).toBe("agent");
    expect(ringOf("src/runs/drive.ts")).toBe("runs");
    expect(ringOf("src/inspect/history.ts")).toBe("inspect");
    expect(ringOf("src/eval/eval.ts")).toBe("eval");
    for (const f of ["src/cli/run.ts", "src/web/server.ts", "src/web/app.js", "src/api/agent.ts", "src/index.ts"]) expect(ringOf(f), f).toBe("entry");
    expect(ringOf("src/indexer.ts")).toBe("core");
    expect(ringOf("test/x.test.ts")).toBeNull();
  });

  // The checker itself, on a synthetic code base with one planted import of each kind against the rings.
  it("fails on planted imports against the direction, in every syntax, and passes the allowed ones", () => {
    const files: SourceFile[] = [
      { path: "src/runtime.ts", text: `import { graph } from "./agent/graph.js";\nimport { z } from "zod";\n` },
      { path: "src/ledger/runs.ts", text: `import type { ApprovalRequest } from "../agent/nodes/act.js";\n` },
      { path: "src/context/budget.ts", text: `export { handleRun } from "../cli/run.js";\n` },
      { path: "src/memory/lessons.ts", text: `const m = await import("../web/server.js");\n` },
      { path: "src/agent/tools/read-file.ts", text: `import "../../state.js";\n\nimport { createActNode } from "../nodes/act.js";\n` },
      { path: "src/agent/nodes/act.ts", text: `import { keepRun } from "../run-keeping.js";\nimport { getTool } from "../tools/index.js";\n` },
      {
        path: "src/agent/graph.ts",
        text: `import { driveRun } from "../runs/drive.js";\nimport { createActNode } from "./nodes/act.js";\nimport { createRuntime } from "../runtime.js";\n`,
      },
      { path: "src/runs/drive.ts", text: `import { createCodingAgent } from "../agent/graph.js";\nimport { log } from "../cli/common.js";\n` },
      // runs and inspect are siblings: neither imports the other; both import the rings inside.
      {
        path: "src/runs/delete.ts",
        text: `import { listThreads } from "../inspect/threads.js";\nimport { openExistingState } from "../ledger/open-state.js";\n`,
      },
      {
        path: "src/inspect/history.ts",
        text: `import { getStats } from "./stats.js";\nimport type { ForkArgs } from "../runs/thread-time-travel.js";\nconst c = await import("../cli/common.js");\n`,
      },
      {
        path: "src/inspect/report.ts",
        text: `import { createCodingAgent } from "../agent/graph.js";\nimport { openExistingState } from "../ledger/open-state.js";\n`,
      },
      // eval runs tasks through runs/; runs never reaches out to eval, eval never to the entry points.
      { path: "src/runs/start.ts", text: `import { runEval } from "../eval/eval.js";\n` },
      { path: "src/eval/run-task.ts", text: `import { driveRun } from "../runs/drive.js";\nimport { log } from "../cli/common.js";\n` },
      // Allowed: the outer ring imports every ring, and itself.
      { path: "src/cli/eval.ts", text: `import { runEval } from "../eval/eval.js";\n` },
      { path: "src/cli/run.ts", text: `import { driveRun } from "../runs/drive.js";\nimport { log } from "./common.js";\n` },
      { path: "src/api/agent.ts", text: `import { createCodingAgent } from "../agent/graph.js";\n` },
      { path: "src/index.ts", text: `export type { ApprovalRequest } from "./agent/nodes/act.js";\nexport { getHistory } from "./inspect/history.js";\n` },
    ];
    const found = importViolations(files);
    expect(found.map((v) => `${v.file}:${v.line} ${v.from}→${v.to}`)).toEqual([
      "src/runtime.ts:1 core→agent",
      "src/ledger/runs.ts:1 core→nodes",
      "src/context/budget.ts:1 core→entry",
      "src/memory/lessons.ts:1 core→entry",
      "src/agent/tools/read-file.ts:3 tools→nodes",
      "src/agent/nodes/act.ts:1 nodes→agent",
      "src/agent/graph.ts:1 agent→runs",
      "src/runs/drive.ts:2 runs→entry",
      "src/runs/delete.ts:1 runs→inspect",
      "src/inspect/history.ts:2 inspect→runs",
      "src/inspect/history.ts:3 inspect→entry",
      "src/runs/start.ts:1 runs→eval",
      "src/eval/run-task.ts:2 eval→entry",
    ]);
    expect(describeViolation(found[0]!)).toBe('src/runtime.ts:1 imports "./agent/graph.js" (core → agent): the core ring may not import from the agent ring');
  });
});

describe("no import cycles, inside the core's folders too", () => {
  it("no files of src/ import each other in a loop (type-only imports count)", () => {
    expect(importCycles(sources())).toEqual([]);
  });

  it("finds a planted loop of three files and a pair, and passes a chain", () => {
    const files: SourceFile[] = [
      { path: "src/a.ts", text: `import { b } from "./b.js";\n` },
      { path: "src/b.ts", text: `import type { C } from "./sub/c.js";\n` },
      { path: "src/sub/c.ts", text: `export { a } from "../a.js";\n` },
      { path: "src/x.ts", text: `const y = await import("./y.js");\n` },
      { path: "src/y.ts", text: `import "./x.js";\n` },
      { path: "src/chain1.ts", text: `import "./chain2.js";\n` },
      { path: "src/chain2.ts", text: `import "./a.js";\n` },
    ];
    expect(importCycles(files).sort()).toEqual([
      ["src/a.ts", "src/b.ts", "src/sub/c.ts"],
      ["src/x.ts", "src/y.ts"],
    ]);
  });

  it("finds a loop between two core folders (and a loose file) that no file cycle shows", () => {
    const files: SourceFile[] = [
      { path: "src/ledger/a.ts", text: `import "../memory/b.js";\n` },
      { path: "src/memory/b.ts", text: `export const b = 1;\n` },
      { path: "src/memory/c.ts", text: `import "../runtime.js";\n` },
      { path: "src/runtime.ts", text: `import type { A } from "./ledger/a.js";\n` },
      { path: "src/queue/q.ts", text: `import "../ledger/a.js";\n` },
      // Outer rings are the ring check's business: an agent file closes no loop here.
      { path: "src/agent/tools/t.ts", text: `import "../../queue/q.js";\n` },
      { path: "src/workspace/w.ts", text: `import "../agent/tools/t.js";\n` },
    ];
    expect(importCycles(files)).toEqual([]);
    expect(coreFolderCycles(files)).toEqual([["src/ledger/", "src/memory/", "src/runtime.ts"]]);
  });
});

describe("loops among the core's folders", () => {
  // Issue 31: the core has an order. Lowest first (as of this writing): proc.ts, workspace/ <
  // secrets < memory/, sandbox/ < ledger/ < models/ < queue/, retrieval/, telemetry/ < context/,
  // state-admin/ < report/, runtime.ts. A unit that needs one above it takes a narrower type
  // declared where it is used (see ObservedRuntime), or the shared part moves down.
  it("there are none", () => {
    expect(coreFolderCycles(sources())).toEqual([]);
  });
});

describe("file size", () => {
  it("no source file is longer than 500 lines (one concept per file)", () => {
    const files = sources();
    const long = files.map((f) => ({ path: f.path, lines: f.text.split("\n").length })).filter((f) => f.lines > 500);
    expect(long).toEqual([]);
    // The count sees the real files: the longest one is well above a trivial size.
    expect(Math.max(...files.map((f) => f.text.split("\n").length))).toBeGreaterThan(200);
  });
});
