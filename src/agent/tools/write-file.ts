import { confined } from "../../workspace/confined.js";
import { z } from "zod";
import { resolveInWorkspace } from "../../workspace/paths.js";
import { replaceFile } from "../../workspace/replace-file.js";
import { builtinTool } from "../../tool-catalogue.js";
import { defineTool, toolError } from "./tool.js";

export const WriteFileArgs = z
  .object({
    path: z.string().min(1).describe("File path relative to the workspace root."),
    content: z.string().describe("The complete new content of the file."),
  })
  .strict();
export type WriteFileArgs = z.infer<typeof WriteFileArgs>;

/** Creates or overwrites a file with the given content. */
export const writeFileTool = defineTool({
  ...builtinTool("write_file"),
  description:
    "Create a file, or replace a file's whole content. Parent directories are created. " + "For a small change to an existing file prefer edit_file.",
  schema: WriteFileArgs,
  // Writing the same content twice leaves the same file.
  idempotent: true,
  writes: "reported",
  async run(args, ctx) {
    const p = resolveInWorkspace(ctx.workspace, args.path, { write: true });
    let existed = true;
    try {
      const st = confined(ctx.workspace).stat(p.rel);
      if (st.isDirectory()) return toolError(`${p.rel} is a directory; give a file path.`);
    } catch {
      existed = false;
    }
    try {
      // Replaced, never written in place: a hard link's other names may lie outside the workspace.
      await replaceFile(ctx.workspace, p.rel, args.content);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "EACCES" || code === "EROFS") return toolError(`Cannot write ${p.rel}: ${code}.`, "permission_denied");
      throw err;
    }
    const lines = args.content === "" ? 0 : args.content.split("\n").length - (args.content.endsWith("\n") ? 1 : 0);
    return {
      status: "ok",
      output: `${existed ? "Overwrote" : "Created"} ${p.rel} (${lines} lines, ${Buffer.byteLength(args.content)} bytes).`,
      filesChanged: { created: existed ? [] : [p.rel], modified: existed ? [p.rel] : [], deleted: [] },
    };
  },
});
