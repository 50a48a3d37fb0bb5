import fs from "node:fs";
import { CliError } from "../errors.js";
import type { SourceScores } from "../retrieval/fusion.js";
import type { HitSources, SearchScope } from "../retrieval/hybrid.js";
import { openRetriever, type RetrievalArgs } from "../retrieval/open-retriever.js";
import { resolveWorkspace, stateLocation } from "../workspace/location.js";

/** What `search` looks for beside the query: how many results, where, and in which run's events. */
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
export async function searchWorkspace(query: string, args: SearchArgs): Promise<{ results: SearchResult[] }> {
  const scope = (args.scope ?? "code") as SearchScope;
  if (!SCOPES.includes(scope)) throw new CliError(`--scope must be one of ${SCOPES.join(", ")}, got "${args.scope}"`, 2, "CONFIG_INVALID");
  if (!query.trim()) throw new CliError("the search query is empty", 2, "CONFIG_INVALID");
  if (scope !== "code") {
    const { stateDir, dbPath } = stateLocation(resolveWorkspace(args.workspace ?? process.cwd()), args.stateDir);
    if (!fs.existsSync(dbPath)) {
      throw new CliError(`--scope ${scope} needs a ledger, and ${stateDir} has no state database; start a run with \`ledgerloop run\``, 1, "NO_STATE");
    }
  }
  // Vectors only from a Chroma server that already runs: one search never starts a server.
  const opened = await openRetriever(args, undefined, { vectorServer: "running" });
  try {
    // Incremental: only files whose size or mtime changed since the last index are read again.
    await opened.retriever.index();
    const hits = await opened.retriever.searchAll(query, { k: args.k ?? 10, scope, ...(args.thread ? { threadId: args.thread } : {}) });
    return {
      results: hits.map((h): SearchResult =>
        h.kind === "code"
          ? {
              kind: "code",
              path: h.path,
              startLine: h.startLine,
              endLine: h.endLine,
              score: h.score,
              sources: h.sources,
              symbols: h.symbols,
              preview: h.preview,
            }
          : { kind: "event", eventId: h.eventId, threadId: h.threadId, seq: h.seq, type: h.type, score: h.score, sources: h.sources, preview: h.preview },
      ),
    };
  } finally {
    await opened.close();
  }
}
