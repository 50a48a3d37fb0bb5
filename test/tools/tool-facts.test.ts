import fs from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { getTool, TOOLS, toolSpecs } from "../../src/agent/tools/index.js";
import { adjustVerdict, projectTool } from "../../src/agent/tools/project.js";
import { handleTools, withToolsTable } from "../../src/cli/tools.js";
import { parseConfig } from "../../src/config.js";
import type { PolicyVerdict } from "../../src/sandbox/policy.js";
import { runLogFile } from "../../src/workspace/location.js";
import { BUILTIN_TOOL_NAMES } from "../../src/tool-catalogue.js";
import { jsonLines } from "../helpers/cli.js";
import { cleanupTemp, REPO, tempWorkspace } from "../helpers/workspace.js";

afterAll(() => cleanupTemp());

// Each consumer of a tool's facts is checked against the registry (agent/tools/index.ts), so one
// that kept a table of its own (as telemetry once did, showing the process tools as exec) fails.
describe("a tool's facts are declared once, on its definition, and every reader takes them there", () => {
  it("the registry offers the catalogue's tools in its order, with its risks; built-in tools leave approval to the policy", () => {
    expect(TOOLS.map((t) => t.name)).toEqual([...BUILTIN_TOOL_NAMES]);
    for (const t of TOOLS) expect([t.source, t.approve], t.name).toEqual(["built-in", "policy"]);
    expect(Object.fromEntries(TOOLS.map((t) => [t.name, t.risk]))).toMatchObject({
      process_status: "read",
      process_output: "read",
      start_process: "exec",
      stop_process: "exec",
      read_file: "read",
      run_command: "exec",
      git_commit: "write",
    });
  });

  it("config validation refuses exactly the registry's names for a project tool", () => {
    for (const t of TOOLS) {
      expect(() => parseConfig({ tools: [{ name: t.name, description: "x", command: "true" }] }), t.name).toThrow(
        `tools[0].name: "${t.name}" is a built-in tool; choose another name`,
      );
    }
    expect(parseConfig({ tools: [{ name: "word_count", description: "x", command: "true" }] }).tools?.[0]?.name).toBe("word_count");
  });

  it("`ledgerloop tools --json` lists exactly the registry, then the project's tools, as their definitions say", async () => {
    const ws = tempWorkspace(undefined, {
      "ledgerloop.config.json": JSON.stringify({ tools: [{ name: "deploy", description: "Deploy.", command: "echo deployed", risk: "exec", approve: "ask" }] }),
    });
    const rows = await handleTools({ workspace: ws });
    const deploy = projectTool({ name: "deploy", description: "Deploy.", command: "echo deployed", risk: "exec", approve: "ask" });
    expect(rows).toEqual(
      [...TOOLS, deploy].map((t) => {
        const spec = toolSpecs([t])[0]!;
        return { name: t.name, source: t.source, risk: t.risk, approve: t.approve, offered: true, description: spec.description, parameters: spec.parameters };
      }),
    );
    expect(rows.at(-1)).toMatchObject({ source: "project", approve: "ask" });
  });

  it("docs/commands.md's table of the built-in tools is what `npm run docs` makes from the registry", async () => {
    const committed = fs.readFileSync(path.join(REPO, "docs/commands.md"), "utf8");
    expect(committed, "run `npm run docs` and commit docs/commands.md").toBe(await withToolsTable(committed));
    for (const t of TOOLS) expect(committed).toContain(`| \`${t.name}\` | ${t.risk} |`);
  });

  it("the approval check reads a tool's approve from its definition", () => {
    const allow: PolicyVerdict = { decision: "allow", rule: "r", reason: "ok", parts: [] };
    const ask = projectTool({ name: "deploy", description: "Deploy.", command: "echo deployed", risk: "exec", approve: "ask" });
    expect(adjustVerdict(ask, allow)).toMatchObject({ decision: "ask", rule: "tool.approve" });
    const open = projectTool({ name: "lint", description: "Lint.", command: "true", risk: "read", approve: "allow" });
    expect(adjustVerdict(open, { ...allow, decision: "ask" })).toMatchObject({ decision: "allow", rule: "tool.approve" });
    // A built-in tool's approval is "policy": the verdict stands as it is.
    expect(adjustVerdict(getTool("run_command"), allow)).toBe(allow);
  });

  it("a run's log lines (and trace spans) carry each tool's risk from its definition", async () => {
    const { testAgent } = await import("../helpers/agent.js");
    const ws = tempWorkspace(undefined, { "notes.txt": "hello\n" });
    const call = (name: string, args: Record<string, unknown>) => ({ content: name, tool_calls: [{ name, args }] });
    const agent = await testAgent(
      ws,
      {
        decide: [
          // No process of that name: an error result, logged like any other tool run.
          call("process_status", { name: "srv" }),
          call("process_output", { name: "srv" }),
          call("run_command", { command: "true" }),
          call("read_file", { path: "notes.txt" }),
          call("finish", { summary: "looked" }),
        ],
      } as never,
      { approve: "auto" },
    );
    try {
      expect((await agent.run("look around")).status).toBe("finished");
      const lines = jsonLines<{ event: string; tool?: string; risk?: string }>(fs.readFileSync(runLogFile(path.join(ws, ".ledgerloop"), "t1"), "utf8"));
      const runs = lines.filter((l) => l.event === "tool_run").map((l) => [l.tool, l.risk]);
      const called = ["process_status", "process_output", "run_command", "read_file", "finish"];
      expect(runs).toEqual(called.map((name) => [name, getTool(name)!.risk]));
      expect(Object.fromEntries(runs)).toMatchObject({ process_status: "read", process_output: "read" });
    } finally {
      await agent.close();
    }
  }, 120_000);
});
