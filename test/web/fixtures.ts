import fs from "node:fs";
import path from "node:path";
import { handleDemo } from "../../src/cli/demo.js";
import { getLedgerEvents } from "../../src/inspect/ledger.js";
import { handleRun } from "../../src/cli/run.js";
import { tempWorkspace } from "../helpers/workspace.js";

/** What the page must show as text and never run. */
export const HOSTILE_ECHO = "<img src=x onerror=window.__pwned=1>";
export const HOSTILE_GOAL = "Echo a greeting <img src=x onerror=window.__pwned=3><script>window.__pwned=4</script>";
export const HOSTILE_DECISION = "<script>window.__pwned=2</script> keep <b>markup</b> as text";

const call = (name: string, args: Record<string, unknown>, content = "") => ({ content, tool_calls: [{ name, args }] });

/** A real run of the bundled demo (10 steps, a failing then a passing test run) in a fresh directory. */
export async function demoRun(): Promise<{ workspace: string; thread: string }> {
  const workspace = path.join(tempWorkspace(), "demo");
  const result = await handleDemo({ workspace, json: true, quiet: true });
  if (result.status !== "finished") throw new Error(`the demo did not finish: ${JSON.stringify(result)}`);
  return { workspace, thread: result.thread };
}

function writeScript(dir: string, name: string, script: unknown): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, JSON.stringify(script));
  return file;
}

/**
 * A run whose ledger is full of markup: the goal, the model's text, a command's output, a decision
 * and the finish summary. The viewer must show all of it as text.
 */
export async function hostileRun(workspace: string, scripts: string): Promise<string> {
  const file = writeScript(scripts, "hostile.json", {
    decide: [
      call("run_command", { command: `echo '${HOSTILE_ECHO}'` }, "Printing <em>markup</em> <img src=x onerror=window.__pwned=5>"),
      call("record_decision", { text: HOSTILE_DECISION }),
      call("finish", { summary: "done <img src=x onerror=window.__pwned=6>" }),
    ],
  });
  const { result } = await handleRun(HOSTILE_GOAL, { workspace, model: `scripted:${file}`, json: true, quiet: true, sandbox: "none" });
  return result.thread;
}

/**
 * A run whose scripted model reports usage (as a provider would) under a price from the workspace's
 * config file: 1,000 in + 200 out per decide at $1 / $1 / $2 per million tokens.
 */
export async function pricedRun(workspace: string, scripts: string): Promise<string> {
  const usage = { inputTokens: 1000, outputTokens: 200, cachedInputTokens: 800 };
  const file = writeScript(scripts, "priced.json", {
    plan: [{ tool_calls: [{ name: "update_plan", args: { subtasks: [{ id: "greet", description: "print a greeting", status: "in_progress" }] } }], usage }],
    decide: [
      { ...call("run_command", { command: "echo hello" }), usage },
      { ...call("finish", { summary: "greeted" }), usage },
    ],
  });
  fs.writeFileSync(
    path.join(workspace, "ledgerloop.config.json"),
    JSON.stringify({ prices: { [`scripted:${file}`]: { input: 1, cachedInput: 0.5, output: 2 } } }),
  );
  const { result } = await handleRun("Print a greeting", { workspace, model: `scripted:${file}`, json: true, quiet: true, sandbox: "none" });
  if (result.status !== "finished") throw new Error(`the priced run did not finish: ${JSON.stringify(result)}`);
  return result.thread;
}

/** A run that starts a background server, reads its output and stops it (the run's own sandbox session). */
export async function processRun(workspace: string, scripts: string): Promise<string> {
  fs.writeFileSync(
    path.join(workspace, "server.js"),
    `require("http").createServer((q, s) => s.end("up")).listen(0, "127.0.0.1", function () { console.log("listening on " + this.address().port); });\n`,
  );
  const file = writeScript(scripts, "process.json", {
    decide: [
      call("start_process", { name: "api", command: "node server.js", readyPattern: "listening on", readyTimeoutMs: 60000 }),
      call("process_output", { name: "api" }),
      call("stop_process", { name: "api" }),
      call("finish", { summary: "served" }),
    ],
  });
  // The viewer tests need a run whose server started. Starting one is tested in
  // test/sandbox/processes.test.ts; here a start that failed (seen once in CI on a loaded machine:
  // exit 1 at once, not reproduced in 48 runs under load) is printed with its reason and the run
  // made once more, so that what it prints can be looked into without failing the viewer's tests.
  for (let attempt = 1; ; attempt++) {
    const { result } = await handleRun("Serve once", { workspace, model: `scripted:${file}`, json: true, quiet: true });
    if (result.status !== "finished") throw new Error(`the process run did not finish: ${JSON.stringify(result)}`);
    const failed = (await getLedgerEvents(result.thread, { workspace, type: ["process"] })).find((e) => (e.payload as { kind: string }).kind === "failed");
    if (!failed) return result.thread;
    const why = JSON.stringify(failed.payload).slice(0, 3000);
    if (attempt === 2) throw new Error(`the background server of the process run failed to start twice; the second time: ${why}`);
    console.error(`processRun: the background server failed to start (retrying once): ${why}`);
  }
}

