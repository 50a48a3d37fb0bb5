import { createHash } from "node:crypto";
import { RevisionError } from "./rev-errors.js";

// Revision trees, git-like: one tree object per directory, content-addressed by the sha256 of its
// encoding, so a revision that changes one file writes only the trees on that file's path (the root
// and its ancestors) and shares every other subtree with its parent revision. The root tree's hash is
// the revision id: equal workspaces give equal ids.
//
// Encoding (binary, because the 32-byte hashes dominate and do not compress): "LLT1", then per entry,
// sorted by name: kind u8, mode u16le (permission bits), size u48le, hash 32 bytes, name length u16le,
// name (UTF-8). About 45 bytes + name per entry.

/** What a tree entry is. `large` is a file over the size limit, recorded by stat only (no content). */
export type EntryKind = "file" | "symlink" | "large" | "tree";

/** A file-like entry of a revision: what restore needs to recreate one path. */
export interface FlatEntry {
  kind: Exclude<EntryKind, "tree">;
  /** Permission bits (`mode & 0o777`); 0 for symlinks. */
  mode: number;
  /** Bytes of content (of the link target text for a symlink). */
  size: number;
  /** sha256 (hex) of the content / link target; for `large`, of its stat identity (see largeIdentity). */
  hash: string;
}

/** One entry of a tree object. */
export interface TreeEntry {
  name: string;
  kind: EntryKind;
  mode: number;
  /** For a subtree, the total bytes of the files under it. */
  size: number;
  hash: string;
}

/** One path that differs between two trees; `before`/`after` absent for a creation/deletion. */
export interface TreeChange {
  path: string;
  before?: FlatEntry;
  after?: FlatEntry;
}

const MAGIC = Buffer.from("LLT1", "latin1");
const KIND_CODE: Record<EntryKind, number> = { file: 1, symlink: 2, large: 3, tree: 4 };
const CODE_KIND: Record<number, EntryKind> = { 1: "file", 2: "symlink", 3: "large", 4: "tree" };
const MAX_SIZE = 2 ** 48 - 1;

/** Encodes a directory's entries (sorted here) into a tree object. */
export function encodeTree(entries: TreeEntry[]): Buffer {
  const sorted = [...entries].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const names = sorted.map((e) => Buffer.from(e.name, "utf8"));
  const len = MAGIC.length + sorted.reduce((n, _e, i) => n + 43 + names[i]!.length, 0);
  const buf = Buffer.allocUnsafe(len);
  MAGIC.copy(buf, 0);
  let o = MAGIC.length;
  sorted.forEach((e, i) => {
    const name = names[i]!;
    buf.writeUInt8(KIND_CODE[e.kind], o);
    buf.writeUInt16LE(e.mode & 0o7777, o + 1);
    buf.writeUIntLE(Math.min(e.size, MAX_SIZE), o + 3, 6);
    buf.write(e.hash, o + 9, 32, "hex");
    buf.writeUInt16LE(name.length, o + 41);
    name.copy(buf, o + 43);
    o += 43 + name.length;
  });
  return buf;
}

/** Decodes a tree object, refusing anything malformed (names that could leave their directory included). */
export function decodeTree(buf: Buffer, hash: string): TreeEntry[] {
  const bad = (why: string) => new RevisionError("REV_TREE_CORRUPT", `tree object ${hash} is corrupt (${why}); the revisions using it cannot be read`);
  if (buf.length < MAGIC.length || !buf.subarray(0, MAGIC.length).equals(MAGIC)) throw bad("bad header");
  const out: TreeEntry[] = [];
  let o = MAGIC.length;
  while (o < buf.length) {
    if (o + 43 > buf.length) throw bad("truncated entry");
    const kind = CODE_KIND[buf.readUInt8(o)];
    if (!kind) throw bad(`unknown entry kind ${buf.readUInt8(o)}`);
    const nameLen = buf.readUInt16LE(o + 41);
    if (o + 43 + nameLen > buf.length) throw bad("truncated name");
    const name = buf.toString("utf8", o + 43, o + 43 + nameLen);
    if (name === "" || name === "." || name === ".." || name.includes("/") || name.includes("\0")) {
      throw bad(`invalid name ${JSON.stringify(name)}`);
    }
    out.push({
      name,
      kind,
      mode: buf.readUInt16LE(o + 1),
      size: buf.readUIntLE(o + 3, 6),
      hash: buf.toString("hex", o + 9, o + 41),
    });
    o += 43 + nameLen;
  }
  return out;
}

/** sha256 (hex) of a buffer or string. */
export function sha256(data: Buffer | string): string {
  return createHash("sha256").update(data).digest("hex");
}

/** The stand-in hash of a large (stat-only) file: changes whenever its size or mtime does. */
export function largeIdentity(size: number, mtimeMs: number): string {
  return sha256(`ledgerloop-large\0${size}\0${mtimeMs}`);
}

