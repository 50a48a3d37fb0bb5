import { spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createTwoFilesPatch } from "diff";
import { CliError, PathEscapeError } from "../errors.js";
import { confined, type ConfinedDir } from "../workspace/confined.js";
import { applyChanges } from "./apply-changes.js";

// A dry run works on a throwaway copy of the workspace (a reflink copy where the file system can
// make one); the real workspace is not written until `ledgerloop apply`. What the copy looked like
// when it was made (a manifest of content hashes) is what apply compares both sides against: a file
// the run changed is applied only if the real one is still as it was when the copy was made.

/** Where dry runs keep their copies and records: $LEDGERLOOP_DRY_RUNS, else <tmp>/ledgerloop-dry-runs. */
export function dryRunRoot(): string {
  return process.env.LEDGERLOOP_DRY_RUNS ?? path.join(os.tmpdir(), "ledgerloop-dry-runs");
}

/** One file as the manifest records it. */
export type ManifestEntry = { kind: "file"; sha256: string; mode: number } | { kind: "link"; target: string };
export type Manifest = Record<string, ManifestEntry>;

/** A dry run's record: where its copy is, what it was copied from, and the copy as made. */
export interface DryRun {
  thread: string;
  /** The real workspace (realpath). */
  workspace: string;
  /** The copy the run works in. */
  copy: string;
  createdAt: string;
  copyMs: number;
  manifest: Manifest;
  appliedAt?: string;
}

export interface Changes {
  created: string[];
  modified: string[];
  deleted: string[];
}

/** Top-level names never copied nor compared: the state directory; `.git` is compared nowhere. */
const SKIP_TOP = new Set([".ledgerloop"]);

// Both trees are the agent's work: they are read through the confined reader, no symlink followed
// (a link is an entry of its own, as git records it), so a link to a host file is never read.
function walk(root: string): Manifest {
  const out: Manifest = {};
  const c = confined(root, { links: "never" });
  const visit = (rel: string) => {
    for (const e of c.readdir(rel || ".")) {
      const name = e.name.toString("utf8");
      const r = rel ? `${rel}/${name}` : name;
      if (!rel && SKIP_TOP.has(name)) continue;
      // Commands cannot write .git (read-only in the sandbox): nothing of it to apply.
      if (name === ".git") continue;
      if (e.isDirectory()) visit(r);
      else {
        const entry = entryOf(c, r);
        if (entry) out[r] = entry;
      }
    }
  };
  visit("");
  return out;
}

function entryOf(root: string | ConfinedDir, rel: string): ManifestEntry | null {
  const c = typeof root === "string" ? confined(root, { links: "never" }) : root;
  let st: fs.Stats | null;
  try {
    st = c.lstatOrNull(rel);
  } catch (err) {
    // Beneath a symlink: the walk never lists such a path, so nothing is there.
    if (err instanceof PathEscapeError) return null;
    throw err;
  }
  if (!st) return null;
  if (st.isSymbolicLink()) return { kind: "link", target: c.readlink(rel).toString("utf8") };
  if (!st.isFile()) return null;
  return { kind: "file", sha256: createHash("sha256").update(c.readFile(rel)).digest("hex"), mode: st.mode & 0o7777 };
}

const same = (a: ManifestEntry | null | undefined, b: ManifestEntry | null | undefined) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

/**
 * Copies a workspace for a dry run (everything but its state directory) with `cp --reflink=auto -a`
 * and records the copy's manifest. `id` names the copy's directory under the dry-run root.
 */
export function makeDryCopy(workspace: string, id: string = `dry-${randomBytes(4).toString("hex")}`): { copy: string; copyMs: number; manifest: Manifest } {
  const real = fs.realpathSync(workspace);
  const dir = path.join(dryRunRoot(), id);
  if (fs.existsSync(dir)) throw new CliError(`a dry run named ${id} exists already (${dir})`, 1, "THREAD_EXISTS");
  const copy = path.join(dir, "workspace");
  fs.mkdirSync(copy, { recursive: true, mode: 0o700 });
  const t0 = performance.now();
  const entries = fs
    .readdirSync(real)
    .filter((n) => !SKIP_TOP.has(n))
    .map((n) => path.join(real, n));
  if (entries.length) {
    const r = spawnSync("cp", ["--reflink=auto", "-a", "--", ...entries, copy], { encoding: "utf8" });
    if (r.status !== 0) {
      fs.rmSync(dir, { recursive: true, force: true });
      throw new CliError(`could not copy ${real} for the dry run: ${(r.stderr || r.error?.message || `cp exit ${r.status}`).trim()}`, 1, "DRY_RUN_COPY");
    }
  }
  // The copy keeps the workspace's own permissions on its root.
  fs.chmodSync(copy, fs.statSync(real).mode & 0o7777);
  const copyMs = performance.now() - t0;
  return { copy, copyMs, manifest: walk(copy) };
}

