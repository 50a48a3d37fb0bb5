import fs from "node:fs";
import path from "node:path";
import type { Command } from "commander";
import { errorMessage, nativeModuleError } from "../errors.js";
import { installCommand, MissingPackageError } from "../optional-packages.js";
import { levelPromises, type IsolationLevel } from "../sandbox/isolation.js";
import { printJson } from "./common.js";
import { declareCommand } from "./command-specs.js";

export interface DoctorCheck {
  name: string;
  ok: boolean;
  detail: string;
}

export interface DoctorReport {
  sandbox: { level: string; reasons: string[]; uid: string; enforced: string[]; notEnforced: string[] };
  checks: DoctorCheck[];
}

/** What this machine gives a run: isolation level and why, and the parts the runtime needs. */
export async function handleDoctor(args: { workspace?: string; model?: string; embedder?: string; state?: string }): Promise<DoctorReport> {
  const workspace = path.resolve(args.workspace ?? process.cwd());
  const [{ Database }, { CONFIG_FILE, loadConfig }, { probeEndpoint }, { detectIsolation }, { createSandbox }, { chromaCli, chromaHostScript, probeChroma }] =
    await Promise.all([
      import("../sqlite/driver.js"),
      import("../config.js"),
      import("../models/probe.js"),
      import("../sandbox/detect.js"),
      import("../sandbox/executor.js"),
      import("../retrieval/chroma-server.js"),
    ]);
  // Doctor probes for real (and refreshes the per-machine probe cache), never reads it.
  const report = detectIsolation({ refresh: true });
  const sandbox = createSandbox({ level: "auto", workspace, report });
  const checks: DoctorCheck[] = [];
  const check = async (name: string, fn: () => string | Promise<string>) => {
    try {
      checks.push({ name, ok: true, detail: await fn() });
    } catch (err) {
      checks.push({ name, ok: false, detail: errorMessage(nativeModuleError(err) ?? err) });
    }
  };
  await check("node", () => {
    const [major, minor] = process.versions.node.split(".").map(Number);
    if (major! < 20 || (major === 20 && minor! < 19)) throw new Error(`node ${process.versions.node}: ledgerloop needs 20.19 or newer`);
    return `node ${process.versions.node} on ${process.platform}/${process.arch}`;
  });
  await check("sqlite", () => {
    const db = new Database(":memory:");
    try {
      db.exec("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='trigram')");
      return `SQLite ${(db.prepare("SELECT sqlite_version() AS v").get() as { v: string }).v} with FTS5 trigram`;
    } finally {
      db.close();
    }
  });
  await check("tokenizer", async () => {
    const { loadTokenCounter } = await import("../context/tokens.js");
    const c = await loadTokenCounter("o200k_base");
    return `gpt-tokenizer o200k_base (${c.count("hello world")} tokens for "hello world")`;
  });
  await check("tree-sitter", async () => {
    const { extractSymbols } = await import("../symbols/extract.js");
    const syms = await extractSymbols("export function probe(): number { return 1; }\n", "probe.ts");
    return `grammars load (found ${syms.map((s) => s.name).join(", ")})`;
  });
  await check("chroma", async () => {
    // A shared server (every worker's): it must answer now, or vector search degrades on every run.
    const shared = process.env.CHROMA_URL?.trim();
    // Resolved like the retriever resolves it: the package may sit in a parent node_modules when installed.
    let cli: string;
    try {
      cli = chromaCli();
    } catch (err) {
      if (!(err instanceof MissingPackageError)) throw err;
      // Asked for by CHROMA_URL, a server no run can use without the client package: a failure, not a note.
      if (shared)
        throw new Error(
          `CHROMA_URL is set but chromadb is not installed, so runs cannot use it and vector search is off: run \`${installCommand(["chromadb"])}\``,
          { cause: err },
        );
      // An optional package: without it search uses the n-gram index, symbols and git history.
      return `chromadb is not installed: vector search is off (optional; \`${installCommand(["chromadb"])}\` turns it on)`;
    }
    if (shared) {
      const { url, version } = await probeChroma(shared);
      return `Chroma ${version} at ${url} (CHROMA_URL): heartbeat ok`;
    }
    if (!fs.existsSync(cli)) throw new Error(`the chromadb package's bundled server is missing (${cli}): reinstall ledgerloop`);
    if (!fs.existsSync(chromaHostScript()))
      throw new Error(`ledgerloop's Chroma host script is missing (${chromaHostScript()}): rebuild (npm run build) or reinstall ledgerloop`);
    return "bundled server available (started per state dir on first search)";
  });
  await check("config", () => {
    const file = path.join(workspace, CONFIG_FILE);
    if (!fs.existsSync(file)) return `no ${CONFIG_FILE} in ${workspace} (defaults apply)`;
    loadConfig(workspace);
    return `${file} is valid`;
  });
  // Each MCP server started as a run would start it (through this sandbox), asked for its tools, stopped.
  let servers: Record<string, import("../config.js").McpServerConfig> = {};
  let network = false;
  try {
    const config = loadConfig(workspace);
    servers = config.mcpServers ?? {};
    network = config.sandbox?.network ?? false;
  } catch {
    // reported by the config check above
  }
  if (Object.keys(servers).length) {
    const { loadMcpTools } = await import("../agent/tools/mcp.js");
    const set = await loadMcpTools(servers, { sandbox, workspace, allowNetwork: network });
    try {
      for (const srv of set.servers) {
        const skipped = set.problems.filter((p) => p.startsWith(`MCP server "${srv.name}": `)).map((p) => p.slice(`MCP server "${srv.name}": `.length));
        checks.push({ name: `mcp:${srv.name}`, ok: srv.ok, detail: `${srv.detail}${skipped.length ? `; ${skipped.join("; ")}` : ""}` });
      }
    } finally {
      await set.close();
    }
  }
  await check("model", () => {
    const m = process.env.LEDGERLOOP_MODEL;
    const base = process.env.OPENAI_BASE_URL;
    const key = process.env.OPENAI_API_KEY ? "set" : "not set";
    return `LEDGERLOOP_MODEL=${m ?? "(not set)"}, OPENAI_BASE_URL=${base ?? "(default)"}, OPENAI_API_KEY ${key}`;
  });
  // An OpenAI-compatible model named by --model or LEDGERLOOP_MODEL: is its server there, does it
  // take the key, does it serve that model?
  const spec = args.model ?? process.env.LEDGERLOOP_MODEL;
  if (spec?.startsWith("openai:") && spec.length > "openai:".length) {
    const r = await probeEndpoint({
      baseURL: process.env.OPENAI_BASE_URL || "https://api.openai.com/v1",
      apiKey: process.env.OPENAI_API_KEY,
      model: spec.slice("openai:".length),
    });
    checks.push({ name: "endpoint", ...r });
  }
  // Retrieval extras: the git history the search reads, and an embeddings endpoint when one is named.
  await check("history", async () => {
    const { describeHistory } = await import("../retrieval/history-doctor.js");
    return describeHistory(workspace);
  });
  if (args.embedder) {
    await check("embedder", async () => {
      const { createEmbedder } = await import("../retrieval/embedders/factory.js");
      const e = await createEmbedder(args.embedder);
      await e.close?.();
      return `${e.id}: answers with ${e.dimensions}-dimensional vectors`;
    });
  }
  // The state named by --state or LEDGERLOOP_STATE_URL: reachable, its schema, what it holds, its queue.
  const { openStateAdmin } = await import("../state-admin/open-state-admin.js");
  checks.push(...(await (await openStateAdmin({ workspace, ...(args.state !== undefined ? { state: args.state } : {}) })).checks()));
  const promises = levelPromises(sandbox.level as IsolationLevel);
  return { sandbox: { level: sandbox.level, reasons: [...sandbox.reasons], uid: sandbox.uidFor(workspace).reason, ...promises }, checks };
}

