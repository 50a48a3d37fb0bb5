import { execFileSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";

/**
 * A throw-away PostgreSQL server of a test's own, for what the shared one must not suffer: being
 * restarted, stopped, or filled to its connection limit (as .ci/postgres.sh starts the shared one;
 * as root the server runs as the `postgres` user). Null when initdb/pg_ctl cannot be found or run.
 */
export interface PgCluster {
  url: string;
  stop(mode?: "fast" | "immediate"): void;
  start(): void;
  restart(): void;
  /** Stops the server and deletes its files. */
  destroy(): void;
}

function bin(name: string): string | null {
  for (const d of (process.env.PATH ?? "")
    .split(":")
    .concat(fs.existsSync("/usr/lib/postgresql") ? fs.readdirSync("/usr/lib/postgresql").map((v) => `/usr/lib/postgresql/${v}/bin`) : [])) {
    if (fs.existsSync(path.join(d, name))) return path.join(d, name);
  }
  return null;
}

const asRoot = process.getuid?.() === 0;

function run(cmd: string, args: string[]): string {
  return asRoot ? execFileSync("runuser", ["-u", "postgres", "--", cmd, ...args], { encoding: "utf8" }) : execFileSync(cmd, args, { encoding: "utf8" });
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/** Why no cluster can be started here, or null when one can. */
export function clusterSkipReason(): string | null {
  if (!bin("initdb") || !bin("pg_ctl")) return "initdb/pg_ctl not found";
  if (asRoot) {
    try {
      execFileSync("id", ["postgres"], { stdio: "ignore" });
    } catch {
      return "running as root without a postgres user to run the server as";
    }
  }
  return null;
}

/** Initialises and starts a server on a free loopback port (trust logins: it only listens on 127.0.0.1). */
export async function startCluster(o: { maxConnections?: number } = {}): Promise<PgCluster> {
  const initdb = bin("initdb")!;
  const pgCtl = bin("pg_ctl")!;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ll-pgc-"));
  fs.chmodSync(dir, 0o755);
  if (asRoot) execFileSync("chown", ["postgres", dir]);
  const data = path.join(dir, "data");
  run(initdb, ["--auth=trust", "-U", "postgres", "-D", data]);
  const port = await freePort();
  const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=${o.maxConnections ?? 100} -c superuser_reserved_connections=0 -c fsync=off`;
  const start = () => void run(pgCtl, ["-D", data, "-l", path.join(dir, "server.log"), "-o", opts, "-w", "start"]);
  const stop = (mode: "fast" | "immediate" = "fast") => void run(pgCtl, ["-D", data, "-m", mode, "-w", "stop"]);
  start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    start,
    stop,
    restart: () => void run(pgCtl, ["-D", data, "-l", path.join(dir, "server.log"), "-o", opts, "-m", "fast", "-w", "restart"]),
    destroy: () => {
      try {
        stop("immediate");
      } catch {
        // Already stopped.
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
