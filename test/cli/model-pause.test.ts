import fs from "node:fs";
import path from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { cli, cliAsync, jsonLines } from "../helpers/cli.js";
import { startOpenAIStub, type OpenAIStub, type StubReply, type StubRequestBody, stubToolCall, nodeOfRequest } from "../helpers/openai-stub.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

afterAll(() => cleanupTemp());

const API_KEY = "sk-proj-Pause7Lr2Vx5Nw7Kt1Bm4Hc9Jd3";
const call = stubToolCall;
const nodeOf = nodeOfRequest;
const PLAN: StubReply = { tool_calls: [call("p1", "update_plan", { subtasks: [{ id: "notes", description: "write notes.txt", status: "in_progress" }] })] };
const DECIDE: StubReply[] = [
  { tool_calls: [call("c1", "write_file", { path: "notes.txt", content: "hello\n" })] },
  { tool_calls: [call("c2", "run_command", { command: "cat notes.txt" })] },
  { tool_calls: [call("c3", "finish", { summary: "done" })] },
];

/** A stub that plays PLAN and DECIDE, except that decide turns from `failFrom` on get `fail` (while it is set). */
async function stubWith(state: { fail?: StubReply; failFrom: number; decide: number }): Promise<OpenAIStub> {
  return startOpenAIStub({
    respond: (body) => {
      const node = nodeOf(body);
      if (node === "plan") return PLAN;
      if (node === "decide") {
        if (state.fail && state.decide >= state.failFrom) return state.fail;
        return DECIDE[state.decide++];
      }
      return { content: "A lesson." };
    },
  });
}

let stubs: OpenAIStub[] = [];
afterEach(async () => {
  await Promise.all(stubs.map((s) => s.close()));
  stubs = [];
});
const env = (url: string, extra: Record<string, string> = {}) => ({
  OPENAI_BASE_URL: url,
  OPENAI_API_KEY: API_KEY,
  LEDGERLOOP_MODEL_RETRY_BASE_MS: "10",
  ...extra,
});
const run = (ws: string, thread: string, url: string, extra: Record<string, string> = {}) =>
  cliAsync(["run", "Write notes.txt", "-w", ws, "--model", "openai:stub-model", "--thread", thread, "--json", "-q", "--sandbox", "none"], {
    env: env(url, extra),
    timeoutMs: 90_000,
  });

