import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { ensureBuilt } from "./build.js";
import { REPO, tempWorkspace } from "./workspace.js";

// The CLI as users run it: the published bin over the compiled dist/, rebuilt first when a source
// is newer (ensureBuilt; `npm ci` builds it). Starting it through tsx cost ~0.8 s more CPU per
// start, and the suite starts the CLI several hundred times.
ensureBuilt();

/** The published bin, run by the CLI tests as a real child process. */
export const BIN = path.join(REPO, "bin/ledgerloop.js");

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Environment for CLI children: no inherited failpoints or models unless given. */
function childEnv(env: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const base = { ...process.env };
  delete base.LEDGERLOOP_FAILPOINT;
  delete base.LEDGERLOOP_MODEL;
  delete base.LEDGERLOOP_RECORD_REQUESTS;
  delete base.LEDGERLOOP_STATE_URL;
  return { ...base, ...env };
}

/** Runs `ledgerloop <args>` as a real child process and waits for it. */
export function cli(args: string[], opts: { cwd?: string; env?: Record<string, string | undefined>; timeoutMs?: number } = {}): CliResult {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    cwd: opts.cwd ?? REPO,
    env: childEnv(opts.env ?? {}),
    encoding: "utf8",
    timeout: opts.timeoutMs ?? 60_000,
  });
  return { code: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
}

/** Starts `ledgerloop <args>` without waiting. */
export function cliSpawn(args: string[], opts: { cwd?: string; env?: Record<string, string | undefined> } = {}): ChildProcess {
  return spawn(process.execPath, [BIN, ...args], { cwd: opts.cwd ?? REPO, env: childEnv(opts.env ?? {}), stdio: ["ignore", "pipe", "pipe"] });
}

/** Parses the lines of a --json listing. */
export function jsonLines<T = Record<string, unknown>>(stdout: string): T[] {
  return stdout
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as T);
}

/**
 * Runs `ledgerloop <args>` as a child process without blocking this one: for runs that talk to a
 * server living in the test process (the OpenAI stub), which spawnSync would starve.
 */
export function cliAsync(args: string[], opts: { cwd?: string; env?: Record<string, string | undefined>; timeoutMs?: number } = {}): Promise<CliResult> {
  const child = cliSpawn(args, opts);
  let stdout = "";
  let stderr = "";
  child.stdout!.setEncoding("utf8").on("data", (d: string) => (stdout += d));
  child.stderr!.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  const timer = setTimeout(() => child.kill("SIGKILL"), opts.timeoutMs ?? 60_000);
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** The demo run in a new temp workspace, through the CLI; fails (with its stderr) unless it exits 0. */
export function demoRun(): { ws: string; thread: string; out: Record<string, unknown> } {
  const dir = path.join(tempWorkspace(), "demo");
  const r = cli(["demo", "--workspace", dir, "--json"]);
  if (r.code !== 0) throw new Error(`the demo exited ${r.code}: ${r.stderr}`);
  const out = JSON.parse(r.stdout) as Record<string, unknown>;
  return { ws: fs.realpathSync(dir), thread: String(out.thread), out };
}
