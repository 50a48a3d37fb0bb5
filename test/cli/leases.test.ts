import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { once } from "node:events";
import { Database } from "../../src/sqlite/driver.js";
import { afterAll, describe, expect, it } from "vitest";
import { cli, cliSpawn, jsonLines, type CliResult } from "../helpers/cli.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

afterAll(() => cleanupTemp());

/**
 * A workspace with a trajectory whose first step runs a command that appends to counter.log and then
 * waits until the test creates release.flag (a machine this busy can take seconds to start a CLI).
 */
function slowWorkspace(): { ws: string; model: string; release: () => void } {
  const ws = tempWorkspace(undefined, { "README.md": "x\n" });
  const traj = path.join(tempWorkspace(), "traj.json");
  fs.writeFileSync(
    traj,
    JSON.stringify({
      decide: [
        { tool_calls: [{ name: "run_command", args: { command: "echo ran >> counter.log; while [ ! -f release.flag ]; do sleep 0.1; done" } }] },
        { tool_calls: [{ name: "finish", args: { summary: "done" } }] },
      ],
    }),
  );
  return { ws, model: `scripted:${traj}`, release: () => fs.writeFileSync(path.join(ws, "release.flag"), "") };
}

/** Waits for a child started with cliSpawn and collects its output. */
async function finished(child: ReturnType<typeof cliSpawn>): Promise<CliResult> {
  let stdout = "";
  let stderr = "";
  child.stdout!.setEncoding("utf8").on("data", (d: string) => (stdout += d));
  child.stderr!.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  const [code, signal] = (await once(child, "close")) as [number | null, NodeJS.Signals | null];
  return { code, signal, stdout, stderr };
}

