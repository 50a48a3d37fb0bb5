// The embedded Chroma server's own process: it runs the chromadb package's bundled server (its CLI,
// in this process) and, on a worker thread, a watchdog that stops the server when nobody can use it
// any more. A ledgerloop process that exits stops the server itself (chroma-server.ts); one killed
// with SIGKILL cannot, and its server used to run until a later process in that workspace adopted
// it, or forever when none came (the workspace deleted, a one-off run). The watchdog stops it:
//   - within seconds when its data directory is gone (the workspace or its state was deleted);
//   - when no registered client process (<stateDir>/chroma.clients/<pid>) has been alive for
//     LEDGERLOOP_CHROMA_IDLE_SECONDS (default 300), so a `resume` soon after a crash still adopts it.
// It decides under the same lock (chroma.lock) a starting client takes, so a client never adopts a
// server that is about to stop: once the lock is taken, a client finds no record and starts anew.
//
// Plain JavaScript, not TypeScript: it is run by path (`node chroma-host.mjs <chroma cli> run …`)
// from the sources and from dist alike, and the server's command line keeps `run --path <dataDir>`,
// which is how ledgerloop recognises its servers.
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { Worker, isMainThread, workerData } from "node:worker_threads";

if (isMainThread) {
  const [cli, ...args] = process.argv.slice(2);
  const at = args.indexOf("--path");
  const dataDir = at >= 0 ? args[at + 1] : undefined;
  if (!cli || !dataDir) {
    console.error("usage: chroma-host.mjs <chromadb cli.mjs> run --path <dataDir> [chroma options]");
    process.exit(2);
  }
  const idleSeconds = Number(process.env.LEDGERLOOP_CHROMA_IDLE_SECONDS ?? 300);
  if (Number.isFinite(idleSeconds) && idleSeconds > 0) {
    const watchdog = new Worker(new URL(import.meta.url), {
      workerData: { dataDir: path.resolve(dataDir), idleMs: idleSeconds * 1000, serverPid: process.pid },
    });
    // The watchdog never keeps the process alive on its own, and a failure of it never stops the server.
    watchdog.unref();
    watchdog.on("error", (err) => fs.writeSync(2, `ledgerloop: the Chroma server's watchdog failed: ${err?.message ?? err}\n`));
  }
  // The CLI reads its arguments from process.argv[2…]: it sees `run --path …` as if run directly.
  process.argv.splice(2, 1);
  await import(pathToFileURL(cli).href);
} else {
  const { dataDir, idleMs, serverPid } = workerData;
  const stateDir = path.dirname(dataDir);
  const clientsDir = path.join(stateDir, "chroma.clients");
  const recordFile = path.join(stateDir, "chroma.server.json");
  const lockFile = path.join(stateDir, "chroma.lock");
  let lastClientSeen = Date.now();

  const alive = (pid) => {
    try {
      process.kill(pid, 0);
    } catch (err) {
      return err.code === "EPERM";
    }
    try {
      return !/^\d+ \(.*\) Z /.test(fs.readFileSync(`/proc/${pid}/stat`, "utf8"));
    } catch {
      return true;
    }
  };
  const anyClient = () => {
    let names = [];
    try {
      names = fs.readdirSync(clientsDir);
    } catch {
      return false;
    }
    return names.some((n) => /^\d+$/.test(n) && Number(n) !== serverPid && alive(Number(n)));
  };
  const stop = (why) => {
    // Written straight to stderr (the server's log): a worker's console goes through the main
    // thread, which the server's native CLI never gives back.
    try {
      fs.writeSync(2, `ledgerloop: stopping the embedded Chroma server on ${dataDir}: ${why}\n`);
    } catch {
      // no log to write to: stop all the same
    }
    process.kill(serverPid, "SIGTERM");
  };
  /** Takes chroma.lock when it is free (or its holder is dead); null when a live process holds it. */
  const tryLock = () => {
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        const fd = fs.openSync(lockFile, "wx");
        fs.writeSync(fd, String(serverPid));
        fs.closeSync(fd);
        return () => fs.rmSync(lockFile, { force: true });
      } catch (err) {
        if (err.code !== "EEXIST") return null;
        let holder = 0;
        try {
          holder = Number(fs.readFileSync(lockFile, "utf8").trim() || "0");
        } catch {
          continue;
        }
        if (!holder || alive(holder)) return null;
        fs.rmSync(lockFile, { force: true });
      }
    }
    return null;
  };

  const check = () => {
    if (!fs.existsSync(dataDir)) return stop("its data directory is gone");
    if (anyClient()) {
      lastClientSeen = Date.now();
      return;
    }
    if (Date.now() - lastClientSeen < idleMs) return;
    const unlock = tryLock();
    if (!unlock) return; // a client is starting or adopting: look again next time
    let idle = false;
    try {
      if (anyClient()) {
        lastClientSeen = Date.now();
        return;
      }
      // Forget the record first (when it names this server): a client that takes the lock next
      // finds nothing to adopt, stops whatever still runs on the data directory, and starts anew.
      try {
        const record = JSON.parse(fs.readFileSync(recordFile, "utf8"));
        if (record.pid === serverPid) fs.rmSync(recordFile, { force: true });
      } catch {
        // no record, or not ours
      }
      idle = true;
    } finally {
      unlock();
    }
    if (idle) stop(`no ledgerloop process has used it for ${Math.round(idleMs / 1000)} s`);
  };
  // A look costs a directory read and a signal 0 per client: every few seconds is cheap. A failed
  // look (a permission error, say) leaves the server running and is tried again.
  setInterval(
    () => {
      try {
        check();
      } catch {
        // looked at again next time
      }
    },
    Math.min(5_000, Math.max(200, idleMs / 4)),
  );
}
