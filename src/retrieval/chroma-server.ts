import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { errorMessage } from "../errors.js";
import { failpoint } from "../failpoints.js";
import { isMissing, MissingPackageError } from "../optional-packages.js";
import { VectorStoreError } from "./errors.js";
import { chromaProcessesOn, isAlive, isChromaProcess, lock, readTail, safeReaddir, sleep, stopPid, waitForExit } from "./chroma-process.js";

export { chromaProcessesOn } from "./chroma-process.js";

// The embedded Chroma server: the chromadb package's bundled server, persisting under
// <stateDir>/chroma, on a free loopback port. Every ledgerloop process using it registers itself in
// <stateDir>/chroma.clients/<pid>; the last one to leave stops it. A process killed with SIGKILL
// leaves the server running, and the next process adopts it (server.json + a heartbeat); when none
// comes, the server's own watchdog (chroma-host.mjs) stops it after a while. The record
// is written as the server is spawned, and a server on the data directory that no record names is
// stopped before another is started: no crash point leaves a server nobody will stop.

/** A running Chroma server this process may use until it calls `release`. */
export interface ChromaServer {
  url: string;
  /** Server pid when it is the embedded one, null for an external CHROMA_URL server. */
  pid: number | null;
  /** True when this call started the server (false when it reused a running one or an external one). */
  started: boolean;
  /** Stops using the server; the embedded server is stopped when no other live process uses it. */
  release(): Promise<void>;
}

interface ServerRecord {
  pid: number;
  port: number;
  host: string;
  dataDir: string;
  startedAt: string;
  /**
   * "starting" is written the moment the server is spawned, "ready" once it answers: a process
   * killed while waiting for it leaves a record, so the next one adopts or stops that server.
   */
  status?: "starting" | "ready";
}

export interface EnsureChromaOptions {
  stateDir: string;
  /** How long to wait for a new server's first heartbeat (default 30 s; two busy cores can be slow). */
  startTimeoutMs?: number;
}

const HOST = "127.0.0.1";
const inProcessUsers = new Map<string, number>();
/** Synchronous releases of the servers this process uses and has not released yet. */
const pendingReleases = new Set<() => void>();
/** Servers this process has spawned that have not answered yet (not in pendingReleases until they do). */
const startingPids = new Set<number>();
/** Set once the host is stopping: no new server is spawned after that. */
let stopping = false;
/** Servers this process starts die with it (a long-lived host such as the LangGraph server). */
let dieWithHost = false;

/**
 * Makes the Chroma servers this process starts die with it (the kernel's parent-death signal,
 * through util-linux setpriv): for a host that may be killed before any cleanup runs (a dev
 * server's watcher SIGKILLs it moments after Ctrl-C). CLI processes share their server with other
 * processes and keep the default.
 */
export function chromaServersDieWithThisProcess(): void {
  dieWithHost = true;
}

function setprivPath(): string | null {
  for (const p of ["/usr/bin/setpriv", "/bin/setpriv", "/usr/sbin/setpriv"]) if (fs.existsSync(p)) return p;
  return null;
}

/**
 * Releases, synchronously, every embedded Chroma server this process still uses (stopping each one
 * no other live process uses). For a signal handler: a host that is being stopped may be killed
 * (SIGKILL) moments later, before any asynchronous close could finish.
 */
export function releaseChromaServersSync(): void {
  stopping = true;
  for (const release of [...pendingReleases]) release();
  // A server still starting belongs to this process alone: nobody else has adopted it yet.
  for (const pid of startingPids) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone already
    }
  }
  startingPids.clear();
}

/** Answers whether a Chroma server responds at `url` within `timeoutMs`. */
export async function heartbeat(url: string, timeoutMs = 1500): Promise<boolean> {
  try {
    const res = await fetch(`${url}/api/v2/heartbeat`, { signal: AbortSignal.timeout(timeoutMs) });
    await res.arrayBuffer();
    return res.ok;
  } catch {
    return false;
  }
}

/**
 * Asks a Chroma server for its heartbeat and version (doctor's check of CHROMA_URL). Throws one line
 * naming the URL when nothing answers or the answer is not Chroma's.
 */
