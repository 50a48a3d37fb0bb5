import fs from "node:fs";
import path from "node:path";
import { spawn, type ChildProcess } from "node:child_process";
import { afterAll, describe, expect, it } from "vitest";
import { cli, cliSpawn, jsonLines } from "../helpers/cli.js";
import { REPO, cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

afterAll(() => cleanupTemp());

/** Resolves when the child's stderr contains `text`; rejects after `ms` with what it printed. */
function waitForStderr(child: ChildProcess, text: string, ms: number): Promise<void> {
  let seen = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "${text}" within ${ms} ms; stderr:\n${seen.slice(-2000)}`)), ms);
    child.stderr!.setEncoding("utf8").on("data", (d: string) => {
      seen += d;
      if (seen.includes(text)) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
}

function exited(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((resolve) => child.on("close", (code, signal) => resolve({ code, signal })));
}

/** Kills a child that is still running when a test gives up on it. */
function reap(child: ChildProcess): void {
  if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
}

describe("a stop signal is answered while the runner works on huge input", () => {
  it("stops a run that just wrote a 1 MB one-line file, and the run resumes to the end", async () => {
    const ws = tempWorkspace(undefined, { "a.txt": "hello\n" });
    const big = "A".repeat(1_000_000);
    const traj = path.join(tempWorkspace(), "trajectory.json");
    fs.writeFileSync(
      traj,
      JSON.stringify({
        decide: [
          { content: "write", tool_calls: [{ name: "write_file", args: { path: "big.txt", content: big } }] },
          { content: "wait", tool_calls: [{ name: "run_command", args: { command: "sleep 60" } }] },
          { content: "read", tool_calls: [{ name: "read_file", args: { path: "a.txt" } }] },
          { content: "done", tool_calls: [{ name: "finish", args: { summary: "done" } }] },
        ],
      }),
    );
    try {
      const child = cliSpawn(["run", "write a big file", "-w", ws, "--model", `scripted:${traj}`, "--thread", "T"]);
      try {
        const done = exited(child);
        // Step 2's prompt counts the 1 MB call: the old quadratic count never got here (minutes of CPU).
        await waitForStderr(child, "decide    run_command", 120_000);
        const sent = performance.now();
        child.kill("SIGTERM");
        const { code } = await done;
        const waited = performance.now() - sent;
        // Generous for a loaded machine: the point is that it stopped, not that it was fast.
        expect(waited).toBeLessThan(10_000);
        expect([1, 143]).toContain(code);
      } finally {
        reap(child);
      }
      // It really stopped mid-run: the finish call was never made.
      // (Feedback only: the actions hold the 1 MB content, more than spawnSync buffers.)
      const feedback = jsonLines<{ payload: { tool?: string } }>(cli(["ledger", "T", "-w", ws, "--json", "--type", "environment_feedback"]).stdout);
      expect(feedback.map((e) => e.payload.tool)).toContain("write_file");
      expect(feedback.map((e) => e.payload.tool)).not.toContain("finish");
      expect(jsonLines(cli(["threads", "-w", ws, "--json"]).stdout)[0]).not.toMatchObject({ status: "finished" });

      const resumed = cli(["resume", "T", "-w", ws, "--json", "-q"], { timeoutMs: 180_000 });
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(JSON.parse(resumed.stdout)).toMatchObject({ thread: "T", status: "finished" });
      expect(fs.readFileSync(path.join(ws, "big.txt"), "utf8")).toBe(big);
    } finally {
      fs.rmSync(traj, { force: true });
    }
  }, 400_000);
});

describe("a stop that does not finish in time", () => {
  // withStopSignal around work that never ends (standing in for a hung graceful stop).
  const script = `
    import { withStopSignal } from ${JSON.stringify(path.join(REPO, "src/cli/run.ts"))};
    setInterval(() => {}, 1000);
    await withStopSignal(() => {
      process.stderr.write("ready\\n");
      return new Promise(() => {});
    });
  `;
  const start = () => {
    const file = path.join(tempWorkspace(), "hang.mjs");
    fs.writeFileSync(file, script);
    return spawn(process.execPath, ["--import", "tsx", file], { cwd: REPO, stdio: ["ignore", "pipe", "pipe"] });
  };

  it("exits on its own shortly after the first signal", async () => {
    const child = start();
    try {
      const done = exited(child);
      let stderr = "";
      child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
      await waitForStderr(child, "ready", 60_000);
      child.kill("SIGTERM");
      const { code } = await done;
      expect(code).toBe(143);
      expect(stderr).toMatch(/stopping: the run will be resumable/);
      expect(stderr).toMatch(/stop took longer than \d+ ms: exiting now/);
    } finally {
      reap(child);
    }
  }, 90_000);

  it("exits at once on a second signal", async () => {
    const child = start();
    try {
      const done = exited(child);
      let stderr = "";
      child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
      await waitForStderr(child, "ready", 60_000);
      child.kill("SIGINT");
      await waitForStderr(child, "stopping:", 10_000);
      child.kill("SIGINT");
      const { code } = await done;
      expect(code).toBe(130);
      expect(stderr).toMatch(/second stop signal: exiting now/);
    } finally {
      reap(child);
    }
  }, 90_000);
});