describe("model faults pause a run; resume goes on without re-running a tool", () => {
  it("503 until the retries run out stops as model_unavailable (exit 5); resume against a healthy server finishes, each tool once", async () => {
    const ws = tempWorkspace(undefined, { "README.md": "# notes\n" });
    const state = { fail: { status: 503, message: "overloaded" } as StubReply | undefined, failFrom: 1, decide: 0 };
    const stub = await stubWith(state);
    stubs.push(stub);
    const r = await run(ws, "P", stub.url, { LEDGERLOOP_MODEL_RETRIES: "2" });
    expect(r.code, r.stderr).toBe(5);
    const out = JSON.parse(r.stdout) as { status: string; steps: number; error: string };
    expect(out).toMatchObject({ status: "model_unavailable", steps: 1 });
    expect(out.error).toMatch(/unavailable \(HTTP 503\) \(3 attempts\)/);
    // One decide that worked, then three refused attempts of the second.
    expect(stub.requests.filter((b) => nodeOf(b) === "decide")).toHaveLength(4);
    expect(fs.readFileSync(path.join(ws, "notes.txt"), "utf8")).toBe("hello\n");

    state.fail = undefined;
    const resumed = await cliAsync(["resume", "P", "-w", ws, "--json", "-q"], { env: env(stub.url), timeoutMs: 90_000 });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ status: "finished", steps: 3 });
    const events = jsonLines<{ type: string; payload: { tool?: string } }>(cli(["ledger", "P", "-w", ws, "--json"]).stdout);
    expect(events.filter((e) => e.type === "environment_feedback").map((e) => e.payload.tool)).toEqual(["write_file", "run_command", "finish"]);
  }, 180_000);

  it("--max-tokens pauses the run as budget_exhausted (exit 3) before the call that would pass it; resume with a higher limit finishes, each tool once", async () => {
    const ws = tempWorkspace(undefined, { "README.md": "# notes\n" });
    const state = { failFrom: 99, decide: 0 };
    const stub = await stubWith(state);
    stubs.push(stub);
    // Every stub answer reports 11 + 7 tokens: plan (18) and one decide (36) fit under 30 only until the second decide.
    const r = await cliAsync(
      ["run", "Write notes.txt", "-w", ws, "--model", "openai:stub-model", "--thread", "B", "--json", "-q", "--sandbox", "none", "--max-tokens", "30"],
      { env: env(stub.url), timeoutMs: 90_000 },
    );
    expect(r.code, r.stderr).toBe(3);
    const out = JSON.parse(r.stdout) as { status: string; steps: number; error: string };
    expect(out).toMatchObject({ status: "budget_exhausted", steps: 1 });
    expect(out.error).toMatch(/used 36 tokens of its 30 limit \(--max-tokens\)/);
    expect(stub.requests.filter((b) => nodeOf(b) === "decide")).toHaveLength(1);
    const threads = jsonLines<{ thread: string; status: string }>(cli(["threads", "-w", ws, "--json"]).stdout);
    expect(threads).toEqual([expect.objectContaining({ thread: "B", status: "budget_exhausted" })]);

    const resumed = await cliAsync(["resume", "B", "-w", ws, "--json", "-q", "--max-tokens", "100000"], { env: env(stub.url), timeoutMs: 90_000 });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ status: "finished" });
    const events = jsonLines<{ type: string; payload: { tool?: string } }>(cli(["ledger", "B", "-w", ws, "--json"]).stdout);
    expect(events.filter((e) => e.type === "environment_feedback").map((e) => e.payload.tool)).toEqual(["write_file", "run_command", "finish"]);
  }, 180_000);

  it("--max-cost pauses at the right step; every call records its step, subtask and cost; report and progress lines show them", async () => {
    // $1,000 per million tokens in and out: every stub answer (11 in + 7 out) costs $0.018.
    const ws = tempWorkspace(undefined, {
      "README.md": "# notes\n",
      "ledgerloop.config.json": JSON.stringify({ prices: { "stub-model": { input: 1000, output: 1000 } } }),
    });
    const stub = await stubWith({ failFrom: 99, decide: 0 });
    stubs.push(stub);
    // plan $0.018, decide 1 → $0.036, decide 2 → $0.054: the third decide would start past $0.05.
    const r = await cliAsync(
      ["run", "Write notes.txt", "-w", ws, "--model", "openai:stub-model", "--thread", "C", "--json", "--sandbox", "none", "--max-cost", "0.05"],
      {
        env: env(stub.url),
        timeoutMs: 90_000,
      },
    );
    expect(r.code, r.stderr).toBe(3);
    const out = JSON.parse(r.stdout) as { status: string; steps: number; error: string };
    expect(out).toMatchObject({ status: "budget_exhausted", steps: 2 });
    expect(out.error).toMatch(/cost \$0\.0540 of its \$0\.05 limit \(--max-cost\)/);
    expect(stub.requests.filter((b) => nodeOf(b) === "decide")).toHaveLength(2);
    // The progress line of each decide says what the call cost and the run so far.
    expect(r.stderr).toMatch(/\[step {3}1\] decide .*18 tok \$0\.0180 \(run \$0\.0360\)/);
    expect(r.stderr).toMatch(/\[step {3}2\] decide .*18 tok \$0\.0180 \(run \$0\.0540\)/);

    const calls = jsonLines<{ type: string; payload: { node: string; step?: number; subtask?: string; costUsd?: number } }>(
      cli(["ledger", "C", "-w", ws, "--json", "--type", "model_call"]).stdout,
    ).filter((e) => e.type === "model_call");
    expect(calls.map((c) => [c.payload.node, c.payload.step, c.payload.subtask ?? null])).toEqual([
      ["plan", 0, null],
      ["decide", 1, "notes"],
      ["decide", 2, "notes"],
    ]);
    for (const c of calls) expect(c.payload.costUsd).toBeCloseTo(0.018, 10);

    const report = JSON.parse(cli(["report", "C", "-w", ws, "--json"]).stdout) as {
      model_usage: {
        costUsd: number;
        bySubtask: Array<{ subtask: string | null; calls: number; costUsd: number }>;
        byStep: Array<{ step: number; calls: number }>;
      };
    };
    expect(report.model_usage.costUsd).toBeCloseTo(0.054, 10);
    expect(report.model_usage.bySubtask.map((s) => [s.subtask, s.calls])).toEqual([
      [null, 1],
      ["notes", 2],
    ]);
    expect(report.model_usage.byStep.map((s) => [s.step, s.calls])).toEqual([
      [0, 1],
      [1, 1],
      [2, 1],
    ]);
    expect(cli(["report", "C", "-w", ws]).stdout).toMatch(/\| notes \| 2 \| 22 \| 0 \| 14 \| 0\.0360 \|/);

    const resumed = await cliAsync(["resume", "C", "-w", ws, "--json", "-q", "--max-cost", "1"], { env: env(stub.url), timeoutMs: 90_000 });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ status: "finished", steps: 3 });
  }, 180_000);

  it("429 until the retries run out stops as rate_limited (exit 4)", async () => {
    const ws = tempWorkspace(undefined, { "README.md": "# notes\n" });
    const stub = await stubWith({ fail: { status: 429, headers: { "retry-after": "0" } }, failFrom: 0, decide: 0 });
    stubs.push(stub);
    const r = await run(ws, "R", stub.url, { LEDGERLOOP_MODEL_RETRIES: "1" });
    expect(r.code, r.stderr).toBe(4);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: "rate_limited", steps: 0 });
  }, 120_000);

  it("401 stops at once with the reason; nothing is retried", async () => {
    const ws = tempWorkspace(undefined, { "README.md": "# notes\n" });
    const stub = await stubWith({ fail: { status: 401, message: "Incorrect API key provided" }, failFrom: 0, decide: 0 });
    stubs.push(stub);
    const r = await run(ws, "A", stub.url);
    expect(r.code).toBe(1);
    const out = JSON.parse(r.stdout) as { status: string; error: string };
    expect(out.status).toBe("failed");
    expect(out.error).toMatch(/HTTP 401: the API key is missing or wrong/);
    expect(stub.requests.filter((b) => nodeOf(b) === "decide")).toHaveLength(1);
  }, 120_000);

  it("a context-length error compacts the prompt and retries once with the smaller one", async () => {
    const big = Array.from({ length: 150 }, (_, i) => `line ${i}: the quick brown fox jumps over the lazy dog`).join("\n");
    const ws = tempWorkspace(undefined, { "README.md": "# notes\n", "big.txt": big });
    const state = { decide: 0 };
    const script: StubReply[] = [{ tool_calls: [call("c1", "run_command", { command: "cat big.txt" })] }, ...DECIDE.slice(1)];
    let refused = false;
    const stub = await startOpenAIStub({
      respond: (body, n) => {
        const node = nodeOf(body);
        if (node === "plan") return PLAN;
        if (node !== "decide") return { content: "A lesson." };
        // The second decide prompt is refused once as too long.
        if (state.decide === 1 && !refused) {
          refused = true;
          return { status: 400, code: "context_length_exceeded", message: `This model's maximum context length is 2000 tokens (request ${n}).` };
        }
        return script[state.decide++];
      },
    });
    stubs.push(stub);
    const r = await run(ws, "C", stub.url);
    expect(r.code, r.stdout).toBe(0);
    const decides = stub.requests.filter((b) => nodeOf(b) === "decide");
    expect(decides).toHaveLength(4);
    const size = (b: StubRequestBody) => JSON.stringify(b.messages).length;
    expect(size(decides[2]!)).toBeLessThan(size(decides[1]!));
    const built = jsonLines<{ payload: { layout?: { reason: string }; budget: number } }>(
      cli(["ledger", "C", "-w", ws, "--type", "context_built", "--json"]).stdout,
    );
    const retry = built.find((b) => b.payload.layout?.reason === "context length");
    expect(retry).toBeDefined();
    // The lowered budget holds for the prompts after it.
    expect(built.at(-1)!.payload.budget).toBe(retry!.payload.budget);
  }, 120_000);
});