/**
 * Builds the tree objects of a flat file list. Returns the root hash (the revision id) and every
 * tree object by hash; directories are implied by the files in them (empty ones are not recorded).
 */
export function buildTrees(files: Map<string, FlatEntry>): { root: string; trees: Map<string, Buffer> } {
  const dirs = new Map<string, TreeEntry[]>([["", []]]);
  const ensureDir = (dir: string): TreeEntry[] => {
    let list = dirs.get(dir);
    if (list) return list;
    list = [];
    dirs.set(dir, list);
    const slash = dir.lastIndexOf("/");
    ensureDir(slash < 0 ? "" : dir.slice(0, slash));
    return list;
  };
  for (const [rel, e] of files) {
    const slash = rel.lastIndexOf("/");
    ensureDir(slash < 0 ? "" : rel.slice(0, slash)).push({ name: rel.slice(slash + 1), ...e });
  }
  const depth = (d: string) => (d === "" ? 0 : d.split("/").length);
  const order = [...dirs.keys()].sort((a, b) => depth(b) - depth(a));
  const trees = new Map<string, Buffer>();
  let root = "";
  for (const dir of order) {
    const entries = dirs.get(dir)!;
    const buf = encodeTree(entries);
    const hash = sha256(buf);
    trees.set(hash, buf);
    if (dir === "") {
      root = hash;
      continue;
    }
    const slash = dir.lastIndexOf("/");
    const parent = dirs.get(slash < 0 ? "" : dir.slice(0, slash))!;
    parent.push({ name: dir.slice(slash + 1), kind: "tree", mode: 0, size: entries.reduce((n, e) => n + e.size, 0), hash });
  }
  return { root, trees };
}

/** Loads a tree object's entries by hash (throws when missing or corrupt). */
export type TreeLoader = (hash: string) => TreeEntry[];

/** Every file-like entry under `root`, keyed by workspace-relative path. */
export function flattenTree(load: TreeLoader, root: string): Map<string, FlatEntry> {
  const out = new Map<string, FlatEntry>();
  const walk = (hash: string, prefix: string) => {
    for (const e of load(hash)) {
      const rel = prefix === "" ? e.name : `${prefix}/${e.name}`;
      if (e.kind === "tree") walk(e.hash, rel);
      else out.set(rel, { kind: e.kind, mode: e.mode, size: e.size, hash: e.hash });
    }
  };
  walk(root, "");
  return out;
}

/** Every tree hash reachable from `root` (itself included), skipping those already in `seen`. */
export function collectTrees(load: TreeLoader, root: string, seen: Set<string>, blobs: Set<string>): void {
  if (seen.has(root)) return;
  seen.add(root);
  for (const e of load(root)) {
    if (e.kind === "tree") collectTrees(load, e.hash, seen, blobs);
    else if (e.kind !== "large") blobs.add(e.hash);
  }
}

/** Paths that differ between two trees (null: the empty tree), sorted; identical subtrees are skipped unread. */
export function diffTrees(load: TreeLoader, a: string | null, b: string | null): TreeChange[] {
  const out: TreeChange[] = [];
  const expand = (hash: string, prefix: string, side: "before" | "after") => {
    for (const [rel, e] of flattenTree(load, hash)) out.push({ path: `${prefix}/${rel}`.replace(/^\//, ""), [side]: e });
  };
  const walk = (ha: string | null, hb: string | null, prefix: string) => {
    if (ha === hb) return;
    const ea = ha ? load(ha) : [];
    const eb = hb ? load(hb) : [];
    const byName = new Map<string, { a?: TreeEntry; b?: TreeEntry }>();
    for (const e of ea) byName.set(e.name, { a: e });
    for (const e of eb) byName.set(e.name, { ...byName.get(e.name), b: e });
    const names = [...byName.keys()].sort();
    for (const name of names) {
      const { a: x, b: y } = byName.get(name)!;
      const rel = prefix === "" ? name : `${prefix}/${name}`;
      if (x && y && x.kind === y.kind && x.hash === y.hash && x.mode === y.mode) continue;
      if (x?.kind === "tree" && y?.kind === "tree") {
        walk(x.hash, y.hash, rel);
        continue;
      }
      if (x?.kind === "tree") expand(x.hash, rel, "before");
      if (y?.kind === "tree") expand(y.hash, rel, "after");
      const before = x && x.kind !== "tree" ? { kind: x.kind, mode: x.mode, size: x.size, hash: x.hash } : undefined;
      const after = y && y.kind !== "tree" ? { kind: y.kind, mode: y.mode, size: y.size, hash: y.hash } : undefined;
      if (before || after) out.push({ path: rel, ...(before && { before }), ...(after && { after }) });
    }
  };
  walk(a, b, "");
  return out.sort((p, q) => (p.path < q.path ? -1 : p.path > q.path ? 1 : 0));
}