export function registerDoctor(program: Command): void {
  declareCommand(program, "doctor")
    .option("-w, --workspace <dir>", "the workspace to check (default: current directory)")
    .option("-m, --model <spec>", "also check this model's endpoint: openai:<name> (default: $LEDGERLOOP_MODEL)")
    .option("--embedder <spec>", "also check this embedder, e.g. openai:<model> against $LEDGERLOOP_EMBEDDINGS_BASE_URL or $OPENAI_BASE_URL")
    .option("--state <url>", "also check this PostgreSQL state database (default: $LEDGERLOOP_STATE_URL)")
    .option("--json", "one JSON object")
    .action(async (opts: { workspace?: string; model?: string; embedder?: string; state?: string; json?: boolean }) => {
      const r = await handleDoctor(opts);
      process.exitCode = r.checks.every((c) => c.ok) ? 0 : 1;
      if (opts.json) return printJson(r);
      const out = [
        `sandbox: ${r.sandbox.level}`,
        ...r.sandbox.reasons.map((l) => `  ${l}`),
        `  commands run as: ${r.sandbox.uid}`,
        ...r.sandbox.enforced.map((l) => `  enforced: ${l}`),
        ...r.sandbox.notEnforced.map((l) => `  NOT enforced: ${l}`),
        "",
      ];
      for (const c of r.checks) out.push(`${c.ok ? "ok  " : "FAIL"} ${c.name.padEnd(12)} ${c.detail}`);
      process.stdout.write(out.join("\n") + "\n");
    });
}
