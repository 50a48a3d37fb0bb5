import { z } from "zod";
import { confined } from "../../workspace/confined.js";
import { resolveInWorkspace } from "../../workspace/paths.js";
import { builtinTool } from "../../tool-catalogue.js";
import { defineTool, toolError } from "./tool.js";

const MAX_LINES = 2000;
const MAX_BYTES = 512 * 1024;

export const ReadFileArgs = z
  .object({
    path: z.string().min(1).describe("File path relative to the workspace root."),
    startLine: z.number().int().min(1).optional().describe("First line to return (1-based)."),
    endLine: z.number().int().min(1).optional().describe("Last line to return (inclusive)."),
  })
  .strict()
  .refine((a) => a.startLine === undefined || a.endLine === undefined || a.endLine >= a.startLine, {
    message: "endLine must be >= startLine",
    path: ["endLine"],
  });
export type ReadFileArgs = z.infer<typeof ReadFileArgs>;

/** Reads a text file, with line numbers, optionally a line range. */
export const readFileTool = defineTool({
  ...builtinTool("read_file"),
  description:
    "Read a text file from the workspace. Returns the lines prefixed with their line numbers (`  12| code`). " +
    `Use startLine/endLine for a range; without them at most ${MAX_LINES} lines are returned. ` +
    "Line numbers are for reference only: do not include them in edit_file's oldText.",
  schema: ReadFileArgs,
  idempotent: true,
  writes: "nothing",
  async run(args, ctx) {
    const p = resolveInWorkspace(ctx.workspace, args.path);
    let buf: Buffer;
    try {
      // resolveInWorkspace judged the path; the read itself goes by descriptor, so a link swapped in
      // since (by a background process) is not followed out.
      const ws = confined(ctx.workspace);
      const st = ws.stat(p.rel);
      if (st.isDirectory()) return toolError(`${p.rel} is a directory; use list_files to see its contents.`);
      if (!st.isFile()) return toolError(`${p.rel} is not a regular file (a FIFO, socket or device); it is not read.`);
      if (st.size > MAX_BYTES * 8) {
        return toolError(`${p.rel} is ${st.size} bytes, too large to read whole; read a range with startLine/endLine.`);
      }
      buf = ws.readFile(p.rel, { maxBytes: MAX_BYTES * 8 });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "FILE_TOO_LARGE") return toolError(`${p.rel} grew too large to read whole while it was read; read a range with startLine/endLine.`);
      if (code === "ENOENT") return toolError(`No such file: ${p.rel}. Use list_files or search_code to find the right path.`);
      if (code === "EACCES") return toolError(`Permission denied reading ${p.rel}.`, "permission_denied");
      throw err;
    }
    if (buf.subarray(0, 8192).includes(0)) return toolError(`${p.rel} looks binary (${buf.length} bytes); it is not shown.`);
    const lines = buf.toString("utf8").split("\n");
    if (lines.length > 1 && lines[lines.length - 1] === "") lines.pop();
    const total = lines.length;
    const start = args.startLine ?? 1;
    if (start > Math.max(total, 1)) return toolError(`${p.rel} has ${total} lines; startLine ${start} is past the end.`);
    let end = Math.min(args.endLine ?? total, total, start + MAX_LINES - 1);
    const out: string[] = [];
    let bytes = 0;
    const width = String(end).length;
    for (let i = start; i <= end; i++) {
      let line = `${String(i).padStart(width)}| ${lines[i - 1]}`;
      if (i === start && line.length > MAX_BYTES) {
        // One huge line (minified code, a data blob): show its beginning rather than nothing.
        line = `${line.slice(0, MAX_BYTES)} [line ${i} is ${lines[i - 1]!.length} chars; cut here]`;
      }
      bytes += line.length + 1;
      if (bytes > MAX_BYTES && i > start) {
        end = i - 1;
        break;
      }
      out.push(line);
    }
    const header = `${p.rel} (lines ${start}-${end} of ${total})`;
    const more = end < total && args.endLine === undefined ? `\n[${total - end} more lines; pass startLine: ${end + 1} to continue]` : "";
    return { status: "ok", output: `${header}\n${out.join("\n")}${more}` };
  },
});