async function waitForFile(file: string, ms = 60_000): Promise<void> {
  const t0 = Date.now();
  while (!fs.existsSync(file)) {
    if (Date.now() - t0 > ms) throw new Error(`${file} never appeared`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const lines = (file: string) => fs.readFileSync(file, "utf8").split("\n").filter(Boolean);
const HOLDER = /\(pid \d+ on host [^,]+, heartbeat \d+ s ago\); wait for it or stop it\n$/;

describe("one writer per workspace and per run", () => {
  it("a second `run` on a busy workspace fails fast naming the holder; only the first run is recorded", async () => {
    const { ws, model, release } = slowWorkspace();
    const first = cliSpawn(["run", "one", "-w", ws, "--model", model, "--thread", "A", "--json", "-q", "--sandbox", "none"]);
    const firstDone = finished(first);
    await waitForFile(path.join(ws, "counter.log"));
    const second = cli(["run", "two", "-w", ws, "--model", model, "--thread", "B", "--json", "-q", "--sandbox", "none"]);
    expect(second.code, second.stderr).toBe(75);
    expect(second.stdout).toBe("");
    expect(second.stderr).toMatch(
      new RegExp(
        `^ledgerloop: workspace ${ws} is in use by run of A \\(pid ${first.pid} on host ${os.hostname()}, heartbeat \\d+ s ago\\); wait for it or stop it\\n$`,
      ),
    );
    release();
    const a = await firstDone;
    expect(a.code, a.stderr).toBe(0);
    expect(lines(path.join(ws, "counter.log"))).toEqual(["ran"]);
    const threads = jsonLines<{ thread: string }>(cli(["threads", "-w", ws, "--json"]).stdout);
    expect(threads.map((t) => t.thread)).toEqual(["A"]);
    expect(cli(["ledger", "B", "-w", ws, "--json"]).code).not.toBe(0);
    // The winner released its lease when it finished.
    const db = new Database(path.join(ws, ".ledgerloop/state.db"), { readonly: true });
    expect(db.prepare("SELECT COUNT(*) AS n FROM ll_leases").get()).toEqual({ n: 0 });
    db.close();
  }, 120_000);

  it("SIGTERM stops a run gracefully and gives the lease up (not merely left to a dead pid)", async () => {
    const { ws, model } = slowWorkspace();
    const child = cliSpawn(["run", "one", "-w", ws, "--model", model, "--thread", "A", "--json", "-q", "--sandbox", "none"]);
    const done = finished(child);
    await waitForFile(path.join(ws, "counter.log"));
    child.kill("SIGTERM");
    const r = await done;
    expect(r.code, r.stderr).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: "interrupted", error: "interrupted by signal" });
    const db = new Database(path.join(ws, ".ledgerloop/state.db"), { readonly: true });
    expect(db.prepare("SELECT COUNT(*) AS n FROM ll_leases").get()).toEqual({ n: 0 });
    db.close();
  }, 120_000);

  it("two `resume`s of one run started together: exactly one runs the step, its command runs once", async () => {
    const { ws, model, release } = slowWorkspace();
    const killed = cli(["run", "one", "-w", ws, "--model", model, "--thread", "T", "--json", "-q", "--sandbox", "none"], {
      env: { LEDGERLOOP_FAILPOINT: "ledger-append:1" },
    });
    expect(killed.signal).toBe("SIGKILL");
    // The dead runner's lease rows are still there: resume must take them over at once.
    const db = new Database(path.join(ws, ".ledgerloop/state.db"), { readonly: true });
    expect((db.prepare("SELECT COUNT(*) AS n FROM ll_leases").get() as { n: number }).n).toBe(2);
    db.close();
    const args = ["resume", "T", "-w", ws, "--json", "-q"];
    const both = [finished(cliSpawn(args)), finished(cliSpawn(args))];
    // The loser exits on its own while the winner waits in its command; release the winner then
    // (or after a generous wait, so that two winners fail the test instead of hanging it).
    await Promise.race([...both, new Promise((r) => setTimeout(r, 90_000))]);
    release();
    const results = (await Promise.all(both)).sort((x, y) => (x.code ?? 0) - (y.code ?? 0));
    expect(
      results.map((r) => r.code),
      results.map((r) => r.stderr).join("\n"),
    ).toEqual([0, 75]);
    expect(JSON.parse(results[0]!.stdout)).toMatchObject({ thread: "T", status: "finished" });
    expect(results[1]!.stderr).toMatch(/^ledgerloop: run T is in use by resume of T /);
    expect(results[1]!.stderr).toMatch(HOLDER);
    expect(lines(path.join(ws, "counter.log"))).toEqual(["ran"]);
    const events = jsonLines<{ type: string; payload: { tool?: string; status?: string } }>(cli(["ledger", "T", "-w", ws, "--json"]).stdout);
    expect(events.filter((e) => e.type === "environment_feedback" && e.payload.tool === "run_command")).toHaveLength(1);
    expect(events.filter((e) => e.type === "run_status" && e.payload.status === "finished")).toHaveLength(1);
  }, 180_000);

  it("a lease of another machine blocks `resume` until it expires; then it is taken over", () => {
    const ws = tempWorkspace(undefined, { "README.md": "x\n" });
    const traj = path.join(tempWorkspace(), "traj.json");
    fs.writeFileSync(traj, JSON.stringify({ decide: [{ tool_calls: [{ name: "finish", args: { summary: "done" } }] }] }));
    const killed = cli(["run", "one", "-w", ws, "--model", `scripted:${traj}`, "--thread", "T", "-q"], {
      env: { LEDGERLOOP_FAILPOINT: "ledger-append:1" },
    });
    expect(killed.signal).toBe("SIGKILL");
    const plant = (expiresIn: number) => {
      const db = new Database(path.join(ws, ".ledgerloop/state.db"));
      const t = Date.now();
      db.prepare(
        `INSERT OR REPLACE INTO ll_leases (scope, token, host, boot_id, pid, proc_start, command, thread, acquired_at, heartbeat_at, expires_at)
         VALUES (?, 'foreign', 'build-box-7', 'other-boot', 4242, NULL, 'resume', 'T', ?, ?, ?)`,
      ).run(`workspace:${ws}`, t - 60_000, t + expiresIn - 30_000, t + expiresIn);
      db.close();
    };
    plant(120_000);
    const refused = cli(["resume", "T", "-w", ws, "--json", "-q"]);
    expect(refused.code).toBe(75);
    expect(refused.stderr).toMatch(
      new RegExp(
        `^ledgerloop: workspace ${ws} is in use by resume of T \\(pid 4242 on host build-box-7, heartbeat \\d+ s ago\\); wait for it, or until its lease expires in \\d+ s or stop it\\n$`,
      ),
    );
    plant(-1_000);
    const resumed = cli(["resume", "T", "-w", ws, "--json", "-q"]);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ status: "finished" });
  }, 120_000);
});
