import path from "node:path";
import type { LedgerEvent } from "../state.js";
import { confined, type ConfinedDir } from "../workspace/confined.js";

export interface FocusFile {
  path: string;
  /** 1-based lines the agent touched or an error pointed at. */
  lines: number[];
  why: string;
}

const MAX_FOCUS = 4;
/** `src/a.ts:12`, `/abs/ws/src/a.ts:12:5`, `file:///abs/ws/a.js:38:10`, Python's `File "x.py", line 12`. */
const LOCATION = /(?:file:\/\/)?((?:\/|\.{0,2}\/)?[\w.@/-]+\.[A-Za-z]{1,5}):(\d+)(?::\d+)?|File "([^"]+)", line (\d+)/g;

/** Paths and lines an error output points at, relative to the workspace. */
export function errorLocations(text: string, workspace: string): Array<{ path: string; line: number }> {
  const out: Array<{ path: string; line: number }> = [];
  for (const m of text.matchAll(LOCATION)) {
    let p = m[1] ?? m[3] ?? "";
    const line = Number(m[2] ?? m[4]);
    if (p.startsWith(workspace + "/")) p = p.slice(workspace.length + 1);
    if (path.isAbsolute(p) || p.includes("node_modules/") || p.startsWith("node:")) continue;
    out.push({ path: p.replace(/^\.\//, ""), line });
  }
  return out;
}

/**
 * The files the agent is working on, most recent first: targets of its recent edits and reads,
 * files its commands changed, and files the latest failure points at (with those lines).
 */
export function focusFiles(events: LedgerEvent[], workspace: string): FocusFile[] {
  const byPath = new Map<string, FocusFile>();
  const add = (p: string, why: string, line?: number) => {
    const f = byPath.get(p) ?? { path: p, lines: [], why };
    if (line && !f.lines.includes(line)) f.lines.push(line);
    byPath.delete(p);
    byPath.set(p, f); // re-insert: Map order becomes recency
  };
  // A path is the agent's word until its tool accepted it: a refused read_file of a symlink to
  // /etc/shadow names a file that must not be shown. So an action counts once its feedback says ok.
  const pending = new Map<string, { path: string; why: string; line?: number }>();
  for (const e of events) {
    if (e.type === "agent_action") {
      const args = e.payload.args as Record<string, unknown> | undefined;
      if (args && typeof args.path === "string" && ["edit_file", "write_file", "read_file"].includes(e.payload.tool)) {
        pending.set(e.id, {
          path: args.path,
          why: e.payload.tool === "read_file" ? "read" : "edited",
          line: typeof args.startLine === "number" ? args.startLine : undefined,
        });
      }
    } else if (e.type === "environment_feedback") {
      const action = e.causedBy ? pending.get(e.causedBy) : undefined;
      if (action && e.payload.status === "ok") add(action.path, action.why, action.line);
      for (const p of [...(e.payload.filesChanged?.modified ?? []), ...(e.payload.filesChanged?.created ?? [])]) add(p, "changed by a command");
      if (e.payload.status !== "ok") {
        const text = `${e.payload.stderr ?? ""}\n${e.payload.stdout ?? ""}\n${e.payload.output}`;
        for (const loc of errorLocations(text, workspace).slice(0, 8)) add(loc.path, "named in an error", loc.line);
      }
    }
  }
  const files = [...byPath.values()].reverse();
  const ws = confinedOrNull(workspace);
  return files.filter((f) => isFileInside(ws, f.path)).slice(0, MAX_FOCUS);
}

/** Reads a focus file's text through the confined reader (never a file outside), or null when it cannot be shown. */
export function readFocusFile(workspace: string, rel: string, maxBytes = 512 * 1024): string | null {
  try {
    const text = confined(workspace).readFile(rel, { maxBytes }).toString("utf8");
    return text.includes("\u0000") ? null : text;
  } catch {
    return null;
  }
}

function confinedOrNull(workspace: string): ConfinedDir | null {
  try {
    return confined(workspace);
  } catch {
    return null;
  }
}

function isFileInside(ws: ConfinedDir | null, rel: string): boolean {
  try {
    return ws?.stat(rel).isFile() ?? false;
  } catch {
    return false;
  }
}

/** Line windows of a file around the lines of interest (merged), or the whole file when it is short. */
export function windows(totalLines: number, lines: number[], radius = 20, wholeUpTo = 150): Array<[number, number]> {
  if (totalLines <= wholeUpTo || lines.length === 0) return [[1, Math.min(totalLines, wholeUpTo * 2)]];
  const ranges = [...new Set(lines)]
    .filter((l) => l >= 1 && l <= totalLines)
    .sort((a, b) => a - b)
    .map((l) => [Math.max(1, l - radius), Math.min(totalLines, l + radius)] as [number, number]);
  const merged: Array<[number, number]> = [];
  for (const r of ranges) {
    const last = merged.at(-1);
    if (last && r[0] <= last[1] + 1) last[1] = Math.max(last[1], r[1]);
    else merged.push(r);
  }
  return merged.length ? merged : [[1, Math.min(totalLines, 60)]];
}

/** Renders a file's windows with line numbers. */
export function renderWindows(rel: string, text: string, wins: Array<[number, number]>): string {
  const lines = text.split("\n");
  const parts = wins.map(([a, b]) => {
    const w = String(b).length;
    return lines
      .slice(a - 1, b)
      .map((l, i) => `${String(a + i).padStart(w)}| ${l}`)
      .join("\n");
  });
  const where = wins.map(([a, b]) => `${a}-${b}`).join(", ");
  return `## ${rel} (lines ${where} of ${lines.length})\n${parts.join("\n…\n")}`;
}
