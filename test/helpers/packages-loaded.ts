import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { REPO, tempWorkspace } from "./workspace.js";

/** What a process loaded: the npm packages, and our own modules as repository paths, sorted. */
export interface Loaded {
  code: number | null;
  stdout: string;
  stderr: string;
  packages: Set<string>;
  own: string[];
}

/**
 * The compiled CLI before bundling (dist/src/cli/main.js): what a command loads there is the lazy
 * structure the bundle keeps, since its dynamic imports stay chunk boundaries (scripts/bundle-cli.mjs).
 * The bundle itself is checked in test/package/bundle.test.ts.
 */
export const UNBUNDLED_CLI = path.join(REPO, "dist", "src", "cli", "main.js");

/** The modules a run of the compiled CLI (or, with `script`, of `node ...args`) loaded, traced by test/helpers/trace-imports.mjs. */
export function packagesLoaded(args: string[], script: string[] = [UNBUNDLED_CLI]): Loaded {
  const trace = path.join(tempWorkspace(), "trace.txt");
  fs.writeFileSync(trace, "");
  const r = spawnSync(process.execPath, ["--import", path.join(REPO, "test/helpers/trace-imports.mjs"), ...script, ...args], {
    encoding: "utf8",
    timeout: 60_000,
    env: { ...process.env, TRACE_FILE: trace },
  });
  const urls = fs.readFileSync(trace, "utf8").split("\n");
  const own = [...new Set(urls.filter((u) => u.startsWith("file:") && !u.includes("/node_modules/")).map((u) => path.relative(REPO, fileURLToPath(u))))].sort();
  const packages = new Set(urls.map((u) => /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(u)?.[1]).filter((p): p is string => !!p));
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, packages, own };
}

/** The packages the SQLite driver loads (libsql counts its own nested detect-libc), besides its per-platform `@libsql/…` package. */
export const SQLITE_PACKAGES = ["@neon-rs/load", "libsql"];

/**
 * `packages` sorted, with the one `@libsql/<platform>` package (which one depends on the machine)
 * checked present and left out.
 */
export function withoutPlatformPackage(packages: Set<string>): string[] {
  const platform = [...packages].filter((p) => p.startsWith("@libsql/"));
  if (platform.length !== 1) throw new Error(`expected one @libsql/<platform> package among the loaded ones, got: ${[...packages].sort().join(", ")}`);
  return [...packages].filter((p) => !p.startsWith("@libsql/")).sort();
}
