import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { LEVELS, type IsolationLevel, type Tools } from "./isolation.js";

// Probing the isolation levels starts bwrap, unshare and a mount namespace: hundreds of
// milliseconds of every run's start on an idle machine, seconds on a busy one. What they find
// changes only with the machine (kernel, the tools' binaries, the user namespace switches, the
// uid), so the results are kept per machine in the user's cache directory under a key built from
// exactly those, which costs a few stat() and read() calls to check.
//
// Only a result whose chosen level is the strongest one (bwrap) is ever taken from the cache: a
// cached failure could otherwise keep a machine on a weaker level after a passing glitch (a probe
// that timed out under load). And a level taken from the cache is probed again, off the start-up
// path, before the first command runs under it (see verifyCachedLevel).

const VERSION = 1;
/** Kernel switches that decide whether unprivileged user namespaces work. */
const USERNS_SWITCHES = [
  "/proc/sys/kernel/unprivileged_userns_clone",
  "/proc/sys/user/max_user_namespaces",
  "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
];

/** One level's probe result. */
export interface LevelProbe {
  ok: boolean;
  /** Why it is (not) usable, one line. */
  detail: string;
}

/** What a full probe found, as kept in the cache. */
export interface ProbedLevels {
  levels: Record<IsolationLevel, LevelProbe>;
  bwrapVersion: string | null;
  disableUserns: boolean;
  /** The level-"none" PID namespace note of the report (text only; commands at "none" probe it themselves). */
  noneReason: string;
  noneHasPrefix: boolean;
}

interface CacheFile {
  version: number;
  key: string;
  probed: ProbedLevels;
}

/** `$XDG_CACHE_HOME/ledgerloop`, else `~/.cache/ledgerloop`. */
export function userCacheDir(): string {
  const xdg = process.env.XDG_CACHE_HOME;
  return path.join(xdg && path.isAbsolute(xdg) ? xdg : path.join(os.homedir(), ".cache"), "ledgerloop");
}

function fileStamp(p: string | undefined): string {
  if (!p) return "-";
  try {
    const st = fs.statSync(p);
    return `${p}:${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
  } catch {
    return `${p}:missing`;
  }
}

function readSwitch(p: string): string {
  try {
    return fs.readFileSync(p, "utf8").trim();
  } catch {
    return "-";
  }
}

/** The machine facts a probe result depends on, hashed: any change makes the cached result void. */
export function probeKey(tools: Tools, uid: number): string {
  const facts = [
    `v${VERSION}`,
    process.platform,
    process.arch,
    os.release(),
    `uid ${uid}`,
    ...(["sh", "bwrap", "unshare", "setpriv", "ip", "mount"] as const).map((t) => `${t}=${fileStamp(tools[t])}`),
    ...USERNS_SWITCHES.map((s) => `${s}=${readSwitch(s)}`),
  ];
  return createHash("sha256").update(facts.join("\n")).digest("hex");
}

/** The cache file of this uid (one file per uid, so that sudo and the user never share one). */
export function probeCacheFile(uid: number, dir = userCacheDir()): string {
  return path.join(dir, `isolation-${uid}.json`);
}

function isLevelProbe(v: unknown): v is LevelProbe {
  return !!v && typeof (v as LevelProbe).ok === "boolean" && typeof (v as LevelProbe).detail === "string";
}

/**
 * The cached probe result when it is for this key and its level is bwrap; null when absent,
 * stale, unreadable or malformed (the caller then probes, as without a cache).
 */
export function readProbeCache(file: string, key: string): ProbedLevels | null {
  let parsed: CacheFile;
  try {
    parsed = JSON.parse(fs.readFileSync(file, "utf8")) as CacheFile;
  } catch {
    return null;
  }
  const p = parsed?.probed;
  if (parsed?.version !== VERSION || parsed.key !== key || !p || typeof p !== "object") return null;
  if (!LEVELS.every((l) => isLevelProbe(p.levels?.[l]))) return null;
  if (typeof p.disableUserns !== "boolean" || typeof p.noneReason !== "string" || typeof p.noneHasPrefix !== "boolean") return null;
  if (p.bwrapVersion !== null && typeof p.bwrapVersion !== "string") return null;
  return p.levels.bwrap.ok ? p : null;
}

/** Stores a probe result; an unwritable cache directory only means the next process probes again. */
export function writeProbeCache(file: string, key: string, probed: ProbedLevels): void {
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    // Written aside and renamed: a process reading at the same time sees the old file or the new one.
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify({ version: VERSION, key, probed } satisfies CacheFile) + "\n", { mode: 0o600 });
    fs.renameSync(tmp, file);
  } catch {
    // read-only home, full disk: not worth a warning, the probe result is still used in this process
  }
}

/** Removes a cached result that proved wrong. */
export function dropProbeCache(file: string): void {
  fs.rmSync(file, { force: true });
}

/** Runs a probe argv without blocking the event loop; resolves to its failure text, or null when it passed. */
export function probeAsync(argv: string[], timeoutMs = 30_000): Promise<string | null> {
  return new Promise((resolve) => {
    let out = "";
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ["ignore", "pipe", "pipe"], env: { PATH: process.env.PATH ?? "/usr/bin:/bin" }, timeout: timeoutMs });
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (out += d.toString()));
    child.on("error", (err) => resolve(err.message));
    child.on("close", (code, signal) => resolve(code === 0 ? null : out.trim().split("\n")[0] || `exit ${code ?? signal}`));
  });
}
