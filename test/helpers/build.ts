import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { REPO } from "./workspace.js";

const STAMP = path.join(REPO, "dist", ".built");
// `npm run build` (and `npm ci`'s prepare) empties dist/ and leaves no stamp: then the compiled CLI's
// own time says how fresh the build is.
const MAIN = path.join(REPO, "dist", "src", "cli", "main.js");
const LOCK = path.join(REPO, ".build-lock");
const SOURCES = ["src", "scripts", "package.json", "tsconfig.json", "tsconfig.build.json"];

function newestSource(): number {
  let newest = 0;
  const walk = (p: string) => {
    const st = fs.statSync(p);
    if (st.isDirectory()) for (const e of fs.readdirSync(p)) walk(path.join(p, e));
    else newest = Math.max(newest, st.mtimeMs);
  };
  for (const s of SOURCES) walk(path.join(REPO, s));
  return newest;
}

function sleep(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * Makes dist/ current (`npm run build`) unless it is newer than every source file. Test files that
 * need the build may run in parallel: a lock directory lets one build while the others wait.
 */
export function ensureBuilt(): void {
  const builtAt = () => (fs.existsSync(STAMP) ? fs.statSync(STAMP).mtimeMs : fs.existsSync(MAIN) ? fs.statSync(MAIN).mtimeMs : 0);
  const fresh = () => builtAt() >= newestSource();
  if (fresh()) return;
  for (let waited = 0; ; waited += 500) {
    try {
      fs.mkdirSync(LOCK);
      break;
    } catch {
      if (waited > 240_000) throw new Error(`${LOCK} held for 4 minutes; remove it if no build is running`);
      sleep(500);
    }
  }
  try {
    if (fresh()) return;
    execFileSync("npm", ["run", "build", "--silent"], { cwd: REPO, stdio: ["ignore", "ignore", "pipe"], timeout: 300_000 });
    fs.writeFileSync(STAMP, new Date().toISOString() + "\n");
  } finally {
    fs.rmSync(LOCK, { recursive: true, force: true });
  }
}
