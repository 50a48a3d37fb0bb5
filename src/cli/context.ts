import type { Command } from "commander";
import { getContext, type ContextArgs } from "../inspect/context.js";
import type { ContextItem } from "../state.js";
import { intOption, printJson, stateOption, workspaceOptions } from "./common.js";
import { declareCommand } from "./command-specs.js";

function table(rows: ContextItem[]): string {
  return rows
    .map(
      (i) =>
        `  ${i.section.padEnd(10)} ${String(i.tokens).padStart(6)}  ${i.source}${i.score !== undefined ? `  score ${i.score.toFixed(2)}` : ""}${i.note ? `  (${i.note})` : ""}`,
    )
    .join("\n");
}

export function registerContext(program: Command): void {
  const cmd = workspaceOptions(
    declareCommand(program, "context")
      .option("--step <n>", "the decide step (default: the latest)", intOption("--step"))
      .option("--full", "print the whole prompt, not just its first lines per message")
      .option("--json", "one JSON object"),
  );
  stateOption(cmd).action(async (thread: string, opts: ContextArgs) => {
    const r = await getContext(thread, opts);
    if (opts.json) return printJson(r);
    const out: string[] = [`step ${r.step}: ${r.tokens} of ${r.budget} tokens (event ${r.eventId})`];
    if (r.prefixReuse) {
      const how = r.layout ? `${r.layout.built}${r.layout.built === "compaction" ? ` (${r.layout.reason})` : ""}` : "";
      out.push(
        `prefix reuse: ${r.prefixReuse.reusedTokens} of ${r.prefixReuse.tokens} message tokens as the previous prompt (${(r.prefixReuse.ratio * 100).toFixed(1)}%)${how ? `; ${how}` : ""}`,
      );
    }
    out.push("included:", table(r.items));
    out.push(r.omitted.length ? `left out (${r.omitted.reduce((n, i) => n + i.tokens, 0)} tokens):\n${table(r.omitted)}` : "left out: nothing");
    out.push("prompt:");
    for (const m of r.messages) {
      const body = opts.full ? m.content : m.content.split("\n").slice(0, 6).join("\n") + (m.content.split("\n").length > 6 ? "\n  …" : "");
      const calls = m.role === "assistant" && m.toolCalls?.length ? ` → ${m.toolCalls.map((c) => c.name).join(", ")}` : "";
      out.push(`--- ${m.role}${m.role === "tool" ? ` (${m.name})` : ""}${calls}\n${body}`);
    }
    process.stdout.write(out.join("\n") + "\n");
  });
}
