/**
 * Issue 32, finding 5: `apply` through a symlinked directory. After a normal run made
 * `cache -> <host dir>`, a dry run replaced `cache` by a real directory holding authorized_keys;
 * apply created before it deleted and checked only the last path component, so the file was
 * written into the host directory. Run through the CLI, as a user would.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyDryRun, dryRunDiff, makeDryCopy, saveDryRun, type DryRun } from "../../src/dry-run/dry-run.js";
import { cli } from "../helpers/cli.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

let dryRoot: string;
let hostDir: string;
const KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAttackerKey attacker@evil";

beforeAll(() => {
  dryRoot = tempWorkspace();
  hostDir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "ll-host-ssh-")));
  fs.writeFileSync(path.join(hostDir, "known_hosts"), "host\n");
});
afterAll(() => {
  cleanupTemp();
  fs.rmSync(hostDir, { recursive: true, force: true });
});

const call = (name: string, args: Record<string, unknown>) => ({ tool_calls: [{ name, args }] });

describe("apply never writes through a symlinked directory", () => {
  it("a dry run that replaced `cache -> <host dir>` by a real directory: the key lands in the workspace, not the host", () => {
    const ws = tempWorkspace(undefined, { "a.txt": "a\n" });
    fs.symlinkSync(hostDir, path.join(ws, "cache"));
    const script = path.join(dryRoot, "replace-cache.json");
    fs.writeFileSync(
      script,
      JSON.stringify({
        decide: [
          // Through python, as the review did: the policy refuses `rm` of a link that leads out.
          call("run_command", {
            command: `python3 -c "import os; os.unlink('cache'); os.mkdir('cache'); open('cache/authorized_keys', 'w').write('${KEY}\\n')"`,
          }),
          call("finish", { summary: "done" }),
        ],
      }),
    );
    const env = { LEDGERLOOP_DRY_RUNS: dryRoot };
    const run = cli(
      ["run", "replace the cache", "-w", ws, "--model", `scripted:${script}`, "--thread", "K", "--dry-run", "--approve", "auto", "--json", "-q"],
      { env, timeoutMs: 120_000 },
    );
    expect(run.code, run.stderr).toBe(0);
    const out = JSON.parse(run.stdout) as { dryRun: { changes: { created: string[]; deleted: string[] } } };
    expect(out.dryRun.changes, run.stdout).toMatchObject({ created: ["cache/authorized_keys"], deleted: ["cache"] });
    // The real workspace still has its link until apply.
    expect(fs.lstatSync(path.join(ws, "cache")).isSymbolicLink()).toBe(true);

    const applied = cli(["apply", "K", "-w", ws, "--json"], { env });
    expect(applied.code, applied.stderr).toBe(0);
    expect(fs.readdirSync(hostDir)).toEqual(["known_hosts"]);
    expect(fs.lstatSync(path.join(ws, "cache")).isDirectory()).toBe(true);
    expect(fs.readFileSync(path.join(ws, "cache/authorized_keys"), "utf8")).toBe(`${KEY}\n`);
  }, 240_000);

  it("a symlink the plan does not delete is refused before anything is written", () => {
    const ws = tempWorkspace(undefined, { "a.txt": "a\n" });
    fs.mkdirSync(path.join(ws, "cache"));
    const saved = process.env.LEDGERLOOP_DRY_RUNS;
    process.env.LEDGERLOOP_DRY_RUNS = dryRoot;
    try {
      const made = makeDryCopy(ws, "L");
      const run: DryRun = { thread: "L", workspace: ws, copy: made.copy, createdAt: new Date().toISOString(), copyMs: made.copyMs, manifest: made.manifest };
      saveDryRun(run);
      fs.writeFileSync(path.join(made.copy, "cache/authorized_keys"), KEY);
      fs.writeFileSync(path.join(made.copy, "b.txt"), "b\n");
      // Meanwhile the real workspace's directory became a link to the host directory.
      fs.rmdirSync(path.join(ws, "cache"));
      fs.symlinkSync(hostDir, path.join(ws, "cache"));
      expect(() => applyDryRun(run)).toThrow(/cache is a symlink in .* but a directory in the dry run's copy/);
      expect(fs.readdirSync(hostDir)).toEqual(["known_hosts"]);
      expect(fs.existsSync(path.join(ws, "b.txt"))).toBe(false);
    } finally {
      if (saved === undefined) delete process.env.LEDGERLOOP_DRY_RUNS;
      else process.env.LEDGERLOOP_DRY_RUNS = saved;
    }
  });

  it("the diff shows a link the copy made as a link, not the host file it leads to", () => {
    const ws = tempWorkspace(undefined, { "a.txt": "a\n" });
    const saved = process.env.LEDGERLOOP_DRY_RUNS;
    process.env.LEDGERLOOP_DRY_RUNS = dryRoot;
    try {
      const made = makeDryCopy(ws, "M");
      fs.writeFileSync(path.join(hostDir, "secret"), "HOST-SECRET-31\n");
      fs.symlinkSync(path.join(hostDir, "secret"), path.join(made.copy, "notes"));
      const run: DryRun = { thread: "M", workspace: ws, copy: made.copy, createdAt: new Date().toISOString(), copyMs: made.copyMs, manifest: made.manifest };
      const diff = dryRunDiff(run);
      expect(diff).toContain(`+symlink to ${path.join(hostDir, "secret")}`);
      expect(diff).not.toContain("HOST-SECRET-31");
    } finally {
      if (saved === undefined) delete process.env.LEDGERLOOP_DRY_RUNS;
      else process.env.LEDGERLOOP_DRY_RUNS = saved;
      fs.rmSync(path.join(hostDir, "secret"), { force: true });
    }
  });
});
