import { z } from "zod";
import { errorMessage } from "../errors.js";

// `submit --tasks FILE`: many runs in one submission. The file is JSON lines (one task object a
// line) or one JSON array of task objects; each object may set what the command's flags set for
// one run, and takes the command's flags for what it leaves out.

/** One task of a batch: the run's task, and the flags it sets for itself. */
export const TaskEntry = z
  .object({
    task: z.string().trim().min(1, "the task must not be empty"),
    thread: z.string().min(1).optional(),
    repo: z.string().min(1).optional(),
    ref: z.string().min(1).optional(),
    workspace: z.string().min(1).optional(),
    model: z.string().min(1).optional(),
    summaryModel: z.string().min(1).optional(),
    maxSteps: z.number().int().positive().optional(),
    budget: z.number().int().positive().optional(),
    priority: z.number().int().optional(),
    // Checked with the flags' value (submit-build.ts), so both give the same errors.
    setup: z.string().optional(),
  })
  .strict();
export type TaskEntry = z.infer<typeof TaskEntry>;

/** A task with where it came from (`line 3`, `item 3`), or the reason it could not be read. */
export type ParsedTask = { where: string; entry: TaskEntry } | { where: string; error: string };

/** Reads a tasks file's text: every entry, valid or not, so all the problems are reported at once. */
export function parseTasks(text: string): ParsedTask[] {
  const trimmed = text.trim();
  if (!trimmed) return [];
  if (trimmed.startsWith("[")) {
    let items: unknown;
    try {
      items = JSON.parse(trimmed);
    } catch (err) {
      return [{ where: "the file", error: `not a JSON array: ${errorMessage(err)}` }];
    }
    if (!Array.isArray(items)) return [{ where: "the file", error: "not a JSON array" }];
    return items.map((item, i) => entryOf(`item ${i + 1}`, item));
  }
  const out: ParsedTask[] = [];
  text.split("\n").forEach((line, i) => {
    if (!line.trim()) return;
    const where = `line ${i + 1}`;
    let item: unknown;
    try {
      item = JSON.parse(line);
    } catch (err) {
      out.push({ where, error: `not JSON: ${errorMessage(err)}` });
      return;
    }
    out.push(entryOf(where, item));
  });
  return out;
}

function entryOf(where: string, item: unknown): ParsedTask {
  const r = TaskEntry.safeParse(item);
  if (r.success) return { where, entry: r.data };
  const i = r.error.issues[0]!;
  const key = i.path.join(".");
  return {
    where,
    error:
      i.code === "unrecognized_keys"
        ? `unknown key(s) ${i.keys.join(", ")}: a task sets ${Object.keys(TaskEntry.shape).join(", ")}`
        : `${key || "(task)"}: ${i.message}`,
  };
}
