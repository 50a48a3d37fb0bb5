import { createHash } from "node:crypto";
import { confined } from "../../workspace/confined.js";
import { z } from "zod";
import { resolveInWorkspace } from "../../workspace/paths.js";
import { replaceFile } from "../../workspace/replace-file.js";
import { builtinTool } from "../../tool-catalogue.js";
import { defineTool, toolError } from "./tool.js";

export const EditFileArgs = z
  .object({
    path: z.string().min(1).describe("File path relative to the workspace root."),
    oldText: z.string().min(1).describe("Exact text to replace; it must occur exactly once in the file."),
    newText: z.string().describe("Replacement text."),
  })
  .strict();
export type EditFileArgs = z.infer<typeof EditFileArgs>;

const sha = (s: string) => createHash("sha256").update(s).digest("hex");

function occurrences(haystack: string, needle: string): number[] {
  const at: number[] = [];
  for (let i = haystack.indexOf(needle); i !== -1; i = haystack.indexOf(needle, i + 1)) at.push(i);
  return at;
}

const MAX_EDIT_BYTES = 16 * 1024 * 1024;

/** The file's text, read on the host through the confined reader: a link is followed only while it stays inside. */
function readText(workspace: string, rel: string): string {
  return confined(workspace).readFile(rel, { maxBytes: MAX_EDIT_BYTES }).toString("utf8");
}

const lineOf = (text: string, index: number) => text.slice(0, index).split("\n").length;

/** Replaces one exact occurrence of a text in a file. */
export const editFileTool = defineTool({
  ...builtinTool("edit_file"),
  description:
    "Replace an exact piece of text in a file. oldText must match the file exactly (whitespace and " +
    "indentation included, no line-number prefixes) and occur exactly once; include surrounding lines to " +
    "make it unique. Returns an error naming the problem when it matches zero or several times.",
  schema: EditFileArgs,
  // Guarded by content hashes: a re-run after a crash recognises an edit already applied.
  idempotent: true,
  writes: "reported",
  async prepare(args, ctx) {
    const p = resolveInWorkspace(ctx.workspace, args.path, { write: true });
    let text: string;
    try {
      text = readText(ctx.workspace, p.rel);
    } catch {
      return null;
    }
    const at = occurrences(text, args.oldText);
    if (at.length !== 1) return null;
    const after = text.slice(0, at[0]) + args.newText + text.slice(at[0]! + args.oldText.length);
    return JSON.stringify({ before: sha(text), after: sha(after) });
  },
  async run(args, ctx) {
    const p = resolveInWorkspace(ctx.workspace, args.path, { write: true });
    let text: string;
    try {
      text = readText(ctx.workspace, p.rel);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT") return toolError(`No such file: ${p.rel}. To create a file use write_file.`);
      if (code === "NOT_A_REGULAR_FILE") {
        const isDir = confined(ctx.workspace).stat(p.rel).isDirectory();
        return toolError(isDir ? `${p.rel} is a directory.` : `${p.rel} is not a regular file.`);
      }
      if (code === "FILE_TOO_LARGE") return toolError(`${p.rel} is larger than ${MAX_EDIT_BYTES} bytes; edit it with a command.`);
      throw err;
    }
    if (ctx.guard) {
      const guard = JSON.parse(ctx.guard) as { before: string; after: string };
      const now = sha(text);
      if (now === guard.after && now !== guard.before) {
        return {
          status: "ok",
          output: `${p.rel}: the edit was already applied before the runner restarted; nothing changed.`,
          filesChanged: { created: [], modified: [p.rel], deleted: [] },
        };
      }
      // Neither the content before nor after the edit: someone else changed the file in between, and
      // applying the edit now could apply it twice (when newText contains oldText).
      if (now !== guard.before) {
        return toolError(
          `${p.rel} changed since this edit was first attempted (before the runner restarted); read it again and redo the edit if still needed.`,
        );
      }
    }
    const at = occurrences(text, args.oldText);
    if (at.length === 0) {
      const first =
        args.oldText
          .split("\n")
          .find((l) => l.trim().length > 0)
          ?.trim() ?? "";
      const near = first
        ? text
            .split("\n")
            .map((l, i) => (l.includes(first) ? i + 1 : 0))
            .filter(Boolean)
            .slice(0, 5)
        : [];
      const hint = near.length
        ? ` Its first line appears at line(s) ${near.join(", ")}: the rest differs (whitespace or content). Read those lines again.`
        : " Read the file again: it may have changed, or the text may differ in whitespace.";
      return toolError(`oldText was not found in ${p.rel}.${hint}`);
    }
    if (at.length > 1) {
      const lines = at.slice(0, 10).map((i) => lineOf(text, i));
      return toolError(`oldText occurs ${at.length} times in ${p.rel} (lines ${lines.join(", ")}); include more surrounding text so it matches exactly once.`);
    }
    const updated = text.slice(0, at[0]) + args.newText + text.slice(at[0]! + args.oldText.length);
    try {
      // Replaced, never written in place: a hard link's other names may lie outside the workspace.
      await replaceFile(ctx.workspace, p.rel, updated);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "EACCES" || code === "EROFS") return toolError(`Cannot write ${p.rel}: ${code}.`, "permission_denied");
      throw err;
    }
    const line = lineOf(text, at[0]!);
    return {
      status: "ok",
      output: `Edited ${p.rel} at line ${line}: replaced ${args.oldText.split("\n").length} line(s) with ${args.newText.split("\n").length}.`,
      filesChanged: { created: [], modified: [p.rel], deleted: [] },
    };
  },
});
