import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { detectCgroups, type CgroupSupport } from "./limits.js";
import os from "node:os";
import { LEVELS, planUid, runnerUid, unshareArgv, type IsolationLevel, type Tools } from "./isolation.js";
import { seccompSupported } from "./seccomp.js";
import { noneNamespacePrefix } from "./none-pidns.js";
import { ConfigError } from "../errors.js";
import {
  dropProbeCache,
  probeAsync,
  probeCacheFile,
  probeKey,
  readProbeCache,
  writeProbeCache,
  type LevelProbe,
  type ProbedLevels,
} from "./isolation-cache.js";

export type { LevelProbe } from "./isolation-cache.js";

/** What `ledgerloop doctor` prints: the level commands will get, and why. */
export interface IsolationReport {
  /** The strongest level that works here. */
  level: IsolationLevel;
  /** Human-readable lines: each level's probe, how each limit is enforced, the choice. */
  reasons: string[];
  levels: Record<IsolationLevel, LevelProbe>;
  tools: Tools;
  bwrapVersion: string | null;
  /** bwrap has --disable-userns (0.8+). */
  disableUserns: boolean;
  seccomp: boolean;
  cgroups: CgroupSupport;
  /** How each limit is enforced here, by name. */
  limits: Record<"memory" | "pids" | "cpu" | "file_size" | "timeout" | "output", string>;
  /** "cache": the levels come from this machine's probe cache (isolation-cache.ts) and are not yet re-checked. */
  source?: "probe" | "cache";
  /** The probe cache file of this uid (written after a probe, read before one). */
  cacheFile?: string;
}

export { findProgram } from "./find-program.js";
import { findProgram } from "./find-program.js";

function run(argv: string[], timeoutMs = 5000): { ok: boolean; out: string } {
  const r = spawnSync(argv[0]!, argv.slice(1), { encoding: "utf8", timeout: timeoutMs, env: { PATH: process.env.PATH ?? "/usr/bin:/bin" } });
  const out = `${r.stdout ?? ""}${r.stderr ?? ""}${r.error ? String(r.error.message) : ""}`.trim();
  return { ok: r.status === 0 && !r.error, out };
}

/** True when argv runs and exits 0 (a capability probe). */
export function probeOk(argv: string[]): boolean {
  return run(argv).ok;
}

function firstLine(s: string): string {
  return s.split("\n")[0]!.slice(0, 200);
}

/** The bwrap flags of a probe: the same namespaces and mounts as a real command, without a workspace. */
export function bwrapProbeArgv(tools: Tools, disableUserns: boolean, rootUserns: boolean): string[] {
  const a = [tools.bwrap!, "--unshare-user"];
  if (disableUserns) a.push("--disable-userns");
  if (rootUserns) a.push("--uid", "65534", "--gid", "65534");
  a.push(
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-cgroup-try",
    "--unshare-net",
    "--die-with-parent",
    "--new-session",
    "--cap-drop",
    "ALL",
    "--ro-bind",
    "/",
    "/",
    "--dev",
    "/dev",
    "--proc",
    "/proc",
    "--tmpfs",
    "/tmp",
    "--tmpfs",
    "/run",
    "--",
    tools.sh,
    "-c",
    "true",
  );
  return a;
}

let cached: IsolationReport | null = null;
let probeRounds = 0;

/** How many full probes this process has run (the probe cache is for keeping this at zero). */
export function isolationProbeCount(): number {
  return probeRounds;
}

/** Forgets this process's detection, as a new process would start (tests of the probe cache). */
export function forgetIsolation(): void {
  cached = null;
}

function findTools(): Tools {
  return {
    sh: findProgram("sh") ?? "/bin/sh",
    // Found through the command's PATH, as at level "none", so messages read "bash: …" everywhere.
    bash: "bash",
    bwrap: findProgram("bwrap"),
    unshare: findProgram("unshare"),
    setpriv: findProgram("setpriv"),
    ip: findProgram("ip"),
    mount: findProgram("mount"),
  };
}

