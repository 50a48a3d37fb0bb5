import fs from "node:fs";
import path from "node:path";
import { PathEscapeError } from "../errors.js";

/** A path inside the workspace: `abs` for I/O, `rel` (POSIX, "." for the root) for the model and the ledger. */
export interface WorkspacePath {
  abs: string;
  rel: string;
}

/**
 * Options of {@link resolveInWorkspace}. Accepted: relative paths and absolute ones landing inside the
 * workspace. Refused: NUL bytes, ".." above the root, absolute paths outside, and any symlink along the
 * path (dangling or not, existing part or not) whose target lies outside.
 */
export interface ResolveOptions {
  /** Also refuse .git/ and .ledgerloop/ ({@link assertWritable}), at the spelled and at the real location. */
  write?: boolean;
}

// Linux gives up at 40 links (ELOOP); past that the path cannot be checked, so it is refused.
const MAX_SYMLINK_HOPS = 40;

/** Resolves `p` inside `workspace` (absolute, realpath'd), or throws PathEscapeError; see {@link ResolveOptions}. */
export function resolveInWorkspace(workspace: string, p: string, opts: ResolveOptions = {}): WorkspacePath {
  const shown = JSON.stringify(p);
  if (p.includes("\0")) {
    throw new PathEscapeError(`Path ${shown} contains a NUL byte; give a plain path relative to the workspace root.`);
  }

  let abs = path.resolve(workspace, p);
  let rel = relativeInside(workspace, abs);
  if (rel === undefined) {
    if (!path.isAbsolute(p)) {
      throw new PathEscapeError(
        `Path ${shown} leads outside the workspace (${workspace}) through "..". ` + `Use a path relative to the workspace root that stays inside it.`,
      );
    }
    // The model may have been shown the workspace through a symlinked spelling (macOS /var → /private/var),
    // so an absolute path is judged by where it really lands, not by how it is written.
    const real = realLocation(abs, p);
    const realRel = relativeInside(workspace, real);
    if (realRel === undefined) {
      throw new PathEscapeError(`Path ${shown} is an absolute path outside the workspace (${workspace}). ` + `Use a path relative to the workspace root.`);
    }
    abs = real;
    rel = realRel;
  }

  const real = realLocation(abs, p);
  const realRel = relativeInside(workspace, real);
  if (realRel === undefined) {
    throw new PathEscapeError(
      `Path ${shown} goes through a symlink that leads outside the workspace (to ${real}). ` + `Only files inside the workspace can be used.`,
    );
  }

  if (opts.write) {
    assertWritable(rel);
    // A symlink inside the workspace could otherwise smuggle a write into .git/ or .ledgerloop/.
    if (realRel !== rel) assertWritable(realRel);
  }
  return { abs, rel };
}

/**
 * Throws PathEscapeError when a tool may not write `rel` (workspace-relative, POSIX): inside `.git/`
 * (at any depth) or the root `.ledgerloop/` (see {@link assertNotRuntimeState}), or ledgerloop's own
 * configuration file.
 */
export function assertWritable(rel: string): void {
  assertNotRuntimeState(rel);
  // The agent must not grant itself permissions: the command policy lives in this file.
  const segments = rel.toLowerCase().split(/[\\/]+/);
  const root = segments[0] === "." ? segments.slice(1) : segments;
  if (root.length === 1 && root[0] === "ledgerloop.config.json") {
    throw new PathEscapeError(
      `Path ${JSON.stringify(rel)} is ledgerloop's own configuration (the sandbox policy), which tools may not write; ask the user to change it.`,
    );
  }
}

/**
 * Throws PathEscapeError when `rel` lies in `.git/` (at any depth) or the root `.ledgerloop/`: places
 * neither tools nor a workspace restore may write. (Restoring a revision may write the config file:
 * it is the user's file, recorded like any other.)
 */
export function assertNotRuntimeState(rel: string): void {
  // Lower-cased because macOS and Windows file systems are case-insensitive: ".GIT/config" is ".git/config" there.
  const segments = rel.toLowerCase().split(/[\\/]+/);
  if (segments.includes(".git")) {
    throw new PathEscapeError(
      `Path ${JSON.stringify(rel)} is inside .git/, git's own data, which tools may not write. ` + `Change the repository through git commands instead.`,
    );
  }
  if (segments[0] === ".ledgerloop" || (segments[0] === "." && segments[1] === ".ledgerloop")) {
    throw new PathEscapeError(`Path ${JSON.stringify(rel)} is inside .ledgerloop/, the runtime's state directory, which tools may not write.`);
  }
}

/** POSIX path of `abs` relative to `root`, "." for the root itself, or undefined when `abs` is outside. */
function relativeInside(root: string, abs: string): string | undefined {
  const rel = path.relative(root, abs);
  if (rel === "") return ".";
  if (path.isAbsolute(rel) || rel === ".." || rel.startsWith(`..${path.sep}`)) return undefined;
  return path.sep === "/" ? rel : rel.split(path.sep).join("/");
}

/**
 * Where `abs` really lands: every existing symlink along it is followed, and the part that does not
 * exist yet is appended to the real location of the deepest existing ancestor.
 */
function realLocation(abs: string, shownPath: string): string {
  try {
    return fs.realpathSync.native(abs);
  } catch (err) {
    if (!isMissing(err) && (err as NodeJS.ErrnoException).code !== "ELOOP") throw err;
  }
  // realpath fails for a path still to be created, and would not tell where a dangling symlink points
  // (writing through `link -> /outside/new` creates /outside/new), so the rest is walked link by link.
  const root = path.parse(abs).root;
  const pending = abs
    .slice(root.length)
    .split(path.sep)
    .filter((s) => s !== "" && s !== ".");
  let current = root;
  let hops = 0;
  while (pending.length > 0) {
    const segment = pending.shift()!;
    if (segment === "..") {
      current = path.dirname(current);
      continue;
    }
    const next = path.join(current, segment);
    let stat: fs.Stats;
    try {
      stat = fs.lstatSync(next);
    } catch (err) {
      if (!isMissing(err)) throw err;
      return path.join(next, ...pending);
    }
    if (!stat.isSymbolicLink()) {
      current = next;
      continue;
    }
    if (++hops > MAX_SYMLINK_HOPS) {
      throw new PathEscapeError(`Path ${JSON.stringify(shownPath)} cannot be checked: too many levels of symlinks (a symlink loop?).`);
    }
    const target = fs.readlinkSync(next);
    if (path.isAbsolute(target)) current = path.parse(target).root;
    pending.unshift(...target.split(/[\\/]+/).filter((s) => s !== "" && s !== "."));
  }
  return current;
}

function isMissing(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return code === "ENOENT" || code === "ENOTDIR";
}
