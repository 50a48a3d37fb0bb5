import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromaProcessesOn } from "../../src/retrieval/chroma-server.js";

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const DEMO_WORKSPACE = path.join(REPO, "examples/demo/workspace");
export const DEMO_TRAJECTORY = path.join(REPO, "examples/demo/trajectory.json");

const made: string[] = [];

/** A fresh temp directory (realpath'd), optionally a copy of `from`; removed by `cleanupTemp`. */
export function tempWorkspace(from?: string, files: Record<string, string> = {}): string {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "ll-test-")));
  made.push(dir);
  if (from) fs.cpSync(from, dir, { recursive: true });
  for (const [rel, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    fs.writeFileSync(path.join(dir, rel), content);
  }
  return dir;
}

export function cleanupTemp(): void {
  for (const d of made.splice(0)) {
    stopLeftChroma(d);
    fs.rmSync(d, { recursive: true, force: true });
  }
}

/**
 * A run killed with SIGKILL leaves its workspace's Chroma server for the next process to adopt (by
 * design); in a test nothing comes next, so the server is stopped here, before its directory goes.
 * Only a live Chroma server on that data directory is signalled (chroma-server.ts's own check: never a reused pid).
 */
function stopLeftChroma(dir: string, depth = 0): void {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries) {
    const p = path.join(dir, e.name);
    if (e.name === "chroma.server.json" && e.isFile()) {
      let dataDir: string;
      try {
        dataDir = (JSON.parse(fs.readFileSync(p, "utf8")) as { dataDir: string }).dataDir;
      } catch {
        continue; // no record to read
      }
      for (const pid of chromaProcessesOn(dataDir)) {
        try {
          process.kill(pid, "SIGTERM");
        } catch {
          // gone meanwhile
        }
      }
    } else if (e.isDirectory() && depth < 3 && e.name !== "node_modules" && e.name !== "chroma") stopLeftChroma(p, depth + 1);
  }
}

/** Every file under dir (except .ledgerloop) with its content, for comparing workspaces. */
export function readTree(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string) => {
    for (const e of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (r === ".ledgerloop") continue;
      if (e.isDirectory()) walk(r);
      else out[r] = fs.readFileSync(path.join(dir, r), "utf8");
    }
  };
  walk("");
  return out;
}
