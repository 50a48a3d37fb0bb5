import type { ToolCallRecord } from "../state.js";

/**
 * Limits on a tool call's arguments, checked where a model's answer enters the runtime (before the
 * ledger, the redactor or a checkpoint walk them). JSON.stringify, structuredClone, zod and the
 * redactor all recurse: arguments nested 100k deep overflowed the stack on every resume. No tool's
 * arguments go past 4 levels, and no model writes a megabyte in one answer (output limits are
 * 16k-128k tokens), so the limits only stop hostile or broken output.
 */
export const MAX_ARGS_DEPTH = 64;
/** Characters of argument text (or of strings and keys in parsed arguments). */
export const MAX_ARGS_CHARS = 1024 * 1024;
/** How much of refused arguments is kept for the model (and the ledger) to see. */
const PREVIEW_CHARS = 200;

/** Why raw argument text breaks the limits, or null. One linear scan: brackets inside strings do not count. */
export function argsTextProblem(text: string): string | null {
  if (text.length > MAX_ARGS_CHARS) return `the arguments are ${text.length} characters long, over the limit of ${MAX_ARGS_CHARS} characters`;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > MAX_ARGS_DEPTH) return `the arguments are nested deeper than ${MAX_ARGS_DEPTH} levels`;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return null;
}

/** Why parsed arguments break the limits, or null. Walks with an explicit stack, so any depth is safe to measure. */
export function argsValueProblem(value: unknown): string | null {
  const stack: Array<[unknown, number]> = [[value, 0]];
  let chars = 0;
  while (stack.length) {
    const [v, depth] = stack.pop()!;
    if (typeof v === "string") chars += v.length;
    else if (v === null || typeof v !== "object") chars += 8;
    else {
      if (depth + 1 > MAX_ARGS_DEPTH) return `the arguments are nested deeper than ${MAX_ARGS_DEPTH} levels`;
      if (Array.isArray(v)) {
        chars += 2;
        for (const x of v) stack.push([x, depth + 1]);
      } else {
        for (const [k, x] of Object.entries(v)) {
          chars += k.length + 4;
          stack.push([x, depth + 1]);
        }
      }
    }
    if (chars > MAX_ARGS_CHARS) return `the arguments hold more than the limit of ${MAX_ARGS_CHARS} characters`;
  }
  return null;
}

/** A flat preview of arguments that must not be serialised whole (nothing recursive touches them). */
function preview(call: ToolCallRecord): string {
  if (call.argsText !== undefined) return call.argsText.slice(0, PREVIEW_CHARS);
  const v = call.args;
  if (Array.isArray(v)) return `[array of ${v.length}]`;
  if (v && typeof v === "object") {
    const keys = Object.keys(v);
    return `{object with keys: ${keys.slice(0, 20).join(", ")}${keys.length > 20 ? ", …" : ""}}`;
  }
  return String(v).slice(0, PREVIEW_CHARS);
}

/**
 * The calls with any over-limit arguments replaced by a short preview and a `refused` reason, which
 * the decide node turns into error feedback (the run goes on, and nothing deep is ever stored).
 * Also what real models get wrong about the calls themselves: an id used twice in one answer or
 * missing (local servers number every answer's calls from 0, some send none) is made unique, since
 * each result goes back under its call's id; and a call whose arguments were cut off by the output
 * limit (`truncated`: finish_reason "length") is refused with that reason instead of as bad JSON.
 */
export function guardToolCalls(calls: ToolCallRecord[], o: { truncated?: boolean } = {}): ToolCallRecord[] {
  const seen = new Set<string>();
  return calls.map((call, i) => {
    let id = call.id || `call_${i}`;
    for (let n = 2; seen.has(id); n++) id = `${call.id || `call_${i}`}_${n}`;
    seen.add(id);
    const problem = call.args !== undefined ? argsValueProblem(call.args) : call.argsText !== undefined ? argsTextProblem(call.argsText) : null;
    if (!problem) {
      if (o.truncated && call.argsText !== undefined && !call.refused) {
        return {
          ...call,
          id,
          argsText: call.argsText.slice(0, PREVIEW_CHARS),
          refused:
            `Your answer was cut off at the model's output token limit while writing the arguments of ${call.name || "a tool call"}, so nothing ran. ` +
            "Send smaller pieces: write a large file in parts (write_file, then edit_file), or shorter arguments.",
        };
      }
      return id === call.id ? call : { ...call, id };
    }
    return {
      id,
      name: call.name,
      argsText: preview(call),
      refused: `Arguments of ${call.name} refused: ${problem}. Send smaller, flatter arguments (write a large file in parts).`,
    };
  });
}
