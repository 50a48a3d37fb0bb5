import fs from "node:fs";
import type { Command } from "commander";
import { CliError } from "../errors.js";
import type { SourceScores } from "../retrieval/fusion.js";
import type { HitSources, SearchScope } from "../retrieval/hybrid.js";
import { resolveWorkspace, stateLocation } from "../workspace/location.js";
import { intOption, printJson, workspaceOptions } from "./common.js";
import { openRetriever, type RetrievalArgs } from "./index.js";

export interface SearchArgs extends RetrievalArgs {
  k?: number;
  scope?: string;
  /** Only events of this run. */
  thread?: string;
}

/** One result line of `ledgerloop search --json`: a code range, or a ledger event (`kind: "event"`). */
export type SearchResult =
  | { kind: "code"; path: string; startLine: number; endLine: number; score: number; sources: HitSources; symbols: string[]; preview: string }
  | { kind: "event"; eventId: string; threadId: string; seq: number; type: string; score: number; sources: SourceScores; preview: string };

const SCOPES: SearchScope[] = ["code", "events", "all"];

/** Searches a workspace (refreshing its index first): code ranges with workspace-relative paths, and/or ledger events. */
export async function handleSearch(query: string, args: SearchArgs): Promise<{ results: SearchResult[] }> {
  const scope = (args.scope ?? "code") as SearchScope;
  if (!SCOPES.includes(scope)) throw new CliError(`--scope must be one of ${SCOPES.join(", ")}, got "${args.scope}"`, 2, "CONFIG_INVALID");
  if (!query.trim()) throw new CliError("the search query is empty", 2, "CONFIG_INVALID");
  if (scope !== "code") {
    const { stateDir, dbPath } = stateLocation(resolveWorkspace(args.workspace ?? process.cwd()), args.stateDir);
    if (!fs.existsSync(dbPath)) {
      throw new CliError(`--scope ${scope} needs a ledger, and ${stateDir} has no state database; start a run with \`ledgerloop run\``, 1, "NO_STATE");
    }
  }
  const opened = await openRetriever(args);
  try {
    // Incremental: only files whose size or mtime changed since the last index are read again.
    await opened.retriever.index();
    const hits = await opened.retriever.searchAll(query, { k: args.k ?? 10, scope, ...(args.thread ? { threadId: args.thread } : {}) });
    return {
      results: hits.map((h): SearchResult =>
        h.kind === "code"
          ? { kind: "code", path: h.path, startLine: h.startLine, endLine: h.endLine, score: h.score, sources: h.sources, symbols: h.symbols, preview: h.preview }
          : { kind: "event", eventId: h.eventId, threadId: h.threadId, seq: h.seq, type: h.type, score: h.score, sources: h.sources, preview: h.preview },
      ),
    };
  } finally {
    await opened.close();
  }
}

function sourcesText(s: SourceScores | HitSources): string {
  return Object.entries(s)
    .map(([k, v]) => (Array.isArray(v) ? `${k}: ${v.map((m) => JSON.stringify(m)).join(", ")}` : `${k} ${Number(v).toFixed(2)}`))
    .join(", ");
}

export function registerSearch(program: Command): void {
  workspaceOptions(
    program
      .command("search")
      .description("search the workspace's code and/or its runs' ledger events (hybrid: n-grams, symbols, paths, vectors)")
      .argument("<query>", "identifiers, words, a path fragment or a description")
      .option("-k <n>", "how many results (default 10)", intOption("-k"))
      .option("--scope <scope>", "code (default), events or all")
      .option("--thread <id>", "only events of this run")
      .option("--embedder <name>", 'embedder: "hashed" (default), "xenova:<model>" or "openai:<model>"')
      .option("--models-dir <dir>", "where xenova: model files are")
      .option("--json", 'print {"results": [...]} as one JSON object'),
  ).action(async (query: string, opts: SearchArgs) => {
    const out = await handleSearch(query, opts);
    if (opts.json) {
      printJson(out);
      return;
    }
    if (out.results.length === 0) process.stdout.write(`no results for "${query}"\n`);
    for (const r of out.results) {
      if (r.kind === "code") process.stdout.write(`${r.path}:${r.startLine}-${r.endLine}  ${r.score.toFixed(3)}  (${sourcesText(r.sources)})\n${r.preview}\n\n`);
      else process.stdout.write(`event ${r.eventId} #${r.seq} ${r.type} [${r.threadId}]  ${r.score.toFixed(3)}  (${sourcesText(r.sources)})\n${r.preview.split("\n").slice(0, 4).join("\n")}\n\n`);
    }
  });
}
