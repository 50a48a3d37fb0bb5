import { formatPatch, structuredPatch, type StructuredPatch } from "diff";
import type { FlatEntry, TreeChange } from "./rev-tree.js";

/** Per-file figures of a diff between two revisions (`diff --stat`). */
export interface FileDiffStat {
  /** Path in the newer revision (in the older one for a deletion). */
  path: string;
  /** Set for an exact rename (same content under another path). */
  oldPath?: string;
  status: "created" | "modified" | "deleted" | "renamed";
  /** Lines added / removed; 0 for binary and large files. */
  added: number;
  removed: number;
  /** Content with a NUL byte in its first 8,000 bytes (git's test): no line diff. */
  binary: boolean;
  /** A file over the size limit, recorded by stat only: its content was never stored. */
  large: boolean;
  /** git-style modes ("100644", "100755", "120000" for a symlink) when they differ or the file is new/gone. */
  oldMode?: string;
  newMode?: string;
}

/** A path change with rename pairing applied. */
interface PairedChange extends TreeChange {
  oldPath?: string;
}

const DIFF_TIMEOUT_MS = 5000;
const BINARY_PROBE = 8000;

/** git's file mode string of an entry. */
export function gitMode(e: FlatEntry): string {
  if (e.kind === "symlink") return "120000";
  return `100${(e.mode & 0o777).toString(8).padStart(3, "0")}`;
}

/** Pairs a deletion and a creation with identical content (first come, first paired) into a rename. */
export function pairRenames(changes: TreeChange[]): PairedChange[] {
  const gone = new Map<string, TreeChange[]>();
  for (const c of changes) {
    if (c.before && !c.after && c.before.kind !== "large") {
      const list = gone.get(c.before.hash) ?? [];
      list.push(c);
      gone.set(c.before.hash, list);
    }
  }
  const used = new Set<TreeChange>();
  const out: PairedChange[] = [];
  for (const c of changes) {
    if (used.has(c)) continue;
    if (c.after && !c.before && c.after.kind !== "large") {
      const from = gone.get(c.after.hash)?.find((d) => !used.has(d) && d.before!.kind === c.after!.kind);
      if (from) {
        used.add(from);
        out.push({ path: c.path, oldPath: from.path, before: from.before!, after: c.after });
        continue;
      }
    }
    out.push(c);
  }
  return out.filter((c) => !used.has(c)).sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

function isBinary(buf: Buffer): boolean {
  return buf.subarray(0, BINARY_PROBE).includes(0);
}

/** One file's unified diff (git style) and its stat. `read` returns a blob's content. */
export function diffOne(c: PairedChange, read: (hash: string, path: string) => Buffer): { text: string; stat: FileDiffStat } {
  const { before, after } = c;
  const oldPath = c.oldPath ?? c.path;
  const status: FileDiffStat["status"] = !before ? "created" : !after ? "deleted" : c.oldPath ? "renamed" : "modified";
  const large = before?.kind === "large" || after?.kind === "large";
  const oldMode = before ? gitMode(before) : undefined;
  const newMode = after ? gitMode(after) : undefined;
  const stat: FileDiffStat = {
    path: c.path,
    ...(c.oldPath !== undefined && { oldPath: c.oldPath }),
    status,
    added: 0,
    removed: 0,
    binary: false,
    large,
    ...((oldMode !== newMode || !before || !after) && {
      ...(oldMode !== undefined && { oldMode }),
      ...(newMode !== undefined && { newMode }),
    }),
  };
  const patch: StructuredPatch = {
    oldFileName: before ? `a/${oldPath}` : "/dev/null",
    newFileName: after ? `b/${c.path}` : "/dev/null",
    oldHeader: undefined,
    newHeader: undefined,
    hunks: [],
    isGit: true,
    ...(status === "renamed" && { isRename: true }),
    ...(!before && { isCreate: true, newMode }),
    ...(!after && { isDelete: true, oldMode }),
    ...(before && after && oldMode !== newMode && { oldMode, newMode }),
  };
  let note = "";
  if (large) {
    note = `Large file (over the size limit, recorded by size and mtime only; content not stored): ${
      before ? `${before.size} bytes` : "absent"
    } -> ${after ? `${after.size} bytes` : "absent"}\n`;
  } else if (!before || !after || before.hash !== after.hash) {
    const a = before ? read(before.hash, oldPath) : Buffer.alloc(0);
    const b = after ? read(after.hash, c.path) : Buffer.alloc(0);
    if (isBinary(a) || isBinary(b)) {
      stat.binary = true;
      note = `Binary files ${before ? `a/${oldPath}` : "/dev/null"} and ${after ? `b/${c.path}` : "/dev/null"} differ\n`;
    } else {
      const p = structuredPatch(patch.oldFileName!, patch.newFileName!, a.toString("utf8"), b.toString("utf8"), undefined, undefined, {
        context: 3,
        timeout: DIFF_TIMEOUT_MS,
      });
      if (!p) {
        note = `(diff not computed: the two versions differ too much to diff within ${DIFF_TIMEOUT_MS} ms)\n`;
      } else {
        patch.hunks = p.hunks;
        for (const h of p.hunks) {
          for (const line of h.lines) {
            if (line.startsWith("+")) stat.added++;
            else if (line.startsWith("-")) stat.removed++;
          }
        }
      }
    }
  }
  return { text: formatPatch(patch) + note, stat };
}

/** `git diff --stat`-like text of per-file stats. */
export function formatStat(stats: FileDiffStat[]): string {
  if (stats.length === 0) return "";
  const names = stats.map((s) => (s.oldPath ? `${s.oldPath} => ${s.path}` : s.path));
  const width = Math.max(...names.map((n) => n.length));
  const lines = stats.map((s, i) => {
    const what = s.large
      ? "large file"
      : s.binary
        ? "Bin"
        : `${s.added + s.removed} ${"+".repeat(Math.min(s.added, 40))}${"-".repeat(Math.min(s.removed, 40))}`;
    return ` ${names[i]!.padEnd(width)} | ${what}`;
  });
  const added = stats.reduce((n, s) => n + s.added, 0);
  const removed = stats.reduce((n, s) => n + s.removed, 0);
  lines.push(
    ` ${stats.length} file${stats.length === 1 ? "" : "s"} changed, ${added} insertion${added === 1 ? "" : "s"}(+), ${removed} deletion${removed === 1 ? "" : "s"}(-)`,
  );
  return lines.join("\n") + "\n";
}
