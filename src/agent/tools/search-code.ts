import { z } from "zod";
import { builtinTool } from "../../tool-catalogue.js";
import { defineTool } from "./tool.js";

export const SearchCodeArgs = z
  .object({
    query: z.string().min(1).max(500).describe("What to look for: identifiers, a path fragment, or a description."),
    k: z.number().int().min(1).max(50).optional().describe("How many results (default 10)."),
  })
  .strict();
export type SearchCodeArgs = z.infer<typeof SearchCodeArgs>;

/** Searches the workspace's code. */
export const searchCodeTool = defineTool({
  ...builtinTool("search_code"),
  description:
    "Search the workspace's code by identifiers, words or path fragments (`user role` also finds UserRole and " +
    "user_role). Returns the best matching file ranges with a preview; read them with read_file.",
  schema: SearchCodeArgs,
  idempotent: true,
  writes: "nothing",
  async run(args, ctx) {
    const hits = await ctx.searcher.search(args.query, args.k ?? 10);
    if (hits.length === 0) return { status: "ok", output: `No matches for "${args.query}".` };
    const out = hits.map((h) => `${h.path}:${h.startLine}-${h.endLine} (score ${h.score.toFixed(2)})\n${h.preview}`);
    return { status: "ok", output: out.join("\n\n") };
  },
});