export async function probeChroma(url: string, timeoutMs = 3000): Promise<{ url: string; version: string }> {
  const clean = url.replace(/\/+$/, "");
  const get = async (what: string) => {
    let res: Response;
    try {
      res = await fetch(`${clean}/api/v2/${what}`, { signal: AbortSignal.timeout(timeoutMs) });
    } catch (err) {
      // fetch says "fetch failed"; what failed is in its cause (ECONNREFUSED, a bad port, a DNS error).
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      const why = (err as Error).name === "TimeoutError" ? `no answer within ${timeoutMs} ms` : (cause?.code ?? cause?.message ?? errorMessage(err));
      throw new VectorStoreError("VECTOR_UNREACHABLE", `no Chroma server answers at ${clean} (${why})`);
    }
    const body = await res.text();
    if (!res.ok) throw new VectorStoreError("VECTOR_UNREACHABLE", `Chroma at ${clean} answered ${what} with HTTP ${res.status}`);
    return body;
  };
  await get("heartbeat");
  let version: unknown;
  try {
    version = JSON.parse(await get("version"));
  } catch (err) {
    if (err instanceof VectorStoreError) throw err;
    throw new VectorStoreError("VECTOR_FAILED", `the server at ${clean} is not Chroma (its version is not JSON)`);
  }
  return { url: clean, version: String(version) };
}

/** A handle on an external server (CHROMA_URL): checked, never started or stopped. */
export async function externalChroma(url: string): Promise<ChromaServer> {
  const clean = url.replace(/\/+$/, "");
  if (!(await heartbeat(clean, 3000))) {
    throw new VectorStoreError("VECTOR_UNREACHABLE", `no Chroma server answers at ${clean} (CHROMA_URL)`);
  }
  return { url: clean, pid: null, started: false, release: async () => {} };
}

/** Reuses the workspace's running embedded Chroma server, or starts one. */
export async function ensureChromaServer(opts: EnsureChromaOptions): Promise<ChromaServer> {
  const stateDir = path.resolve(opts.stateDir);
  const dataDir = path.join(stateDir, "chroma");
  const recordFile = path.join(stateDir, "chroma.server.json");
  fs.mkdirSync(dataDir, { recursive: true });
  const unlock = await lock(path.join(stateDir, "chroma.lock"), (opts.startTimeoutMs ?? 30_000) + 5_000);
  let server: { record: ServerRecord; started: boolean };
  try {
    // A record copied along with the state directory (cp -a of a workspace) names the original's
    // server, which persists into the original's data: only a server of this data directory is reused.
    const existing = readRecord(recordFile);
    const ours = existing && isAlive(existing.pid) && isChromaProcess(existing.pid, dataDir) ? existing : null;
    // We hold the lock, so whoever wrote a "starting" record is gone: give its server the time a
    // start takes before deciding it is not coming up.
    const waitMs = ours?.status === "starting" ? Math.max(0, Date.parse(ours.startedAt) + (opts.startTimeoutMs ?? 30_000) - Date.now()) : 0;
    if (ours && (await answers(urlOf(ours), ours.pid, waitMs))) {
      if (ours.status !== "ready") writeRecord(recordFile, { ...ours, status: "ready" });
      server = { record: { ...ours, status: "ready" }, started: false };
    } else {
      // A dead or unresponsive server from an earlier run, and any server on this data directory
      // that no record names (its starter was killed before it could write one): make sure they
      // are gone before reusing the data.
      if (ours) await stopPid(ours.pid);
      for (const pid of chromaProcessesOn(dataDir)) await stopPid(pid);
      server = { record: await startServer(dataDir, stateDir, recordFile, opts.startTimeoutMs ?? 30_000), started: true };
    }
    register(stateDir);
  } finally {
    unlock();
  }
  return serverHandle(stateDir, recordFile, server.record, server.started);
}

/**
 * The workspace's embedded server when one already runs and answers (another process started it),
 * registered for this process as by ensureChromaServer; null when none runs. Never starts one.
 */
