import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { REPO } from "../helpers/workspace.js";
import { describeViolation, importsOf, importViolations, ringOf, type SourceFile } from "./import-rings.js";

/** Every TypeScript and JavaScript module of the rings (src/, tools/, nodes/, graphs/). */
function sources(): SourceFile[] {
  const out: SourceFile[] = [];
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(path.join(REPO, dir), { withFileTypes: true })) {
      const rel = `${dir}/${e.name}`;
      if (e.isDirectory()) walk(rel);
      else if (/\.(ts|mts|js|mjs)$/.test(e.name) && !e.name.endsWith(".d.ts")) out.push({ path: rel, text: fs.readFileSync(path.join(REPO, rel), "utf8") });
    }
  };
  for (const d of ["src", "tools", "nodes", "graphs"]) walk(d);
  return out;
}

describe("import direction: core ← tools ← nodes ← graphs ← entry points (src/cli, src/web, src/api, src/index.ts)", () => {
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
    expect(ringOf("tools/index.ts")).toBe("tools");
    expect(ringOf("nodes/act.ts")).toBe("nodes");
    expect(ringOf("graphs/coding-agent.ts")).toBe("graphs");
    for (const f of ["src/cli/run.ts", "src/web/server.ts", "src/web/app.js", "src/api/agent.ts", "src/index.ts"]) expect(ringOf(f), f).toBe("entry");
    expect(ringOf("src/indexer.ts")).toBe("core");
    expect(ringOf("test/x.test.ts")).toBeNull();
  });

  // The checker itself, on a synthetic code base with one planted import of each kind against the rings.
  it("fails on planted imports against the direction, in every syntax, and passes the allowed ones", () => {
    const files: SourceFile[] = [
      { path: "src/runtime.ts", text: `import { graph } from "../graphs/coding-agent.js";\nimport { z } from "zod";\n` },
      { path: "src/ledger/runs.ts", text: `import type { ApprovalRequest } from "../../nodes/act.js";\n` },
      { path: "src/context/budget.ts", text: `export { handleRun } from "../cli/run.js";\n` },
      { path: "src/memory/lessons.ts", text: `const m = await import("../web/server.js");\n` },
      { path: "tools/read-file.ts", text: `import "../src/state.js";\n\nimport { createActNode } from "../nodes/act.js";\n` },
      { path: "nodes/act.ts", text: `import { keepRun } from "../graphs/run-keeping.js";\nimport { getTool } from "../tools/index.js";\n` },
      { path: "graphs/coding-agent.ts", text: `import { driveRun } from "../src/cli/drive.js";\nimport { createActNode } from "../nodes/act.js";\nimport { createRuntime } from "../src/runtime.js";\n` },
      // Allowed: the outer ring imports every ring, and itself.
      { path: "src/cli/drive.ts", text: `import { createCodingAgent } from "../../graphs/coding-agent.js";\nimport { log } from "./common.js";\n` },
      { path: "src/api/agent.ts", text: `import { driveRun } from "../cli/drive.js";\n` },
      { path: "src/index.ts", text: `export type { ApprovalRequest } from "../nodes/act.js";\n` },
    ];
    const found = importViolations(files);
    expect(found.map((v) => `${v.file}:${v.line} ${v.from}→${v.to}`)).toEqual([
      "src/runtime.ts:1 core→graphs",
      "src/ledger/runs.ts:1 core→nodes",
      "src/context/budget.ts:1 core→entry",
      "src/memory/lessons.ts:1 core→entry",
      "tools/read-file.ts:3 tools→nodes",
      "nodes/act.ts:1 nodes→graphs",
      "graphs/coding-agent.ts:1 graphs→entry",
    ]);
    expect(describeViolation(found[0]!)).toBe('src/runtime.ts:1 imports "../graphs/coding-agent.js" (core → graphs): the core ring may not import from the graphs ring');
  });
});
