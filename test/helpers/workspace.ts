import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

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
  for (const d of made.splice(0)) fs.rmSync(d, { recursive: true, force: true });
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