export async function runningChromaServer(stateDirIn: string): Promise<ChromaServer | null> {
  const stateDir = path.resolve(stateDirIn);
  const recordFile = path.join(stateDir, "chroma.server.json");
  const record = readRecord(recordFile);
  if (!record || record.status !== "ready" || !isAlive(record.pid) || !isChromaProcess(record.pid, path.join(stateDir, "chroma"))) return null;
  if (!(await heartbeat(urlOf(record), 1000))) return null;
  register(stateDir);
  return serverHandle(stateDir, recordFile, record, false);
}

/** This process's use of a registered server: released on `release()`, or synchronously at exit. */
function serverHandle(stateDir: string, recordFile: string, record: ServerRecord, started: boolean): ChromaServer {
  let released = false;
  const onExit = () => {
    // Synchronous last resort when the process exits without close(): stop the server if nobody else uses it.
    if (released) return;
    released = true;
    pendingReleases.delete(onExit);
    releaseSync(stateDir, recordFile, record);
  };
  process.on("exit", onExit);
  pendingReleases.add(onExit);
  return {
    url: urlOf(record),
    pid: record.pid,
    started,
    async release() {
      if (released) return;
      released = true;
      process.off("exit", onExit);
      pendingReleases.delete(onExit);
      const pid = releaseSync(stateDir, recordFile, record);
      if (pid !== null) await waitForExit(pid, 5_000);
    },
  };
}

function urlOf(r: ServerRecord): string {
  return `http://${r.host}:${r.port}`;
}

/** Whether the server at `url` answers within `waitMs` (one try when 0) while `pid` lives. */
async function answers(url: string, pid: number, waitMs: number): Promise<boolean> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    if (await heartbeat(url)) return true;
    if (Date.now() >= deadline || !isAlive(pid)) return false;
    await sleep(200);
  }
}

function writeRecord(file: string, record: ServerRecord): void {
  // Written whole then renamed: a reader never sees half a record.
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(record, null, 2));
  fs.renameSync(tmp, file);
}

async function startServer(dataDir: string, stateDir: string, recordFile: string, timeoutMs: number): Promise<ServerRecord> {
  const cli = chromaCli();
  // Read by the server's watchdog (chroma-host.mjs), which could only ignore a bad value: refused here.
  const idle = process.env.LEDGERLOOP_CHROMA_IDLE_SECONDS;
  if (idle !== undefined && !/^\s*\d+\s*$/.test(idle)) {
    throw new VectorStoreError(
      "VECTOR_SERVER_START",
      `LEDGERLOOP_CHROMA_IDLE_SECONDS must be a whole number of seconds (0: never stop an idle server), not ${JSON.stringify(idle)}`,
    );
  }
  const logFile = path.join(stateDir, "chroma.log");
  let lastError = "";
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    if (stopping) throw new VectorStoreError("VECTOR_SERVER_START", "this process is stopping: no Chroma server is started");
    const log = fs.openSync(logFile, "w");
    // Its own process group, so that a Ctrl-C meant for a CLI command does not hit the server shared
    // with other processes; it is stopped explicitly instead.
    // chroma-host.mjs runs the CLI in its own process beside a watchdog that stops an orphaned server.
    const serverArgv = [process.execPath, chromaHostScript(), cli, "run", "--path", dataDir, "--host", HOST, "--port", String(port)];
    const setpriv = dieWithHost ? setprivPath() : null;
    const argv = setpriv ? [setpriv, "--pdeathsig", "SIGTERM", "--", ...serverArgv] : serverArgv;
    const child = spawn(argv[0]!, argv.slice(1), {
      stdio: ["ignore", log, log],
      detached: true,
      env: { ...process.env, CHROMA_TELEMETRY: "false", ANONYMIZED_TELEMETRY: "False" },
    });
    fs.closeSync(log);
    child.unref();
    if (child.pid) startingPids.add(child.pid);
    // The window a crash test kills the process in: the server exists, no record names it yet.
    failpoint("chroma-spawned");
    const record: ServerRecord = { pid: child.pid!, port, host: HOST, dataDir, startedAt: new Date().toISOString(), status: "starting" };
    if (child.pid) writeRecord(recordFile, record);
    failpoint("chroma-recorded");
    let exited: number | null | undefined;
    child.once("exit", (code) => (exited = code));
    child.once("error", (err) => {
      lastError = errorMessage(err);
      exited = -1;
    });
    const url = `http://${HOST}:${port}`;
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline && exited === undefined) {
      if (await heartbeat(url, 1000)) {
        if (child.pid) startingPids.delete(child.pid);
        const ready = { ...record, status: "ready" as const };
        writeRecord(recordFile, ready);
        return ready;
      }
      await sleep(100);
    }
    if (child.pid) startingPids.delete(child.pid);
    const tail = readTail(logFile);
    fs.rmSync(recordFile, { force: true });
    if (exited === undefined) {
      if (child.pid) await stopPid(child.pid);
      throw new VectorStoreError("VECTOR_SERVER_START", `the Chroma server did not answer within ${timeoutMs} ms (log ${logFile}: ${tail})`);
    }
    lastError = lastError || `exit code ${exited}: ${tail}`;
    // A port taken between our probe and the server's bind: try another one.
    if (!/address already in use|AddrInUse/i.test(tail)) break;
  }
  throw new VectorStoreError("VECTOR_SERVER_START", `cannot start the Chroma server (${lastError})`);
}

