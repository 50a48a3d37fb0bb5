import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { Client } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SqliteLedger } from "../../src/ledger/sqlite-ledger.js";
import { openStateDb } from "../../src/ledger/state-db.js";
import type { LedgerEvent } from "../../src/state.js";
import { cliAsync, jsonLines } from "../helpers/cli.js";
import { DEMO_TRAJECTORY, DEMO_WORKSPACE, REPO, cleanupTemp, readTree, tempWorkspace } from "../helpers/workspace.js";

// The real LangGraph dev server (what Studio talks to), started as a user does, driven with the
// real SDK. It runs in a temporary project (its langgraph.json names our graph by absolute path),
// so the .langgraph_api/ it writes and the .gitignore it edits are not the repository's.

const LANGGRAPH_CLI = path.join(REPO, "node_modules/@langchain/langgraph-cli/dist/cli/cli.mjs");
const GOAL = "Add /health to both services and the dashboard";

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

/** Pids of a process group, from /proc. */
function groupPids(pgid: number): number[] {
  const out: number[] = [];
  for (const n of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(n)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${n}/stat`, "utf8");
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(f[2]) === pgid && f[0] !== "Z") out.push(Number(n));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** Live processes whose command line mentions `text` (a workspace's Chroma data directory). */
function processesMentioning(text: string): Array<{ pid: number; cmd: string }> {
  const out: Array<{ pid: number; cmd: string }> = [];
  for (const n of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(n) || Number(n) === process.pid) continue;
    try {
      const cmd = fs.readFileSync(`/proc/${n}/cmdline`, "utf8").split("\0").join(" ");
      const state = fs.readFileSync(`/proc/${n}/stat`, "utf8");
      if (cmd.includes(text) && !/\) Z /.test(state)) out.push({ pid: Number(n), cmd });
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined> | T | undefined): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

const timings: Array<[string, number]> = [];
async function timed<T>(step: string, fn: () => Promise<T>): Promise<T> {
  const t = performance.now();
  try {
    return await fn();
  } finally {
    timings.push([step, Math.round(performance.now() - t)]);
  }
}

let server: ChildProcess | undefined;
let serverLog = "";
let url = "";
let project = "";

beforeAll(async () => {
  project = tempWorkspace(undefined, {
    "langgraph.json": JSON.stringify({ node_version: "20", graphs: { "coding-agent": `${path.join(REPO, "src/agent/graph.ts")}:graph` } }),
  });
  // The server resolves @langchain/langgraph from the project, as it would in a user's project.
  fs.symlinkSync(path.join(REPO, "node_modules"), path.join(project, "node_modules"));
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  await timed("start the dev server (until GET /ok answers)", async () => {
    // Its own process group, as in a terminal: stopping it is a signal to the group (Ctrl-C).
    server = spawn(process.execPath, [LANGGRAPH_CLI, "dev", "--port", String(port), "--host", "127.0.0.1", "--no-browser"], {
      cwd: project,
      detached: true,
      env: { ...process.env, LANGSMITH_TRACING: "false", BROWSER: "none", LEDGERLOOP_MODEL: undefined },
      stdio: ["ignore", "pipe", "pipe"],
    });
    server.stdout!.setEncoding("utf8").on("data", (d: string) => (serverLog = (serverLog + d).slice(-20_000)));
    server.stderr!.setEncoding("utf8").on("data", (d: string) => (serverLog = (serverLog + d).slice(-20_000)));
    await until("the dev server to answer", 300_000, async () => {
      if (server!.exitCode !== null) throw new Error(`the dev server exited (${server!.exitCode}):\n${serverLog}`);
      const ok = await fetch(`${url}/ok`).then(
        (r) => r.ok,
        () => false,
      );
      return ok ? true : undefined;
    });
  });
}, 330_000);

afterAll(async () => {
  // Only on a failure is anything still running here: the test stops the server itself.
  if (server?.pid && groupPids(server.pid).length) {
    console.log(`dev server log (tail):\n${serverLog.slice(-6000)}`);
    process.kill(-server.pid, "SIGKILL");
  }
  console.log(`dev server test timings (ms):\n${timings.map(([s, ms]) => `  ${String(ms).padStart(7)}  ${s}`).join("\n")}`);
  cleanupTemp();
});

const ledgerOf = async (ws: string, thread: string): Promise<LedgerEvent[]> => {
  const db = openStateDb(path.join(ws, ".ledgerloop", "state.db"), { create: false, readonly: true });
  try {
    return await new SqliteLedger(db).list(thread);
  } finally {
    db.close();
  }
};

describe("the real LangGraph dev server, driven with the SDK", () => {
  it("runs the demo, forks from an early checkpoint with its files restored, answers an approval, and leaves no process behind", async () => {
    const client = new Client({ apiUrl: url });
    const [assistant] = await client.assistants.search({ graphId: "coding-agent" });
    // Studio's forms: the goal as input, the run settings as context, how it ended as output.
    const schemas = await timed("read the graph's schemas", () => client.assistants.getSchemas(assistant!.assistant_id));
    const props = (s: unknown) => Object.keys((s as { properties?: object } | null)?.properties ?? {});
    expect(props(schemas.input_schema)).toContain("goal");
    expect(props(schemas.input_schema)).not.toContain("failureStreak");
    expect(props(schemas.context_schema)).toEqual(expect.arrayContaining(["workspace", "model", "maxSteps", "approve", "sandbox"]));
    expect((schemas.context_schema as { properties: Record<string, { description?: string }> }).properties.approve!.description).toMatch(/ask/);
    expect(props(schemas.output_schema)).toEqual(expect.arrayContaining(["status", "summary"]));

    // 1. The demo, streamed to the end.
    const ws = tempWorkspace(DEMO_WORKSPACE);
    const context = { workspace: ws, model: `scripted:${DEMO_TRAJECTORY}` };
    const thread = (await client.threads.create()).thread_id;
    const nodes: string[] = [];
    await timed("stream the scripted demo to finished", async () => {
      for await (const chunk of client.runs.stream(thread, "coding-agent", { input: { goal: GOAL }, context, streamMode: "updates" })) {
        if (chunk.event === "error") throw new Error(`run failed: ${JSON.stringify(chunk.data)}`);
        if (chunk.event === "updates") nodes.push(...Object.keys(chunk.data as object));
      }
    });
    expect(nodes).toEqual(expect.arrayContaining(["plan", "context", "decide", "act", "observe", "reflect"]));
    const done = await client.threads.getState(thread);
    expect(done.values).toMatchObject({ status: "finished", step: 10 });
    const final = readTree(ws);
    expect(final["services/orders/server.js"]).toContain("/health");

    // 2. Its history, from the server's checkpointer.
    const history = await timed("read the thread's history", () => client.threads.getHistory(thread, { limit: 500 }));
    expect(history.length).toBeGreaterThan(40);
    type V = { step: number; workspaceRev: string | null; ledgerHead: string | null };
    const early = history.findLast((s) => s.next.includes("act") && (s.values as V).step === 4)!;
    expect(early).toBeDefined();
    const earlyRev = (early.values as V).workspaceRev!;

    // 3. A fork from before step 4's action (an edit whose oldText only the files of that time have),
    //    with an edit made outside the run meanwhile.
    fs.writeFileSync(path.join(ws, "scratch.txt"), "mine\n");
    const eventsBefore = (await ledgerOf(ws, thread)).length;
    const forked = await timed("fork with updateState and run on to finished", async () => {
      await client.threads.updateState(thread, { values: { failureStreak: 0 }, checkpointId: early.checkpoint.checkpoint_id! });
      return client.runs.wait(thread, "coding-agent", { input: null, context });
    });
    expect(forked).toMatchObject({ status: "finished" });
    const events = await ledgerOf(ws, thread);
    const restore = events.filter((e): e is LedgerEvent<"time_travel"> => e.type === "time_travel" && e.seq > (events[eventsBefore - 1]?.seq ?? 0));
    expect(restore).toHaveLength(1);
    expect(restore[0]!.payload).toMatchObject({ kind: "restore", revision: earlyRev });
    // The step-4 edit applied on the restored files (on the finished run's files it would not).
    const after = events.filter((e) => e.seq > restore[0]!.seq);
    const edit = after.find((e): e is LedgerEvent<"environment_feedback"> => e.type === "environment_feedback" && e.payload.tool === "edit_file");
    expect(edit?.payload.status).toBe("ok");
    // The new branch continues from the checkpoint's ledger head, not from the abandoned run.
    expect(restore[0]!.parentId).toBe((early.values as V).ledgerHead);
    // Files: the run redid its work on the checkpoint's files; the outside edit is kept in a saved revision.
    expect(readTree(ws)).toEqual(final);
    expect(restore[0]!.payload.savedRevision).toBeTruthy();

    // 4. An approval interrupt, answered through the SDK.
    const askWs = tempWorkspace(undefined, { "README.md": "x\n" });
    const traj = path.join(tempWorkspace(), "ask.json");
    fs.writeFileSync(
      traj,
      JSON.stringify({
        decide: [
          { tool_calls: [{ name: "run_command", args: { command: "curl --version >/dev/null 2>&1; echo asked-and-ran" } }] },
          { tool_calls: [{ name: "finish", args: { summary: "done" } }] },
        ],
      }),
    );
    const askCtx = { workspace: askWs, model: `scripted:${traj}`, sandbox: "none", vectors: "off", approve: "ask" };
    const askThread = (await client.threads.create()).thread_id;
    await timed("run to the approval interrupt", () => client.runs.wait(askThread, "coding-agent", { input: { goal: "ask first" }, context: askCtx }));
    const paused = await client.threads.getState(askThread);
    const request = paused.tasks.flatMap((t) => t.interrupts ?? []).map((i) => i.value as { kind?: string; command?: string })[0];
    expect(request).toMatchObject({ kind: "approval", command: expect.stringContaining("curl") });
    // The CLI sees the pause from the ledger alone (the checkpoints are the server's). Run without
    // blocking this process: a blocked event loop misses the server closing idle keep-alive sockets.
    expect(jsonLines((await cliAsync(["threads", "-w", askWs, "--json"])).stdout)).toEqual([
      expect.objectContaining({ thread: askThread, status: "awaiting_approval", origin: "server" }),
    ]);
    const resumed = await timed("approve and run to finished", () =>
      client.runs.wait(askThread, "coding-agent", { command: { resume: { decision: "approve" } }, context: askCtx }),
    );
    expect(resumed).toMatchObject({ status: "finished" });
    const askEvents = await ledgerOf(askWs, askThread);
    expect(askEvents.find((e) => e.type === "approval")?.payload).toMatchObject({ decision: "approved", by: "user" });
    expect(String((askEvents.find((e) => e.type === "environment_feedback")?.payload as { output?: string }).output)).toContain("asked-and-ran");

    // 5. The CLI lists the server's run with the ledger's view, and says where its checkpoints are.
    const rows = jsonLines((await cliAsync(["threads", "-w", ws, "--json"])).stdout);
    expect(rows).toEqual([expect.objectContaining({ thread, status: "finished", origin: "server", checkpointsIn: "external" })]);
    const hist = await cliAsync(["history", thread, "-w", ws]);
    expect(hist.code).toBe(0);
    expect(hist.stderr).toMatch(/kept by the LangGraph server/);

    // 6. Stopped as in a terminal (Ctrl-C to its process group): nothing it started is left,
    //    the Chroma server of the demo's workspace included.
    const chromaDir = path.join(ws, ".ledgerloop", "chroma");
    expect(processesMentioning(chromaDir).length).toBe(1);
    const pgid = server!.pid!;
    const started = groupPids(pgid);
    expect(started.length).toBeGreaterThan(1);
    await timed("stop the server (SIGINT to its group) until no process is left", async () => {
      process.kill(-pgid, "SIGINT");
      await until("the dev server's processes and its Chroma server to exit", 60_000, () =>
        groupPids(pgid).length === 0 && processesMentioning(chromaDir).length === 0 ? true : undefined,
      ).catch((err: Error) => {
        throw new Error(
          `${err.message}; left: ${JSON.stringify([...groupPids(pgid), ...processesMentioning(chromaDir).map((p) => p.cmd)])}\n${serverLog.slice(-3000)}`,
        );
      });
    });
    expect(started.filter((pid) => fs.existsSync(`/proc/${pid}`) && !/\) Z /.test(fs.readFileSync(`/proc/${pid}/stat`, "utf8")))).toEqual([]);
    // It wrote its own files into the temporary project, not the repository.
    expect(fs.existsSync(path.join(project, ".langgraph_api"))).toBe(true);
  }, 900_000);
});
