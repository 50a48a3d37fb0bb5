import type { Command } from "commander";
import type { IndexProgress, IndexReport, RetrieverStats } from "../retrieval/hybrid.js";
import { openRetriever, type RetrievalArgs } from "../retrieval/open-retriever.js";
import { printJson, workspaceOptions } from "./common.js";
import { declareCommand } from "./command-specs.js";

/** What `ledgerloop index` reports. */
export interface IndexSummary extends IndexReport {
  workspace: string;
  indexFile: string;
  chunks: number;
  symbols: number;
  events: number;
  vector: RetrieverStats["vector"];
  history: RetrieverStats["history"];
}

/** Builds or updates the search index of a workspace (code, and ledger events when a state database exists). */
export async function handleIndex(args: RetrievalArgs, onProgress?: (p: IndexProgress) => void): Promise<IndexSummary> {
  const opened = await openRetriever(args);
  try {
    const report = await opened.retriever.index(onProgress ? { onProgress } : {});
    // The history is read beside the files; `index` reports once it is in too (bounded by its time budget).
    await opened.retriever.whenIdle();
    const st = await opened.retriever.stats();
    return {
      workspace: opened.workspace,
      indexFile: st.indexFile,
      ...report,
      chunks: st.chunks,
      symbols: st.symbols,
      events: st.events,
      vector: st.vector,
      history: st.history,
    };
  } finally {
    await opened.close();
  }
}

/** A progress bar on stderr (files and files/s) while a TTY is attached; nothing otherwise. */
export async function progressBar(): Promise<{ onProgress: (p: IndexProgress) => void; stop(): void }> {
  const { default: cliProgress } = await import("cli-progress");
  const bar = new cliProgress.SingleBar(
    {
      stream: process.stderr,
      format: "{phase} [{bar}] {value}/{total} files | {rate} files/s | {duration_formatted}",
      hideCursor: true,
      clearOnComplete: true,
    },
    cliProgress.Presets.shades_classic,
  );
  let started = false;
  let phase = "";
  const t0 = Date.now();
  return {
    onProgress(p) {
      if (p.phase === "scan") return;
      const label = p.phase === "vectors" ? "embedding" : "indexing ";
      const rate = ((p.done / Math.max(1, Date.now() - t0)) * 1000).toFixed(0);
      if (!started || phase !== p.phase) {
        if (started) bar.stop();
        bar.start(p.total, p.done, { phase: label, rate });
        started = true;
        phase = p.phase;
      } else bar.update(p.done, { rate });
    },
    stop() {
      if (started) bar.stop();
    },
  };
}

function describe(s: IndexSummary): string {
  const skipped = Object.entries(s.skipped)
    .filter(([, n]) => n > 0)
    .map(([why, n]) => `${n} ${why}`)
    .join(", ");
  const lines = [
    `indexed ${s.indexed} of ${s.files} files (${s.unchanged} unchanged, ${s.removed} removed) in ${(s.durationMs / 1000).toFixed(1)} s: ` +
      `${s.chunks} chunks, ${s.symbols} symbols, ${s.events} ledger events`,
    `skipped: ${skipped || "none"} (binary = a NUL byte in the first 8 KiB; huge = over 1 MiB)`,
    `vectors: ${s.vector.state}${s.vector.store ? ` in ${s.vector.store}` : ""}, embedder ${s.vector.embedder} (${s.vector.dimensions === null ? "not started" : `${s.vector.dimensions} dims`})${s.vector.error ? ` — ${s.vector.error}` : ""}`,
    s.history.state === "off"
      ? `history: off (${s.history.detail})`
      : `history: ${s.history.state}, ${s.history.commits} commit(s) stored (${s.history.detail})`,
    `index: ${s.indexFile}`,
  ];
  if (s.invalidUtf8.count) lines.push(`${s.invalidUtf8.count} file(s) were not valid UTF-8 and were indexed as Latin-1: ${s.invalidUtf8.paths.join(", ")}`);
  return lines.join("\n");
}

export function registerIndex(program: Command): void {
  workspaceOptions(
    declareCommand(program, "index")
      .option(
        "--embedder <name>",
        'embedder: "hashed" (default, offline), "xenova:<model>" with local model files, or "openai:<model>" (an OpenAI-compatible /v1/embeddings)',
      )
      .option("--models-dir <dir>", "where xenova: model files are (default <state dir>/models)")
      .option("--json", "print the report as one JSON object"),
  ).action(async (opts: RetrievalArgs) => {
    const bar = await progressBar();
    let summary: IndexSummary;
    try {
      summary = await handleIndex(opts, bar.onProgress);
    } finally {
      bar.stop();
    }
    if (opts.json) printJson(summary);
    else process.stdout.write(describe(summary) + "\n");
  });
}
