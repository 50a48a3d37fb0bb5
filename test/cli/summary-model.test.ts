import { afterAll, afterEach, describe, expect, it } from "vitest";
import { cli, cliAsync, jsonLines } from "../helpers/cli.js";
import { startOpenAIStub, type OpenAIStub, type StubReply, stubToolCall, nodeOfRequest } from "../helpers/openai-stub.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

afterAll(() => cleanupTemp());

// --summary-model over real HTTP: the stub sees which model each request names, so the test checks
// the routing where it matters (on the wire), and the ledger and report split the spend by model.
const call = stubToolCall;
const nodeOf = nodeOfRequest;
const PLAN: StubReply = { tool_calls: [call("p1", "update_plan", { subtasks: [{ id: "notes", description: "write notes.txt", status: "in_progress" }] })] };
const DECIDE: StubReply[] = [
  { tool_calls: [call("c1", "write_file", { path: "notes.txt", content: "hello\n" })] },
  { tool_calls: [call("c2", "finish", { summary: "done" })] },
];

let stubs: OpenAIStub[] = [];
afterEach(async () => {
  await Promise.all(stubs.map((s) => s.close()));
  stubs = [];
});

async function stub(): Promise<OpenAIStub> {
  let decide = 0;
  const s = await startOpenAIStub({
    respond: (body) => {
      const node = nodeOf(body);
      if (node === "plan") return PLAN;
      if (node === "decide") return DECIDE[decide++] ?? { tool_calls: [call("f", "finish", { summary: "done" })] };
      return { content: "Write the file before reading it." };
    },
  });
  stubs.push(s);
  return s;
}

const env = (url: string) => ({ OPENAI_BASE_URL: url, OPENAI_API_KEY: "sk-proj-Summary3Kq8Lw2Nv6Tz1Bx4Hm7", LEDGERLOOP_MODEL_RETRY_BASE_MS: "10" });
const PRICES = { prices: { "big-model": { input: 1000, output: 1000 }, "small-model": { input: 100, output: 100 } } };

describe("--summary-model", () => {
  it("sends plan and reflect to the summary model and decide to the main one; the report splits the cost by model", async () => {
    const ws = tempWorkspace(undefined, { "README.md": "# notes\n", "ledgerloop.config.json": JSON.stringify(PRICES) });
    const s = await stub();
    const r = await cliAsync(
      [
        "run",
        "Write notes.txt",
        "-w",
        ws,
        "--model",
        "openai:big-model",
        "--summary-model",
        "openai:small-model",
        "--thread",
        "S",
        "--json",
        "-q",
        "--sandbox",
        "none",
      ],
      { env: env(s.url), timeoutMs: 90_000 },
    );
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: "finished" });
    const onWire = s.requests.map((b) => [nodeOf(b), b.model]);
    expect(onWire.filter(([n]) => n === "decide").every(([, m]) => m === "big-model")).toBe(true);
    expect(onWire.filter(([n]) => n !== "decide").every(([, m]) => m === "small-model")).toBe(true);
    expect(onWire.filter(([n]) => n === "plan")).toHaveLength(1);
    expect(onWire.some(([n]) => n === "other")).toBe(true); // the end-of-run reflection

    const calls = jsonLines<{ payload: { node: string; model: string; costUsd: number } }>(
      cli(["ledger", "S", "-w", ws, "--json", "--type", "model_call"]).stdout,
    );
    for (const c of calls) expect(c.payload.model).toBe(c.payload.node === "decide" ? "openai:big-model" : "openai:small-model");

    const report = JSON.parse(cli(["report", "S", "-w", ws, "--json"]).stdout) as {
      model_usage: { costUsd: number; byModel: Array<{ model: string; calls: number; costUsd: number }> };
    };
    const by = Object.fromEntries(report.model_usage.byModel.map((m) => [m.model, m]));
    const decides = calls.filter((c) => c.payload.node === "decide").length;
    expect(by["openai:big-model"]).toMatchObject({ calls: decides });
    expect(by["openai:small-model"]).toMatchObject({ calls: calls.length - decides });
    // 18 tokens a call at $1,000 and $100 per million.
    expect(by["openai:big-model"]!.costUsd).toBeCloseTo(decides * 0.018, 10);
    expect(by["openai:small-model"]!.costUsd).toBeCloseTo((calls.length - decides) * 0.0018, 10);
    expect(report.model_usage.costUsd).toBeCloseTo(by["openai:big-model"]!.costUsd + by["openai:small-model"]!.costUsd, 10);
  }, 180_000);

  it("summaryModel in ledgerloop.config.json does the same", async () => {
    const ws = tempWorkspace(undefined, {
      "README.md": "# notes\n",
      "ledgerloop.config.json": JSON.stringify({ ...PRICES, summaryModel: "openai:small-model" }),
    });
    const s = await stub();
    const r = await cliAsync(["run", "Write notes.txt", "-w", ws, "--model", "openai:big-model", "--thread", "K", "--json", "-q", "--sandbox", "none"], {
      env: env(s.url),
      timeoutMs: 90_000,
    });
    expect(r.code, r.stderr).toBe(0);
    const calls = jsonLines<{ payload: { node: string; model: string } }>(cli(["ledger", "K", "-w", ws, "--json", "--type", "model_call"]).stdout);
    expect(calls.find((c) => c.payload.node === "plan")?.payload.model).toBe("openai:small-model");
    expect(calls.filter((c) => c.payload.node === "decide").map((c) => c.payload.model)).toEqual(["openai:big-model", "openai:big-model"]);
  }, 180_000);

  it("resume keeps the summary model the run was started with", async () => {
    const ws = tempWorkspace(undefined, { "README.md": "# notes\n", "ledgerloop.config.json": JSON.stringify(PRICES) });
    const s = await stub();
    // plan (small, $0.0018) + decide 1 (big, $0.018) = $0.0198: the second decide would start past $0.019.
    const r = await cliAsync(
      [
        "run",
        "Write notes.txt",
        "-w",
        ws,
        "--model",
        "openai:big-model",
        "--summary-model",
        "openai:small-model",
        "--thread",
        "P",
        "--json",
        "-q",
        "--sandbox",
        "none",
        "--max-cost",
        "0.019",
      ],
      { env: env(s.url), timeoutMs: 90_000 },
    );
    expect(r.code, r.stderr).toBe(3);
    const resumed = await cliAsync(["resume", "P", "-w", ws, "--json", "-q", "--max-cost", "1"], { env: env(s.url), timeoutMs: 90_000 });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ status: "finished" });
    const calls = jsonLines<{ payload: { node: string; model: string } }>(cli(["ledger", "P", "-w", ws, "--json", "--type", "model_call"]).stdout);
    const reflect = calls.filter((c) => c.payload.node === "reflect");
    expect(reflect.length).toBeGreaterThan(0);
    for (const c of reflect) expect(c.payload.model).toBe("openai:small-model");
  }, 180_000);

  it("an unknown summary model spec is refused before anything runs", () => {
    const ws = tempWorkspace(undefined, { "README.md": "# notes\n" });
    const r = cli(
      ["run", "Write notes.txt", "-w", ws, "--model", "openai:big-model", "--summary-model", "claude:whatever", "--json", "-q", "--sandbox", "none"],
      {
        env: env("http://127.0.0.1:9"),
      },
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/unknown model "claude:whatever"/);
    expect(jsonLines(cli(["threads", "-w", ws, "--json"]).stdout)).toEqual([]);
  });
});