/** Runs every level's probe (bwrap, unshare, the PID namespace at "none"). */
function probeLevels(tools: Tools, root: boolean): ProbedLevels {
  probeRounds++;
  const levels = {} as Record<IsolationLevel, LevelProbe>;

  // bwrap
  let bwrapVersion: string | null = null;
  let disableUserns = false;
  if (process.platform !== "linux") {
    levels.bwrap = { ok: false, detail: `not Linux (${process.platform})` };
  } else if (!tools.bwrap) {
    levels.bwrap = { ok: false, detail: "bwrap not found (install bubblewrap: apt-get install bubblewrap)" };
  } else {
    const v = run([tools.bwrap, "--version"]);
    bwrapVersion = /(\d+\.\d+(?:\.\d+)?)/.exec(v.out)?.[1] ?? null;
    const [maj, min] = (bwrapVersion ?? "0.0").split(".").map(Number);
    disableUserns = maj! > 0 || min! >= 8;
    const probe = run(bwrapProbeArgv(tools, disableUserns, root));
    if (probe.ok) {
      levels.bwrap = {
        ok: true,
        detail: `${tools.bwrap} (bubblewrap ${bwrapVersion ?? "?"}) works${disableUserns ? "" : "; older than 0.8, so nested user namespaces stay possible"}`,
      };
    } else {
      levels.bwrap = {
        ok: false,
        detail: `${tools.bwrap} is installed but cannot build a sandbox here: ${firstLine(probe.out) || "probe failed"} (user namespaces disabled?)`,
      };
    }
    if (!tools.setpriv && levels.bwrap.ok && root) {
      levels.bwrap.detail += "; setpriv missing, so workspaces of other users run as uid 0 without capabilities";
    }
  }

  // unshare
  if (process.platform !== "linux") {
    levels.unshare = { ok: false, detail: `not Linux (${process.platform})` };
  } else if (!tools.unshare || !tools.setpriv) {
    levels.unshare = { ok: false, detail: `${!tools.unshare ? "unshare" : "setpriv"} not found (util-linux)` };
  } else {
    // The probe makes the same mounts as a real command (read-only host, private /tmp and /run, a
    // read-write workspace): a machine where one of them fails gets no unshare level at all.
    const ws = fs.mkdtempSync(path.join(os.tmpdir(), "ll-probe-"));
    let probe: { ok: boolean; out: string };
    try {
      const argv = unshareArgv({
        command: "touch .probe && ! touch /etc/.ll-probe 2>/dev/null",
        cwd: ws,
        workspace: ws,
        env: {},
        allowNetwork: false,
        protect: [],
        writable: [],
        hidden: [],
        uid: planUid(ws),
        seccompFd: null,
        tools,
        disableUserns: false,
      });
      probe = run(argv);
    } finally {
      fs.rmSync(ws, { recursive: true, force: true });
    }
    levels.unshare = probe.ok
      ? {
          ok: true,
          detail: `${tools.unshare} works (mount, network and PID namespaces: read-only host, private /tmp and /run)${tools.ip ? "" : "; `ip` not found, so loopback stays down"}`,
        }
      : { ok: false, detail: `${tools.unshare} cannot build the sandbox here: ${firstLine(probe.out) || "probe failed"}` };
  }
  const noneNs = noneNamespacePrefix(tools.sh);
  levels.none = {
    ok: true,
    detail: `always available: runs on the host (its files, network and uid), only limits apply; ${noneNs.reason}`,
  };
  return { levels, bwrapVersion, disableUserns, noneReason: noneNs.reason, noneHasPrefix: noneNs.prefix !== null };
}

/**
 * Finds the strongest isolation level that works on this machine by running a trivial command
 * under each (once per process; `refresh` probes again). A result found before on this machine
 * (same kernel, tools and uid) is taken from the probe cache unless `refresh`. Never throws: a
 * level that fails its probe is reported with the reason.
 */