function recordPath(thread: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(thread)) throw new CliError(`"${thread.slice(0, 80)}" is not a thread id`, 2, "CONFIG_INVALID");
  return path.join(dryRunRoot(), `${thread}.json`);
}

/** Records that `thread` ran dry on a copy of `workspace`. */
export function saveDryRun(run: DryRun): void {
  fs.mkdirSync(dryRunRoot(), { recursive: true, mode: 0o700 });
  fs.writeFileSync(recordPath(run.thread), JSON.stringify(run), { mode: 0o600 });
}

/** The dry run of a thread; a clear error when there is none. */
export function loadDryRun(thread: string): DryRun {
  const p = recordPath(thread);
  if (!fs.existsSync(p))
    throw new CliError(`no dry run of thread "${thread}" in ${dryRunRoot()} (start one with \`ledgerloop run --dry-run\`)`, 1, "UNKNOWN_THREAD");
  return JSON.parse(fs.readFileSync(p, "utf8")) as DryRun;
}

/** What the dry run changed in its copy since the copy was made. */
export function dryRunChanges(run: DryRun): Changes {
  const now = walk(run.copy);
  const out: Changes = { created: [], modified: [], deleted: [] };
  for (const [p, e] of Object.entries(now)) {
    const was = run.manifest[p];
    if (!was) out.created.push(p);
    else if (!same(was, e)) out.modified.push(p);
  }
  for (const p of Object.keys(run.manifest)) if (!now[p]) out.deleted.push(p);
  for (const k of ["created", "modified", "deleted"] as const) out[k].sort();
  return out;
}

function textOf(root: string, rel: string): string | null {
  try {
    const c = confined(root, { links: "never" });
    // A link is shown as what it holds, never as the file it leads to (which may be a host file).
    if (c.lstat(rel).isSymbolicLink()) return `symlink to ${c.readlink(rel).toString("utf8")}\n`;
    const b = c.readFile(rel);
    return b.includes(0) ? null : b.toString("utf8");
  } catch {
    return "";
  }
}

/** The changes as a unified diff (real workspace → copy); binary files are named only. */
export function dryRunDiff(run: DryRun, changes: Changes = dryRunChanges(run)): string {
  const parts: string[] = [];
  for (const p of [...changes.created, ...changes.modified, ...changes.deleted].sort()) {
    const before = changes.created.includes(p) ? "" : textOf(run.workspace, p);
    const after = changes.deleted.includes(p) ? "" : textOf(run.copy, p);
    if (before === null || after === null) {
      parts.push(`Binary file ${p} differs\n`);
      continue;
    }
    parts.push(
      createTwoFilesPatch(
        changes.created.includes(p) ? "/dev/null" : `a/${p}`,
        changes.deleted.includes(p) ? "/dev/null" : `b/${p}`,
        before,
        after,
        undefined,
        undefined,
        { context: 3 },
      ),
    );
  }
  return parts.join("");
}

/** Files the real workspace changed since the copy was made, among those the dry run changed. */
export function conflicts(run: DryRun, changes: Changes): string[] {
  return [...changes.created, ...changes.modified, ...changes.deleted].filter((p) => !same(entryOf(run.workspace, p), run.manifest[p])).sort();
}

/**
 * Applies a dry run's changes to the real workspace. Refuses, naming the files, when the real
 * workspace changed any of them since the copy was made; nothing is written then.
 */
export function applyDryRun(run: DryRun): Changes {
  if (run.appliedAt) throw new CliError(`the dry run of ${run.thread} was applied already (${run.appliedAt})`, 1, "DRY_RUN_APPLIED");
  if (!fs.existsSync(run.copy)) throw new CliError(`the copy of the dry run of ${run.thread} is gone (${run.copy})`, 1, "DRY_RUN_COPY");
  const changes = dryRunChanges(run);
  const clash = conflicts(run, changes);
  if (clash.length) {
    throw new CliError(
      `not applied: ${clash.length} file(s) the dry run changed were also changed in ${run.workspace} since the copy was made: ${clash.slice(0, 20).join(", ")}${clash.length > 20 ? ", …" : ""}`,
      1,
      "DRY_RUN_CONFLICT",
    );
  }
  applyChanges(run.workspace, run.copy, changes);
  saveDryRun({ ...run, appliedAt: new Date().toISOString() });
  return changes;
}

/** What a run's ledger says it executed: command lines, in order, with their outcome. */
export function commandsRun(
  events: Array<{ type: string; payload: unknown }>,
): Array<{ tool: string; command: string; status: string; exitCode: number | null }> {
  const out: Array<{ tool: string; command: string; status: string; exitCode: number | null }> = [];
  for (const e of events) {
    if (e.type !== "environment_feedback") continue;
    const p = e.payload as { tool: string; command?: string; status: string; exitCode?: number | null };
    if (p.command) out.push({ tool: p.tool, command: p.command, status: p.status, exitCode: p.exitCode ?? null });
  }
  return out;
}