/** A run paused on a command the policy wants approved (nobody answers: no terminal). */
export async function pausedRun(workspace: string, scripts: string): Promise<string> {
  const file = writeScript(scripts, "paused.json", {
    decide: [call("run_command", { command: "frobnicate --now" }), call("finish", { summary: "done" })],
  });
  const { result } = await handleRun("Frobnicate the widgets", {
    workspace,
    model: `scripted:${file}`,
    json: true,
    quiet: true,
    sandbox: "none",
    approve: "ask",
  });
  if (result.status !== "awaiting_approval") throw new Error(`expected a paused run, got ${JSON.stringify(result)}`);
  return result.thread;
}

/** A run whose one command is stopped by the sandbox's wall-clock limit. */
export async function stoppedRun(workspace: string, scripts: string): Promise<string> {
  const file = writeScript(scripts, "stopped.json", {
    decide: [call("run_command", { command: "sleep 30", timeoutMs: 300 }, "This will take too long."), call("finish", { summary: "gave up" })],
  });
  const { result } = await handleRun("Wait for nothing", { workspace, model: `scripted:${file}`, json: true, quiet: true });
  if (result.status !== "finished") throw new Error(`the stopped run did not finish: ${JSON.stringify(result)}`);
  return result.thread;
}

/** A workspace for small scripted runs, and a directory outside it for their trajectories. */
export function smallWorkspace(): { workspace: string; scripts: string } {
  return { workspace: tempWorkspace(undefined, { "README.md": "# tiny\n" }), scripts: tempWorkspace() };
}

/** A scripted run that takes a while (a slow command), to watch a run that is still going. */
export function slowRun(workspace: string, scripts: string, seconds: number): Promise<unknown> {
  const file = writeScript(scripts, "slow.json", {
    decide: [
      call("run_command", { command: "echo first" }, "Warming up."),
      call("run_command", { command: `sleep ${seconds}` }, "Waiting a bit."),
      call("run_command", { command: "echo after the wait" }, "Done waiting."),
      call("finish", { summary: "slow run done" }),
    ],
  });
  return handleRun("Take your time", { workspace, model: `scripted:${file}`, json: true, quiet: true, sandbox: "none" });
}

/**
 * A real scripted run of `steps` decide steps (a file read each, then finish), for paging: long
 * enough that the page draws only its end at first.
 */
export async function longRun(workspace: string, scripts: string, steps: number): Promise<string> {
  // Two spellings of the path in turn: identical steps in a row would stop the run as no_progress.
  const decide = Array.from({ length: steps - 1 }, (_, i) =>
    call("read_file", { path: i % 2 ? "README.md" : "./README.md" }, `Reading the readme, pass ${i + 1}.`),
  );
  const file = writeScript(scripts, "long.json", { decide: [...decide, call("finish", { summary: `read it ${steps - 1} times` })] });
  const { result } = await handleRun("Read the readme again and again", {
    workspace,
    model: `scripted:${file}`,
    json: true,
    quiet: true,
    sandbox: "none",
    maxSteps: steps + 5,
  });
  if (result.status !== "finished" || result.steps !== steps) throw new Error(`expected a finished run of ${steps} steps, got ${JSON.stringify(result)}`);
  return result.thread;
}

/**
 * One run with a plan, model spend under a price, a background process and a command: everything
 * the pages show, in one scripted run. With `state` (a PostgreSQL URL) it is `run --state`.
 */
export async function fullRun(workspace: string, scripts: string, state?: string): Promise<string> {
  const usage = { inputTokens: 1000, outputTokens: 200, cachedInputTokens: 800 };
  fs.writeFileSync(
    path.join(workspace, "server.js"),
    `require("http").createServer((q, s) => s.end("up")).listen(0, "127.0.0.1", function () { console.log("listening on " + this.address().port); });\n`,
  );
  const file = writeScript(scripts, "full.json", {
    plan: [{ tool_calls: [{ name: "update_plan", args: { subtasks: [{ id: "serve", description: "serve once", status: "in_progress" }] } }], usage }],
    decide: [
      {
        ...call("start_process", { name: "api", command: "node server.js", readyPattern: "listening on", readyTimeoutMs: 60000 }, "Starting the server."),
        usage,
      },
      { ...call("stop_process", { name: "api" }), usage },
      { ...call("run_command", { command: "echo served" }), usage },
      { ...call("finish", { summary: "served once" }), usage },
    ],
  });
  fs.writeFileSync(
    path.join(workspace, "ledgerloop.config.json"),
    JSON.stringify({ prices: { [`scripted:${file}`]: { input: 1, cachedInput: 0.5, output: 2 } } }),
  );
  const { result } = await handleRun("Serve once and say so", { workspace, model: `scripted:${file}`, json: true, quiet: true, ...(state ? { state } : {}) });
  if (result.status !== "finished") throw new Error(`the full run did not finish: ${JSON.stringify(result)}`);
  return result.thread;
}
