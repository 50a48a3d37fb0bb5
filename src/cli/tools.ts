import type { Command } from "commander";
import { resolveWorkspace } from "../workspace/location.js";
import { printJson } from "./common.js";
import type { WorkspaceArgs } from "../ledger/open-state.js";
import type { ToolSource } from "../agent/tools/index.js";
import type { ToolApproval, ToolRisk } from "../tool-catalogue.js";

export interface ToolsArgs extends WorkspaceArgs {
  allowNetwork?: boolean;
}

/** One tool as `ledgerloop tools` lists it: what the model sees (name, description, JSON schema), its source and risk. */
export interface ToolRow {
  name: string;
  source: ToolSource;
  risk: ToolRisk;
  approve: ToolApproval;
  /** False for a configured tool a run would not offer (`why` says why). */
  offered: boolean;
  why?: string;
  description: string;
  parameters: Record<string, unknown>;
}

/** Every tool a run in the workspace would give the model, as the model sees it, plus configured tools it would not. */
export async function handleTools(args: ToolsArgs): Promise<ToolRow[]> {
  const [{ TOOLS, toolSpecs }, { projectTools, projectTool }, { readConfig }] = await Promise.all([
    import("../agent/tools/index.js"),
    import("../agent/tools/project.js"),
    import("../config.js"),
  ]);
  const workspace = resolveWorkspace(args.workspace ?? process.cwd());
  // The same validation as a run: a bad entry is refused with the path of its field.
  const { config } = readConfig(workspace);
  const { offered, withheld } = projectTools(config.tools ?? [], { allowNetwork: args.allowNetwork ?? config.sandbox?.network ?? false });
  const rows: ToolRow[] = [...TOOLS, ...offered].map((t) => {
    const spec = toolSpecs([t])[0]!;
    return { name: t.name, source: t.source, risk: t.risk, approve: t.approve, offered: true, description: spec.description, parameters: spec.parameters };
  });
  for (const w of withheld) {
    const t = projectTool(w.config);
    const spec = toolSpecs([t])[0]!;
    rows.push({ name: t.name, source: t.source, risk: t.risk, approve: t.approve, offered: false, why: w.why, description: spec.description, parameters: spec.parameters });
  }
  if (config.mcpServers && Object.keys(config.mcpServers).length) {
    // The servers are started (through the sandbox, as a run would) to ask them for their tools.
    const [{ loadMcpTools }, { createSandbox }] = await Promise.all([import("../agent/tools/mcp.js"), import("../sandbox/executor.js")]);
    const allowNetwork = args.allowNetwork ?? config.sandbox?.network ?? false;
    const set = await loadMcpTools(config.mcpServers, { sandbox: createSandbox({ workspace, allowNetwork }), workspace, allowNetwork, taken: rows.map((r) => r.name) });
    try {
      const row = (t: (typeof set.offered)[number], why?: string): ToolRow => {
        const spec = toolSpecs([t])[0]!;
        return { name: t.name, source: t.source, risk: t.risk, approve: t.approve, offered: !why, ...(why ? { why } : {}), description: spec.description, parameters: spec.parameters };
      };
      rows.push(...set.offered.map((t) => row(t)), ...set.withheld.map((w) => row(w.tool, w.why)));
      for (const p of set.problems) process.stderr.write(`ledgerloop tools: ${p}\n`);
    } finally {
      await set.close();
    }
  }
  return rows;
}

function argsLine(parameters: Record<string, unknown>): string {
  const props = (parameters.properties ?? {}) as Record<string, { type?: unknown }>;
  const required = new Set((parameters.required as string[] | undefined) ?? []);
  return Object.entries(props)
    .map(([k, v]) => `${k}${required.has(k) ? "" : "?"}: ${Array.isArray(v.type) ? v.type.join("|") : String(v.type ?? "any")}`)
    .join(", ");
}

export function registerTools(program: Command): void {
  program
    .command("tools")
    .description("list every tool the model would get in this workspace (built-in and project tools), with its source, risk and arguments")
    .option("-w, --workspace <dir>", "the workspace directory (default: current directory)")
    .option("--allow-network", "as a run with --allow-network would get them")
    .option("--json", "one JSON object per tool: name, source, risk, approve, description, parameters (JSON schema)")
    .action(async (opts: ToolsArgs) => {
      const rows = await handleTools(opts);
      for (const r of rows) {
        if (opts.json) printJson(r);
        else {
          const first = r.description.split(/(?<=\.)\s/)[0]!;
          process.stdout.write(`${r.name.padEnd(16)} ${r.source.padEnd(10)} ${r.risk.padEnd(7)} {${argsLine(r.parameters)}}${r.offered ? "" : `  [not offered: ${r.why}]`}\n    ${first}\n`);
        }
      }
    });
}
