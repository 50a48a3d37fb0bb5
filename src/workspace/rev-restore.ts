import fs from "node:fs";
import path from "node:path";
import type { RevisionCore } from "./rev-core.js";
import {
  checkRestoreConflicts,
  dirsOf,
  ensureParentDirs,
  lstatOrUndefined,
  removeEmptiedDirs,
  removeEmptyTree,
  unlinkIfPresent,
  writeAtomically,
} from "./rev-fs.js";
import { entryOf, isRacy, type CacheEntry } from "./rev-stat-cache.js";
import { flattenTree, type FlatEntry } from "./rev-tree.js";
import type { RestoreResult, SkippedPath } from "./rev-types.js";
import { assertNotRuntimeState } from "./paths.js";

// Putting a revision back into a workspace (RevisionStore.restore and copyTo): plan the changes,
// verify everything that can fail, then write and record the new head and stat cache.

/** Restore reads and verifies every blob before touching the workspace; up to this much is kept for the writes. */
const RESTORE_PRELOAD_BYTES = 256 * 1024 * 1024;

/** Makes the workspace revision `revId` (a full id); with `dryRun`, only reports what it would change. */
export async function restoreInto(core: RevisionCore, revId: string, dryRun: boolean): Promise<RestoreResult> {
  const started = performance.now();
  const target = flattenTree(core.loadTree, revId);
  const scan = await core.scan("hash", await core.tracker.walk());
  const cur = scan.now;
  const created: string[] = [];
  const modified: string[] = [];
  const deleted: string[] = [];
  const skipped: SkippedPath[] = scan.unreadable.map((p) => ({ path: p, reason: "unreadable" as const }));
  const unreadable = new Set(scan.unreadable);
  const writes: Array<{ rel: string; e: FlatEntry; chmodOnly: boolean }> = [];

  for (const [rel, c] of cur) {
    if (target.has(rel)) continue;
    if (c.kind === "large") skipped.push({ path: rel, reason: "large" });
    else deleted.push(rel);
  }
  for (const [rel, t] of target) {
    // Trees come from this store's own walk, which never records these; a damaged DB still must not
    // make restore write into .git/ or .ledgerloop/.
    assertNotRuntimeState(rel);
    if (unreadable.has(rel)) continue;
    const c = cur.get(rel);
    if (t.kind === "large" || c?.kind === "large") {
      if (!(c && c.kind === t.kind && c.hash === t.hash)) skipped.push({ path: rel, reason: "large" });
      continue;
    }
    if (!c) {
      created.push(rel);
      writes.push({ rel, e: t, chmodOnly: false });
    } else if (c.kind !== t.kind || c.hash !== t.hash) {
      modified.push(rel);
      writes.push({ rel, e: t, chmodOnly: false });
    } else if (c.mode !== t.mode) {
      modified.push(rel);
      writes.push({ rel, e: t, chmodOnly: true });
    }
  }
  skipped.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const result = (): RestoreResult => ({
    revId,
    dryRun,
    created: created.sort(),
    modified: modified.sort(),
    deleted: deleted.sort(),
    skipped,
    ms: performance.now() - started,
  });

  // Everything that can fail is checked before the first change: paths blocked by something restore
  // may not remove, then every blob (read and verified).
  const deletedSet = new Set(deleted);
  checkRestoreConflicts(core.workspace, writes, deletedSet);
  const contents = new Map<string, Buffer>();
  let held = 0;
  for (const w of writes) {
    if (w.chmodOnly || contents.has(w.e.hash)) continue;
    const data = core.blobs.get(w.e.hash, `${w.rel} in revision ${revId}`);
    if (held + data.length <= RESTORE_PRELOAD_BYTES) {
      contents.set(w.e.hash, data);
      held += data.length;
    }
  }
  if (dryRun) return result();

  core.tracker.invalidate();
  const targetDirs = dirsOf(target.keys());
  for (const rel of deleted) unlinkIfPresent(path.join(core.workspace, rel));
  removeEmptiedDirs(core.workspace, deleted, targetDirs);
  for (const w of writes) {
    // A file replacing a directory: what is left of the directory is empty subdirectories.
    if (!w.chmodOnly && lstatOrUndefined(path.join(core.workspace, w.rel))?.isDirectory()) {
      removeEmptyTree(path.join(core.workspace, w.rel));
    }
  }

  const tWrite = Date.now();
  const ensured = new Set<string>();
  const written = new Map<string, CacheEntry>();
  for (const w of writes) {
    const abs = path.join(core.workspace, w.rel);
    ensureParentDirs(core.workspace, w.rel, ensured);
    if (w.chmodOnly) {
      fs.chmodSync(abs, w.e.mode);
    } else {
      const data = contents.get(w.e.hash) ?? core.blobs.get(w.e.hash, `${w.rel} in revision ${revId}`);
      writeAtomically(abs, w.rel, w.e, data);
    }
    const st = fs.lstatSync(abs);
    written.set(w.rel, entryOf(w.e.kind, w.e.mode, st, w.e.hash, !isRacy(st, tWrite)));
  }

  // The stat cache now describes the restored files, so status() is clean and the next snapshot
  // reads only what changes from here.
  const next = new Map<string, CacheEntry>();
  for (const [rel, t] of target) {
    const c = written.get(rel) ?? cur.get(rel);
    if (c && c.hash === t.hash && c.kind === t.kind) next.set(rel, c);
  }
  core.db.transaction(() => {
    const head = core.stmts.getHead.get(core.workspace);
    core.writeCache((head?.gen ?? 0) === core.cacheGen && core.cache ? core.cache : null, next);
    core.stmts.putHead.run(core.workspace, revId, new Date().toISOString());
  }).immediate();
  core.cache = next;
  core.cacheGen = core.stmts.getHead.get(core.workspace)!.gen;
  return result();
}