/** The script that runs the Chroma CLI with its watchdog (next to this module, in the sources and in dist). */
export function chromaHostScript(): string {
  return fileURLToPath(new URL("./chroma-host.mjs", import.meta.url));
}

/** Path of the chromadb package's CLI (its `chroma` bin), which runs the bundled server. */
export function chromaCli(): string {
  return path.join(chromaPackageDir(), "dist", "cli.mjs");
}

/** The installed chromadb package's directory; a {@link MissingPackageError} when it is not installed. */
export function chromaPackageDir(): string {
  const require = createRequire(import.meta.url);
  // The package exports only its entry points (dist/ or dist/cjs/); the CLI is dist/cli.mjs.
  let dir: string;
  try {
    dir = path.dirname(require.resolve("chromadb"));
  } catch (err) {
    if (isMissing(err, ["chromadb"])) throw new MissingPackageError(["chromadb"], "the Chroma vector store", { cause: err });
    throw err;
  }
  while (!fs.existsSync(path.join(dir, "package.json")) && path.dirname(dir) !== dir) dir = path.dirname(dir);
  return dir;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.once("error", reject);
    srv.listen(0, HOST, () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

function clientsDir(stateDir: string): string {
  return path.join(stateDir, "chroma.clients");
}

function register(stateDir: string): void {
  inProcessUsers.set(stateDir, (inProcessUsers.get(stateDir) ?? 0) + 1);
  fs.mkdirSync(clientsDir(stateDir), { recursive: true });
  fs.writeFileSync(path.join(clientsDir(stateDir), String(process.pid)), "");
}

/** Unregisters this user; stops the server when no live process uses it any more. Returns the pid signalled, if any. */
function releaseSync(stateDir: string, recordFile: string, record: ServerRecord): number | null {
  const left = (inProcessUsers.get(stateDir) ?? 1) - 1;
  if (left > 0) {
    inProcessUsers.set(stateDir, left);
    return null;
  }
  inProcessUsers.delete(stateDir);
  const dir = clientsDir(stateDir);
  fs.rmSync(path.join(dir, String(process.pid)), { force: true });
  let others = 0;
  for (const name of safeReaddir(dir)) {
    const pid = Number(name);
    if (Number.isInteger(pid) && pid !== process.pid && isAlive(pid)) others++;
    else fs.rmSync(path.join(dir, name), { force: true });
  }
  if (others > 0) return null;
  // Only stop the server the record still names (another process may have replaced it meanwhile).
  const current = readRecord(recordFile);
  if (!current || current.pid !== record.pid || !isAlive(record.pid) || !isChromaProcess(record.pid, record.dataDir)) return null;
  try {
    process.kill(record.pid, "SIGTERM");
  } catch {
    return null;
  }
  fs.rmSync(recordFile, { force: true });
  return record.pid;
}

function readRecord(file: string): ServerRecord | null {
  try {
    const r = JSON.parse(fs.readFileSync(file, "utf8")) as ServerRecord;
    return Number.isInteger(r.pid) && Number.isInteger(r.port) ? r : null;
  } catch {
    return null;
  }
}