export function detectIsolation(opts: { refresh?: boolean; cacheDir?: string } = {}): IsolationReport {
  if (cached && !opts.refresh) return cached;
  const tools = findTools();
  const uid = runnerUid();
  const root = uid === 0;
  const cacheFile = probeCacheFile(uid, opts.cacheDir);
  const key = probeKey(tools, uid);
  const hit = opts.refresh ? null : readProbeCache(cacheFile, key);
  const probed = hit ?? probeLevels(tools, root);
  if (!hit) writeProbeCache(cacheFile, key, probed);
  const { levels, bwrapVersion, disableUserns } = probed;
  const noneNs = { reason: probed.noneReason, prefix: probed.noneHasPrefix };

  const level = LEVELS.find((l) => levels[l].ok)!;
  const cgroups = detectCgroups();
  const p = cgroups.parents;
  const seccomp = seccompSupported();
  const limits: IsolationReport["limits"] = {
    memory: p.memory ? `cgroup v1 memory.limit_in_bytes under ${p.memory}` : "NOT enforced (no writable memory cgroup)",
    pids: p.pids
      ? `cgroup v1 pids.max under ${p.pids}`
      : root
        ? "RLIMIT_NPROC only for commands that run as another uid; NOT enforced for uid 0 (no writable pids cgroup)"
        : "RLIMIT_NPROC (counts every process of the uid)",
    cpu: `RLIMIT_CPU per process${p.cpuacct ? ", and for the whole command via cgroup cpuacct" : ""}`,
    file_size: "RLIMIT_FSIZE",
    timeout: `wall clock; the whole tree is killed (${p.freezer || p.pids || p.memory ? "cgroup" : "process group and descendant scan"}${level !== "none" || noneNs.prefix ? " and PID namespace" : ""})`,
    output: "stopped after the output budget; stdout/stderr capped to head and tail",
  };
  const reasons: string[] = [];
  for (const l of LEVELS) reasons.push(`${l}: ${levels[l].ok ? "available" : "unavailable"} — ${levels[l].detail}`);
  reasons.push(`chosen: ${level}${level === "none" ? " — COMMANDS ARE NOT ISOLATED FROM THIS MACHINE" : " (strongest available)"}`);
  if (level === "bwrap")
    reasons.push(
      seccomp ? "seccomp: set-uid/set-gid file creation refused" : `seccomp: no filter for ${process.arch}; set-uid files can be created in the workspace`,
    );
  for (const [k, v] of Object.entries(limits)) reasons.push(`limit ${k}: ${v}`);
  for (const r of cgroups.reasons) reasons.push(r);

  cached = { level, reasons, levels, tools, bwrapVersion, disableUserns, seccomp, cgroups, limits, source: hit ? "cache" : "probe", cacheFile };
  return cached;
}

/**
 * Checks again, without blocking the event loop, a bwrap level that came from the probe cache. A
 * level that fails now is never traded for a weaker one in passing: the cache entry goes, the
 * machine is probed afresh (and recorded), and this throws, naming what the next run will get.
 */
export async function verifyCachedLevel(report: IsolationReport, level: IsolationLevel): Promise<void> {
  if (report.source !== "cache" || !report.cacheFile || level !== "bwrap") return;
  const failure = await probeAsync(bwrapProbeArgv(report.tools, report.disableUserns, runnerUid() === 0));
  if (failure === null) return;
  dropProbeCache(report.cacheFile);
  const fresh = detectIsolation({ refresh: true, cacheDir: path.dirname(report.cacheFile) });
  throw new ConfigError(
    `sandbox: bwrap was recorded as working on this machine (${report.cacheFile}) but fails now: ${failure}. ` +
      `Probed again: ${fresh.level === "bwrap" ? "bwrap works again" : `the strongest level that works is "${fresh.level}"`}; no command ran, start again (ledgerloop doctor shows why)`,
  );
}

/**
 * The warning the CLI prints once at start when commands will run unisolated; null otherwise.
 */
export function isolationWarning(level: string, reasons: string[] = []): string | null {
  if (level !== "none") return null;
  const why = reasons.filter((r) => /^(bwrap|unshare):/.test(r)).map((r) => `  ${r}`);
  return [
    "WARNING: ledgerloop runs the agent's commands WITHOUT ISOLATION (sandbox: none).",
    "  Commands can read and change any file this user can, reach the network, and read this process's",
    "  environment; only the limits, the scrubbed environment and (as root) a PID namespace that ends",
    "  every process a command started apply. Install bubblewrap",
    "  (apt-get install bubblewrap) to isolate them.",
    ...why,
  ].join("\n");
}
