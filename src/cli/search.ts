import type { Command } from "commander";
import { searchWorkspace, type SearchArgs } from "../inspect/search.js";
import type { SourceScores } from "../retrieval/fusion.js";
import type { HitSources } from "../retrieval/hybrid.js";
import { declareCommand } from "./command-specs.js";
import { intOption, printJson, workspaceOptions } from "./common.js";
import { tuneForShortProcess } from "./short-process.js";

function sourcesText(s: SourceScores | HitSources): string {
  return Object.entries(s)
    .map(([k, v]) => (Array.isArray(v) ? `${k}: ${v.map((m) => JSON.stringify(m)).join(", ")}` : `${k} ${Number(v).toFixed(2)}`))
    .join(", ");
}

export function registerSearch(program: Command): void {
  workspaceOptions(
    declareCommand(program, "search")
      .option("-k <n>", "how many results (default 10)", intOption("-k"))
      .option("--scope <scope>", "code (default), events or all")
      .option("--thread <id>", "only events of this run")
      .option("--embedder <name>", 'embedder: "hashed" (default), "xenova:<model>" or "openai:<model>"')
      .option("--models-dir <dir>", "where xenova: model files are")
      .option("--json", 'print {"results": [...]} as one JSON object'),
  ).action(async (query: string, opts: SearchArgs) => {
    tuneForShortProcess();
    const out = await searchWorkspace(query, opts);
    if (opts.json) {
      printJson(out);
      return;
    }
    if (out.results.length === 0) process.stdout.write(`no results for "${query}"\n`);
    for (const r of out.results) {
      if (r.kind === "code")
        process.stdout.write(`${r.path}:${r.startLine}-${r.endLine}  ${r.score.toFixed(3)}  (${sourcesText(r.sources)})\n${r.preview}\n\n`);
      else
        process.stdout.write(
          `event ${r.eventId} #${r.seq} ${r.type} [${r.threadId}]  ${r.score.toFixed(3)}  (${sourcesText(r.sources)})\n${r.preview.split("\n").slice(0, 4).join("\n")}\n\n`,
        );
    }
  });
}
