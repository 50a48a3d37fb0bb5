import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { detectIsolation, findProgram, forgetIsolation, isolationProbeCount } from "../../src/sandbox/detect.js";
import { createSandbox } from "../../src/sandbox/executor.js";
import { ensureBuilt } from "../helpers/build.js";
import { cleanupTemp, REPO, tempWorkspace } from "../helpers/workspace.js";

// The isolation probe result is kept per machine; these tests put the cache in a temporary
// directory and a `bwrap` of their own first on PATH (a wrapper around the real one that logs each
// call, or one that fails), which is what changes on a real machine when bubblewrap is upgraded or
// user namespaces are switched off.
const REAL_BWRAP = findProgram("bwrap");
const oldPath = process.env.PATH;
let cacheDir = "";
let binDir = "";
let log = "";

function wrapper(body: string): string {
  const p = path.join(binDir, "bwrap");
  fs.writeFileSync(p, `#!/bin/sh\necho "$*" >> '${log}'\n${body}\n`, { mode: 0o755 });
  return p;
}

const cacheFile = () => path.join(cacheDir, "ledgerloop", `isolation-${process.getuid?.() ?? 0}.json`);
const versionCalls = () =>
  fs.existsSync(log)
    ? fs
        .readFileSync(log, "utf8")
        .split("\n")
        .filter((l) => l === "--version").length
    : 0;
const detect = () => {
  forgetIsolation(); // as a new process starts
  return detectIsolation({ cacheDir: path.join(cacheDir, "ledgerloop") });
};

beforeEach(() => {
  const root = tempWorkspace();
  cacheDir = path.join(root, "cache");
  binDir = path.join(root, "bin");
  log = path.join(root, "bwrap-calls.log");
  fs.mkdirSync(binDir);
  process.env.PATH = `${binDir}:${oldPath}`;
});
afterEach(() => {
  process.env.PATH = oldPath;
  forgetIsolation();
});
afterAll(() => cleanupTemp());

describe.skipIf(!REAL_BWRAP)("isolation probe cache (needs bubblewrap)", () => {
  it("probes once per machine: the next detection reads the cache and starts no probe", () => {
    wrapper(`exec '${REAL_BWRAP}' "$@"`);
    const n = isolationProbeCount();
    const first = detect();
    expect(first.source).toBe("probe");
    expect(first.level).toBe("bwrap");
    expect(isolationProbeCount()).toBe(n + 1);
    expect(versionCalls()).toBe(1);
    const second = detect();
    expect(second.source).toBe("cache");
    expect(second.levels).toEqual(first.levels);
    expect(second.bwrapVersion).toBe(first.bwrapVersion);
    expect(isolationProbeCount()).toBe(n + 1);
    expect(versionCalls()).toBe(1);
  });

  it("probes again when a key fact changes (the bwrap binary) and when asked to refresh", () => {
    const bin = wrapper(`exec '${REAL_BWRAP}' "$@"`);
    detect();
    const n = isolationProbeCount();
    const later = new Date(Date.now() + 60_000);
    fs.utimesSync(bin, later, later);
    expect(detect().source).toBe("probe");
    expect(isolationProbeCount()).toBe(n + 1);
    expect(detect().source).toBe("cache");
    forgetIsolation();
    expect(detectIsolation({ refresh: true, cacheDir: path.join(cacheDir, "ledgerloop") }).source).toBe("probe");
    expect(isolationProbeCount()).toBe(n + 2);
  });

  it("ignores a corrupt or foreign cache file and replaces it; an unwritable cache only costs a probe", () => {
    wrapper(`exec '${REAL_BWRAP}' "$@"`);
    detect();
    for (const junk of ["{not json", JSON.stringify({ version: 1, key: "x", probed: {} }), "null"]) {
      fs.writeFileSync(cacheFile(), junk);
      const n = isolationProbeCount();
      const r = detect();
      expect(r.source).toBe("probe");
      expect(r.level).toBe("bwrap");
      expect(isolationProbeCount()).toBe(n + 1);
      expect(JSON.parse(fs.readFileSync(cacheFile(), "utf8")).probed.levels.bwrap.ok).toBe(true);
    }
    // A well-formed entry whose key matches but whose levels are malformed is refused too.
    const good = JSON.parse(fs.readFileSync(cacheFile(), "utf8"));
    fs.writeFileSync(cacheFile(), JSON.stringify({ ...good, probed: { ...good.probed, levels: { bwrap: { ok: true } } } }));
    expect(detect().source).toBe("probe");
    // The cache directory is a file: detection still works, every time by probing.
    const blocked = path.join(cacheDir, "blocked");
    fs.writeFileSync(blocked, "");
    forgetIsolation();
    const r = detectIsolation({ cacheDir: blocked });
    expect(r.level).toBe("bwrap");
    expect(r.source).toBe("probe");
  });

  it("never keeps a failure: a machine where bwrap failed its probe probes again next time", () => {
    wrapper(`echo "bwrap: No permissions to create new namespace" >&2; exit 1`);
    const n = isolationProbeCount();
    expect(detect().level).not.toBe("bwrap");
    expect(detect().source).toBe("probe");
    expect(isolationProbeCount()).toBe(n + 2);
  });

  it("a cached bwrap that fails now runs no command, drops the entry, probes again and says so", async () => {
    // The cache says bwrap works (as it did when recorded); bwrap now refuses to build a sandbox.
    wrapper(`echo "bwrap: No permissions to create new namespace" >&2; exit 1`);
    detect();
    const entry = JSON.parse(fs.readFileSync(cacheFile(), "utf8"));
    entry.probed.levels.bwrap = { ok: true, detail: "works (recorded earlier)" };
    fs.writeFileSync(cacheFile(), JSON.stringify(entry));
    forgetIsolation();
    const ws = tempWorkspace();
    const sb = createSandbox({ workspace: ws, report: detectIsolation({ cacheDir: path.join(cacheDir, "ledgerloop") }) });
    expect(sb.report?.source).toBe("cache");
    expect(sb.level).toBe("bwrap");
    const n = isolationProbeCount();
    await expect(sb.exec({ command: "touch ran", cwd: ws, timeoutMs: 10_000 })).rejects.toThrow(
      /bwrap was recorded as working on this machine .* but fails now: bwrap: No permissions.*strongest level that works is "unshare"/,
    );
    expect(fs.existsSync(path.join(ws, "ran"))).toBe(false);
    expect(isolationProbeCount()).toBe(n + 1);
    await expect(sb.verified()).rejects.toThrow(/fails now/);
    // The next process does not trust the entry: it probes.
    expect(detect().source).toBe("probe");
  });

  it("the CLI's second process takes the level from the cache (built bin, `exec`)", () => {
    ensureBuilt();
    wrapper(`exec '${REAL_BWRAP}' "$@"`);
    const ws = tempWorkspace();
    const env = { ...process.env, PATH: `${binDir}:${oldPath}`, XDG_CACHE_HOME: cacheDir };
    for (let i = 0; i < 2; i++) {
      const r = spawnSync(process.execPath, [path.join(REPO, "bin/ledgerloop.js"), "exec", "-w", ws, "--json", "echo hi"], {
        encoding: "utf8",
        env,
        timeout: 60_000,
      });
      expect(r.status, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ exitCode: 0, stdout: "hi\n" });
    }
    // One probe round (bwrap --version is its first call) across both processes.
    expect(versionCalls()).toBe(1);
    expect(fs.existsSync(cacheFile())).toBe(true);
  });
});
