import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { isIgnored, excludeRules, withGitignore } from "../workspace/ignore-rules.js";
import { confined } from "../workspace/confined.js";

// A task's toolchain (task.json "toolchain": ["typescript", "@types/node"]): npm packages the task
// needs that the sandbox, having no network, could not install. The harness copies them, with the
// packages they depend on, from where the user (or ledgerloop itself) has them installed into the
// fresh workspace's node_modules before the run, and again before the hidden tests, so whatever the
// agent did to them the hidden tests use the real ones. The workspace must ignore node_modules/
// (.gitignore): what is ignored is not in the files the agent is shown, in the revisions, in the
// ledger's file events or in a SWE-bench patch, so the copy is never mistaken for the agent's work.

/** A toolchain package that cannot be found on this machine: the task is skipped, not failed. */
export class ToolchainMissing extends Error {
  constructor(
    readonly packageName: string,
    where: string[],
  ) {
    super(`the task needs the npm package "${packageName}", which is not installed where the eval looks (${where.join(", ")}): run \`npm i -D ${packageName}\` in your project`);
    this.name = "ToolchainMissing";
  }
}

/** The folders whose node_modules are searched, in order: the task's suite (the user's project), the current folder, ledgerloop's own. */
export function toolchainBases(taskDir: string): string[] {
  const own = path.dirname(fileURLToPath(import.meta.url));
  return [...new Set([path.resolve(taskDir), process.cwd(), own])];
}

/** The installed folder of package `name` as Node would find it from `base`, or null. */
function packageDir(name: string, base: string): string | null {
  // The lookup paths, not resolve(): a types-only package has no entry point and a package's
  // "exports" may hide package.json.
  const dirs = createRequire(path.join(base, "noop.js")).resolve.paths(name) ?? [];
  for (const d of dirs) {
    const dir = path.join(d, name);
    if (fs.existsSync(path.join(dir, "package.json"))) return fs.realpathSync(dir);
  }
  return null;
}

interface Manifest {
  dependencies?: Record<string, string>;
  bin?: string | Record<string, string>;
}

function manifestOf(dir: string): Manifest {
  return JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")) as Manifest;
}

/** Every package to copy (the named ones and what they depend on), name to installed folder; throws {@link ToolchainMissing}. */
export function resolveToolchain(names: string[], bases: string[]): Map<string, string> {
  const found = new Map<string, string>();
  const visit = (name: string, from: string[]) => {
    if (found.has(name)) return;
    const dir = from.map((b) => packageDir(name, b)).find((d) => d !== null);
    if (!dir) throw new ToolchainMissing(name, from);
    found.set(name, dir);
    // A dependency is found from the package that needs it, as Node would.
    for (const dep of Object.keys(manifestOf(dir).dependencies ?? {})) visit(dep, [dir, ...from]);
  };
  for (const n of names) visit(n, bases);
  return found;
}

/** True when the workspace's root ignore rules (.gitignore, .git/info/exclude) ignore node_modules/. */
export function ignoresNodeModules(workspace: string): boolean {
  return isIgnored(withGitignore(workspace, "", excludeRules(workspace)), "node_modules", true);
}

/** Replaces a non-directory (a symlink the agent left, say) at `rel` and makes it a real directory. */
function realDir(ws: ReturnType<typeof confined>, rel: string): void {
  const st = ws.lstatOrNull(rel);
  if (st && !st.isDirectory()) ws.rm(rel, { force: true });
  ws.mkdirp(rel);
}

/**
 * Copies the resolved packages into workspace/node_modules (replacing what is there under their
 * names) and links their commands into node_modules/.bin, as npm would.
 */
export function provisionToolchain(workspace: string, packages: Map<string, string>): void {
  if (!ignoresNodeModules(workspace)) {
    throw new Error(`the task's workspace must ignore node_modules/ in its .gitignore (the toolchain copied there is not the agent's work)`);
  }
  const ws = confined(workspace, { links: "never" });
  const root = fs.realpathSync(workspace);
  realDir(ws, "node_modules");
  realDir(ws, "node_modules/.bin");
  for (const [name, src] of packages) {
    const rel = `node_modules/${name}`;
    if (name.startsWith("@")) realDir(ws, path.posix.dirname(rel));
    ws.rm(rel, { recursive: true, force: true });
    // The parents were made real directories through the confined writer just above: the copy
    // lands inside the workspace. A copy, not a hard link: a command writing into the file in place
    // would change the user's own installation.
    fs.cpSync(src, path.join(root, rel), { recursive: true, verbatimSymlinks: true, mode: fs.constants.COPYFILE_FICLONE });
    const bin = manifestOf(src).bin;
    const bins = typeof bin === "string" ? { [name.split("/").pop()!]: bin } : (bin ?? {});
    for (const [cmd, target] of Object.entries(bins)) {
      const link = `node_modules/.bin/${cmd}`;
      ws.rm(link, { force: true });
      ws.symlink(path.posix.join("..", name, target), link);
    }
  }
}
