import fs from "node:fs/promises";
import { z } from "zod";
import { walkFiles } from "../../workspace/files.js";
import { resolveInWorkspace } from "../../workspace/paths.js";
import { builtinTool } from "../../tool-catalogue.js";
import { defineTool, toolError } from "./tool.js";

const LIMIT = 500;

export const ListFilesArgs = z
  .object({
    path: z.string().min(1).optional().describe("Directory relative to the workspace root (default: the root)."),
    glob: z.string().min(1).optional().describe('Glob filter, e.g. "*.ts" (any depth) or "src/**/*.test.ts".'),
  })
  .strict();
export type ListFilesArgs = z.infer<typeof ListFilesArgs>;

/** Lists files under a directory, honouring .gitignore. */
export const listFilesTool = defineTool({
  ...builtinTool("list_files"),
  description:
    `List files in the workspace (recursively, honouring .gitignore; at most ${LIMIT}). ` +
    "Paths are relative to the workspace root. A glob without a slash matches file names at any depth.",
  schema: ListFilesArgs,
  idempotent: true,
  writes: "nothing",
  async run(args, ctx) {
    const dir = resolveInWorkspace(ctx.workspace, args.path ?? ".");
    const st = await fs.stat(dir.abs).catch(() => null);
    if (!st) return toolError(`No such directory: ${dir.rel}.`);
    if (!st.isDirectory()) return toolError(`${dir.rel} is a file, not a directory; use read_file.`);
    const r = await walkFiles(ctx.workspace, {
      under: dir.rel === "." ? undefined : dir.rel,
      glob: args.glob,
      limit: LIMIT,
    });
    if (r.files.length === 0) {
      return { status: "ok", output: `No files${args.glob ? ` matching ${args.glob}` : ""} under ${dir.rel}.` };
    }
    const notes: string[] = [];
    if (r.truncated) notes.push(`[only the first ${LIMIT} shown; narrow with path or glob]`);
    if (r.skippedIgnored) notes.push(`[${r.skippedIgnored} gitignored entries not listed]`);
    return { status: "ok", output: [...r.files, ...notes].join("\n") };
  },
});
