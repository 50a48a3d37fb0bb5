import fs from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { argsTextProblem, argsValueProblem, guardToolCalls, MAX_ARGS_CHARS, MAX_ARGS_DEPTH } from "../../src/models/args-guard.js";
import { OpenAIChatModel } from "../../src/models/openai.js";
import { cli, jsonLines } from "../helpers/cli.js";
import { startOpenAIStub } from "../helpers/openai-stub.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

afterAll(() => cleanupTemp());

const DEPTH = 100_000;
const deepText = `${"[".repeat(DEPTH)}${"]".repeat(DEPTH)}`;
/** A value nested `n` deep, built without recursion. */
function deepValue(n: number): unknown {
  let v: unknown = [];
  for (let i = 0; i < n; i++) v = [v];
  return v;
}

describe("limits on tool-call arguments", () => {
  it("accepts ordinary arguments, as text and parsed", () => {
    const args = { path: "src/a.ts", content: "[[[[ brackets in a string do not nest ]]]]".repeat(100), subtasks: [{ id: "s1", status: "done" }] };
    expect(argsTextProblem(JSON.stringify(args))).toBeNull();
    expect(argsValueProblem(args)).toBeNull();
    expect(argsValueProblem(deepValue(MAX_ARGS_DEPTH - 1))).toBeNull();
    const calls = [{ id: "c1", name: "write_file", args }];
    expect(guardToolCalls(calls)).toEqual(calls);
  });

  it("refuses nesting past the limit, at any depth, without overflowing the stack", () => {
    expect(argsTextProblem(deepText)).toMatch(/nested deeper than 64 levels/);
    expect(argsTextProblem(`{"a":"\\"${"[".repeat(80)}"}`)).toBeNull(); // escaped quote, brackets in a string
    expect(argsValueProblem(deepValue(MAX_ARGS_DEPTH + 1))).toMatch(/nested deeper/);
    expect(argsValueProblem(JSON.parse(deepText))).toMatch(/nested deeper/);
  });

  it("refuses more than a mebibyte of arguments", () => {
    const big = { path: "a.txt", content: "x".repeat(MAX_ARGS_CHARS) };
    expect(argsTextProblem(JSON.stringify(big))).toMatch(/characters long, over the limit of 1048576 characters/);
    expect(argsValueProblem(big)).toMatch(/more than the limit of 1048576 characters/);
  });

  it("replaces a refused call by a short preview and a reason (nothing deep is kept)", () => {
    const [fromText, fromValue] = guardToolCalls([
      { id: "a", name: "write_file", argsText: `{"path":"x","content":${deepText}}` },
      { id: "b", name: "write_file", args: { path: "x", content: JSON.parse(deepText) } },
    ]);
    expect(fromText).toMatchObject({
      id: "a",
      name: "write_file",
      refused: expect.stringMatching(/^Arguments of write_file refused: .*nested deeper than 64/),
    });
    expect(fromText!.argsText!.length).toBeLessThanOrEqual(200);
    expect(fromValue).toMatchObject({ id: "b", argsText: "{object with keys: path, content}", refused: expect.stringMatching(/nested deeper/) });
    expect(fromValue).not.toHaveProperty("args");
    expect(() => JSON.stringify([fromText, fromValue])).not.toThrow();
  });

  it("refuses a 100k-deep call arriving from an OpenAI-compatible server", async () => {
    const stub = await startOpenAIStub({
      respond: () => ({ content: "deep", tool_calls: [{ name: "write_file", arguments: `{"path":"x","content":${deepText}}` }] }),
    });
    try {
      const model = new OpenAIChatModel({ model: "stub", baseURL: stub.url, apiKey: "test", maxRetries: 0 });
      const r = await model.invoke({ node: "decide", turn: 0, messages: [{ role: "user", content: "go" }], tools: [] });
      const [call] = guardToolCalls(r.toolCalls);
      expect(call!.refused).toMatch(/nested deeper than 64 levels/);
      expect(call!.args).toBeUndefined();
    } finally {
      await stub.close();
    }
  }, 60_000);
});

describe("a run whose model sends over-deep or huge arguments", () => {
  it("gets error feedback naming the problem, goes on, and resumes after a crash", () => {
    const ws = tempWorkspace(undefined, { "a.txt": "hello\n" });
    const traj = path.join(ws, "..", `${path.basename(ws)}-deep.json`);
    // Written by hand: JSON.stringify would overflow on the deep value.
    const turn0 = `{"content":"bad calls","tool_calls":[
      {"name":"write_file","args":${JSON.stringify(`{"path":"s.txt","content":${deepText}}`)}},
      {"name":"write_file","args":{"path":"o.txt","content":${deepText}}},
      {"name":"write_file","args":{"path":"big.txt","content":"${"x".repeat(2 * MAX_ARGS_CHARS)}"}}]}`;
    const rest = JSON.stringify([
      { content: "read", tool_calls: [{ name: "read_file", args: { path: "a.txt" } }] },
      { content: "done", tool_calls: [{ name: "finish", args: { summary: "done" } }] },
    ]);
    fs.writeFileSync(traj, `{"decide":[${turn0},${rest.slice(1, -1)}]}`);
    try {
      // Killed (SIGKILL) at the 12th ledger write: after the refusals' feedback, in the next step.
      const killed = cli(["run", "deep args", "-w", ws, "--model", `scripted:${traj}`, "--thread", "D", "--json", "-q"], {
        env: { LEDGERLOOP_FAILPOINT: "ledger-append:12" },
        timeoutMs: 180_000,
      });
      expect(killed.signal, killed.stderr).toBe("SIGKILL");
      const resumed = cli(["resume", "D", "-w", ws, "--json", "-q"], { timeoutMs: 180_000 });
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(JSON.parse(resumed.stdout)).toMatchObject({ thread: "D", status: "finished" });

      const feedback = jsonLines<{ payload: { tool: string; status: string; output: string } }>(
        cli(["ledger", "D", "-w", ws, "--json", "--type", "environment_feedback"]).stdout,
      ).map((e) => e.payload);
      const refused = feedback.filter((f) => /refused/.test(f.output));
      expect(refused.map((f) => f.output)).toEqual([
        expect.stringMatching(/nested deeper than 64 levels/),
        expect.stringMatching(/nested deeper than 64 levels/),
        expect.stringMatching(/limit of 1048576 characters/),
      ]);
      expect(feedback.map((f) => f.tool)).toEqual(["write_file", "write_file", "write_file", "read_file", "finish"]);
      for (const f of ["s.txt", "o.txt", "big.txt"]) expect(fs.existsSync(path.join(ws, f))).toBe(false);
    } finally {
      fs.rmSync(traj, { force: true });
    }
  }, 400_000);
});
