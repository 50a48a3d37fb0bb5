import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createModel } from "../../src/models/factory.js";
import type { ChatMessage, ModelRequest, ToolSpecLike } from "../../src/models/port.js";
import { ScriptedModel, type RecordedRequest, type Trajectory } from "../../src/models/scripted.js";
import type { ModelNode } from "../../src/state.js";

const TOOLS: ToolSpecLike[] = [
  { name: "read_file", description: "Read a file.", parameters: { type: "object", properties: { path: { type: "string" } } } },
  { name: "finish", description: "End the task.", parameters: { type: "object", properties: { summary: { type: "string" } } } },
];

function req(node: ModelNode, turn: number, messages: ChatMessage[] = [{ role: "user", content: `${node} ${turn}` }]): ModelRequest {
  return { node, turn, messages, tools: TOOLS };
}

const TRAJECTORY: Trajectory = {
  plan: [{ content: "plan 0", tool_calls: [{ name: "update_plan", args: { subtasks: [{ title: "a" }] } }] }],
  decide: [
    { content: "decide 0", tool_calls: [{ name: "read_file", args: { path: "a.ts" } }] },
    {
      content: "decide 1",
      tool_calls: [{ name: "read_file", args: "{not json" }, { name: "finish", args: { summary: "done" }, id: "mine" }, { name: "finish" }],
    },
    { content: "decide 2" },
  ],
  reflect: [{ content: "lesson" }],
};

describe("ScriptedModel", () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "ledgerloop-scripted-"));
  });
  afterEach(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("answers turn n of a node with entry n, whatever the order of the calls", async () => {
    const model = new ScriptedModel(TRAJECTORY);
    // Out of order and interleaved, as after a resume or a fork.
    const d2 = await model.invoke(req("decide", 2));
    const p0 = await model.invoke(req("plan", 0));
    const d0 = await model.invoke(req("decide", 0));
    const d0again = await model.invoke(req("decide", 0));
    expect(d2.content).toBe("decide 2");
    expect(p0.content).toBe("plan 0");
    expect(p0.toolCalls).toEqual([{ id: "call_plan_0_0", name: "update_plan", args: { subtasks: [{ title: "a" }] } }]);
    expect(d0).toEqual({
      content: "decide 0",
      toolCalls: [{ id: "call_decide_0_0", name: "read_file", args: { path: "a.ts" } }],
      usage: { inputTokens: 0, outputTokens: 0 },
    });
    expect(d0again).toEqual(d0);
    expect(d0.exhausted).toBeUndefined();
  });

  it("returns exhausted past the end of a node's list and for a node without a list", async () => {
    const model = new ScriptedModel(TRAJECTORY);
    expect(await model.invoke(req("decide", 3))).toEqual({ content: "", toolCalls: [], exhausted: true });
    expect(await model.invoke(req("summarize", 0))).toEqual({ content: "", toolCalls: [], exhausted: true });
    // Exhausted requests are recorded too: a test can see what the agent asked for after the script ended.
    expect(model.requests.map((r) => [r.node, r.turn])).toEqual([
      ["decide", 3],
      ["summarize", 0],
    ]);
  });

  it("turns string args into argsText, keeps given ids, and generates stable ids call_<node>_<turn>_<i>", async () => {
    const model = new ScriptedModel(TRAJECTORY);
    const res = await model.invoke(req("decide", 1));
    expect(res.toolCalls).toEqual([
      { id: "call_decide_1_0", name: "read_file", argsText: "{not json" },
      { id: "mine", name: "finish", args: { summary: "done" } },
      { id: "call_decide_1_2", name: "finish", args: {} },
    ]);
    // A second model on the same script (a resumed process) generates the same ids.
    expect((await new ScriptedModel(TRAJECTORY).invoke(req("decide", 1))).toolCalls).toEqual(res.toolCalls);
  });

  it("records each request as a deep copy with the tool names", async () => {
    const model = new ScriptedModel(TRAJECTORY);
    const messages: ChatMessage[] = [
      { role: "system", content: "sys" },
      { role: "assistant", content: "", toolCalls: [{ id: "c1", name: "read_file", args: { path: "a.ts" } }] },
      { role: "tool", toolCallId: "c1", name: "read_file", content: "original" },
    ];
    await model.invoke(req("decide", 0, messages));

    messages.push({ role: "user", content: "added later" });
    (messages[0] as { content: string }).content = "changed";
    ((messages[1] as { toolCalls: Array<{ args: { path: string } }> }).toolCalls[0]!.args as { path: string }).path = "changed.ts";

    const rec = model.requests[0]!;
    expect(rec).toEqual<RecordedRequest>({
      node: "decide",
      turn: 0,
      toolNames: ["read_file", "finish"],
      messages: [
        { role: "system", content: "sys" },
        { role: "assistant", content: "", toolCalls: [{ id: "c1", name: "read_file", args: { path: "a.ts" } }] },
        { role: "tool", toolCallId: "c1", name: "read_file", content: "original" },
      ],
    });
  });

  it("appends every request to recordFile as one JSON line", async () => {
    const recordFile = path.join(dir, "requests.jsonl");
    fs.writeFileSync(recordFile, '{"earlier":true}\n');
    const model = new ScriptedModel(TRAJECTORY, { recordFile });
    await model.invoke(req("plan", 0));
    await model.invoke(req("decide", 0));
    await model.invoke(req("decide", 9));

    const lines = fs.readFileSync(recordFile, "utf8").trimEnd().split("\n");
    expect(lines).toHaveLength(4);
    expect(JSON.parse(lines[0]!)).toEqual({ earlier: true });
    const recorded = lines.slice(1).map((l) => JSON.parse(l) as RecordedRequest);
    expect(recorded).toEqual(model.requests);
    expect(recorded.map((r) => `${r.node}:${r.turn}`)).toEqual(["plan:0", "decide:0", "decide:9"]);
  });

  it("reports the turns that were never requested", async () => {
    const model = new ScriptedModel(TRAJECTORY);
    expect(model.unusedTurns()).toEqual({ plan: [0], decide: [0, 1, 2], reflect: [0] });
    await model.invoke(req("decide", 1));
    await model.invoke(req("plan", 0));
    await model.invoke(req("decide", 5)); // past the end: uses nothing
    expect(model.unusedTurns()).toEqual({ decide: [0, 2], reflect: [0] });
    await model.invoke(req("decide", 0));
    await model.invoke(req("decide", 2));
    await model.invoke(req("reflect", 0));
    expect(model.unusedTurns()).toEqual({});
  });

  it("is what createModel builds for scripted:<file>, recording to the given file", async () => {
    const file = path.join(dir, "trajectory.json");
    fs.writeFileSync(file, JSON.stringify(TRAJECTORY));
    const recordFile = path.join(dir, "rec.jsonl");
    const model = createModel(`scripted:${file}`, { recordFile });
    expect(model).toBeInstanceOf(ScriptedModel);
    expect(model.name).toBe(`scripted:${file}`);
    expect((await model.invoke(req("reflect", 0))).content).toBe("lesson");
    expect(fs.readFileSync(recordFile, "utf8").trim().split("\n")).toHaveLength(1);
  });
});
