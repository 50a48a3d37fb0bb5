import type { ConfinedDir } from "./confined.js";
import { assertNotRuntimeState } from "./paths.js";
import { checkRestoreConflicts, ensureParentDirs, lstatHere, removeEmptiedDirs, removeEmptyTree, unlinkIfPresent, writeEntry } from "./rev-fs.js";
import type { ScanResult } from "./rev-scan.js";
import { entryOf, isRacy, type CacheEntry } from "./rev-stat-cache.js";
import type { FlatEntry } from "./rev-tree.js";
import type { SkippedPath } from "./rev-types.js";

// The three phases of a restore, apart from the store's bookkeeping (revisions.ts): work out what
// differs, check everything that can fail before the first change, then change the workspace
// through the confined writer.

/** One path restore writes: its content, or only its mode. */
export interface RestoreWrite {
  rel: string;
  e: FlatEntry;
  chmodOnly: boolean;
}

/** What a restore changes (lists sorted). */
export interface RestorePlan {
  created: string[];
  modified: string[];
  deleted: string[];
  skipped: SkippedPath[];
  writes: RestoreWrite[];
}

const byPath = (a: SkippedPath, b: SkippedPath) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0);

/** What makes the scanned workspace the revision `target`; large and unreadable files are skipped, never touched. */
export function planRestore(target: Map<string, FlatEntry>, scan: ScanResult): RestorePlan {
  const cur = scan.now;
  const plan: RestorePlan = {
    created: [],
    modified: [],
    deleted: [],
    skipped: scan.unreadable.map((p) => ({ path: p, reason: "unreadable" as const })),
    writes: [],
  };
  const unreadable = new Set(scan.unreadable);
  for (const [rel, c] of cur) {
    if (target.has(rel)) continue;
    if (c.kind === "large") plan.skipped.push({ path: rel, reason: "large" });
    else plan.deleted.push(rel);
  }
  for (const [rel, t] of target) {
    // Trees come from this store's own walk, which never records these; a damaged DB still must not
    // make restore write into .git/ or .ledgerloop/.
    assertNotRuntimeState(rel);
    if (unreadable.has(rel)) continue;
    const c = cur.get(rel);
    if (t.kind === "large" || c?.kind === "large") {
      if (!(c && c.kind === t.kind && c.hash === t.hash)) plan.skipped.push({ path: rel, reason: "large" });
      continue;
    }
    if (!c) {
      plan.created.push(rel);
      plan.writes.push({ rel, e: t, chmodOnly: false });
    } else if (c.kind !== t.kind || c.hash !== t.hash) {
      plan.modified.push(rel);
      plan.writes.push({ rel, e: t, chmodOnly: false });
    } else if (c.mode !== t.mode) {
      plan.modified.push(rel);
      plan.writes.push({ rel, e: t, chmodOnly: true });
    }
  }
  plan.skipped.sort(byPath);
  plan.created.sort();
  plan.modified.sort();
  plan.deleted.sort();
  return plan;
}

/**
 * Everything that can fail, checked before the first change: paths blocked by something restore may
 * not remove, then every blob (read and verified). Returns the blobs read, up to `preloadBytes`.
 */
export function checkRestore(ws: ConfinedDir, plan: RestorePlan, blob: (w: RestoreWrite) => Buffer, preloadBytes: number): Map<string, Buffer> {
  checkRestoreConflicts(ws, plan.writes, new Set(plan.deleted));
  const contents = new Map<string, Buffer>();
  let held = 0;
  for (const w of plan.writes) {
    if (w.chmodOnly || contents.has(w.e.hash)) continue;
    const data = blob(w);
    if (held + data.length <= preloadBytes) {
      contents.set(w.e.hash, data);
      held += data.length;
    }
  }
  return contents;
}

/**
 * Changes the workspace as planned: deletions first (and the directories they leave empty, except
 * those the revision has), then each write. Returns the stat-cache entries of what was written.
 */
export function applyRestore(ws: ConfinedDir, plan: RestorePlan, targetDirs: Set<string>, content: (w: RestoreWrite) => Buffer): Map<string, CacheEntry> {
  for (const rel of plan.deleted) unlinkIfPresent(ws, rel);
  removeEmptiedDirs(ws, plan.deleted, targetDirs);
  for (const w of plan.writes) {
    // A file replacing a directory: what is left of the directory is empty subdirectories.
    if (!w.chmodOnly && lstatHere(ws, w.rel)?.isDirectory()) removeEmptyTree(ws, w.rel);
  }
  const tWrite = Date.now();
  const ensured = new Set<string>();
  const written = new Map<string, CacheEntry>();
  for (const w of plan.writes) {
    ensureParentDirs(ws, w.rel, ensured);
    if (w.chmodOnly) ws.fchmod(w.rel, () => w.e.mode);
    else writeEntry(ws, w.rel, w.e, content(w));
    const st = ws.lstat(w.rel);
    written.set(w.rel, entryOf(w.e.kind, w.e.mode, st, w.e.hash, !isRacy(st, tWrite)));
  }
  return written;
}
