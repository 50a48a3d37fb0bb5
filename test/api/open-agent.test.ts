import fs from "node:fs";
import path from "node:path";
import { AIMessage, type BaseMessage } from "@langchain/core/messages";
import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { ChatResult } from "@langchain/core/outputs";
import { afterAll, describe, expect, it } from "vitest";
import { InvalidOptionError, deleteThread, getHistory, getLedgerEvents, listThreads, openAgent, rewindThread, type Agent } from "../../src/index.js";
import { checkpointHistory } from "../../src/ledger/checkpoints.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

const call = (name: string, args: Record<string, unknown>) => ({ tool_calls: [{ name, args }] });

/** A LangChain chat model of our own (no provider): answers each call with the next scripted tool call. */
class ListToolModel extends BaseChatModel {
  seen: number[] = [];
  bound = 0;
  constructor(private readonly turns: Array<{ name: string; args: Record<string, unknown> }>) {
    super({});
  }
  _llmType() {
    return "list-tool-model";
  }
  override bindTools(tools: unknown[]) {
    this.bound = tools.length;
    return this;
  }
  async _generate(messages: BaseMessage[]): Promise<ChatResult> {
    this.seen.push(messages.length);
    const next = this.turns.shift() ?? { name: "finish", args: { summary: "done" } };
    const message = new AIMessage({ content: "", tool_calls: [{ id: `c${this.seen.length}`, name: next.name, args: next.args, type: "tool_call" }] });
    return { generations: [{ text: "", message }] };
  }
}

const agents: Agent[] = [];
// Scripts live beside their workspace (not in it, where the run would see them), so they go separately.
const scripts: string[] = [];
afterAll(async () => {
  await Promise.all(agents.map((a) => a.close()));
  cleanupTemp();
  for (const f of scripts) fs.rmSync(f, { force: true });
});

function scripted(ws: string, script: unknown): string {
  const file = path.join(path.dirname(ws), `${path.basename(ws)}-script.json`);
  fs.writeFileSync(file, JSON.stringify(script));
  scripts.push(file);
  return `scripted:${file}`;
}

describe("openAgent", () => {
  it("refuses an invalid option before anything runs, naming the field", async () => {
    const ws = tempWorkspace(undefined, { "a.txt": "a\n" });
    const err = await openAgent({ workspace: ws, model: "scripted:x.json", maxSteps: -3 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidOptionError);
    expect((err as InvalidOptionError).field).toBe("maxSteps");
    expect((err as Error).message).toMatch(/^invalid setting maxSteps: /);
    const typo = await openAgent({ workspace: ws, model: "scripted:x.json", maxStep: 3 } as never).catch((e: unknown) => e);
    expect((typo as InvalidOptionError).field).toBe("maxStep");
    // Nothing was created in the workspace.
    expect(fs.existsSync(path.join(ws, ".ledgerloop"))).toBe(false);
  });

  it("refuses a negative reconnectMs for run and resume before any thread is registered", async () => {
    const ws = tempWorkspace(undefined, { "a.txt": "a\n" });
    const agent = await openAgent({ workspace: ws, model: scripted(ws, { decide: [call("finish", { summary: "ok" })] }), retrieval: "lexical" });
    agents.push(agent);
    for (const attempt of [() => agent.run("task", { reconnectMs: -1 }), () => agent.resume("T", { reconnectMs: Number.NaN })]) {
      const err = await attempt().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InvalidOptionError);
      expect((err as InvalidOptionError).field).toBe("reconnectMs");
    }
    expect(await listThreads({ workspace: ws })).toEqual([]);
  });

  it("refuses a model instance without tool calling, in a sentence", async () => {
    const ws = tempWorkspace(undefined, { "a.txt": "a\n" });
    const noTools = { invoke: async () => new AIMessage("hi") };
    const err = await openAgent({ workspace: ws, model: noTools as never }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidOptionError);
    expect((err as Error).message).toMatch(/has no bindTools method, so it cannot call tools/);
    expect(fs.existsSync(path.join(ws, ".ledgerloop"))).toBe(false);
  });

  it("runs a goal with any LangChain chat model instance, and the CLI's functions see the run", async () => {
    const ws = tempWorkspace(undefined, { "notes.txt": "old\n" });
    const model = new ListToolModel([
      { name: "update_plan", args: { subtasks: [{ id: "notes", description: "Rewrite the notes", status: "in_progress" }] } },
      { name: "write_file", args: { path: "notes.txt", content: "new\n" } },
      { name: "finish", args: { summary: "rewrote the notes" } },
    ]);
    const agent = await openAgent({ workspace: ws, model, maxSteps: 10, retrieval: "lexical" });
    agents.push(agent);
    const r = await agent.run("rewrite the notes");
    expect(r.status).toBe("finished");
    expect(r.state.status).toBe("finished");
    expect(model.bound).toBeGreaterThan(5);
    expect(fs.readFileSync(path.join(ws, "notes.txt"), "utf8")).toBe("new\n");
    expect(agent.runtime.model.name).toBe("langchain:ListToolModel");
    const threads = await listThreads({ workspace: ws });
    expect(threads.map((t) => t.thread)).toContain(r.thread);
    const actions = await getLedgerEvents(r.thread, { workspace: ws, type: ["agent_action"] });
    expect(actions.map((e) => (e.payload as { tool: string }).tool)).toEqual(["write_file", "finish"]);

    // A script deletes the finished run whole; its id is not taken again.
    expect(await deleteThread(r.thread, { workspace: ws })).toMatchObject({ deleted: false, events: expect.any(Number) });
    expect(await deleteThread(r.thread, { workspace: ws, yes: true })).toMatchObject({ deleted: true });
    expect((await listThreads({ workspace: ws })).map((t) => t.thread)).not.toContain(r.thread);
    await expect(agent.run("rewrite the notes", { thread: r.thread })).rejects.toMatchObject({ code: "THREAD_DELETED" });
  });

  it("its graph has the workspace's checkpointer: getStateHistory and the light reader agree", async () => {
    const ws = tempWorkspace(undefined, { "a.txt": "a\n" });
    // An approval pause, a rejection and a resume give interrupt, resume and loop checkpoints.
    const model = scripted(ws, {
      decide: [call("run_command", { command: "frobnicate --now" }), call("write_file", { path: "b.txt", content: "b\n" }), call("finish", { summary: "ok" })],
    });
    const agent = await openAgent({ workspace: ws, model, approve: "ask", retrieval: "lexical" });
    agents.push(agent);
    const first = await agent.run("try things");
    expect(first.status).toBe("awaiting_approval");
    expect(first.pending?.command).toBe("frobnicate --now");
    const end = await agent.resume(first.thread, { decision: "reject" });
    expect(end.status).toBe("finished");
    // Rewind through the API adds an "update" checkpoint that forks the head.
    const rows = await getHistory(first.thread, { workspace: ws });
    const planned = rows.filter((row) => row.next.includes("context")).at(-1)!;
    await rewindThread(first.thread, { workspace: ws, to: planned.checkpointId });

    const snaps = [];
    for await (const s of agent.graph.getStateHistory({ configurable: { thread_id: first.thread } })) snaps.push(s);
    const light = checkpointHistory(agent.runtime.db, first.thread);
    expect(snaps.length).toBeGreaterThan(10);
    expect(light.map((c) => c.checkpointId)).toEqual(snaps.map((s) => s.config.configurable?.checkpoint_id));
    expect(light.map((c) => c.next)).toEqual(snaps.map((s) => [...s.next]));
    expect(light.map((c) => c.parentCheckpointId)).toEqual(snaps.map((s) => s.parentConfig?.configurable?.checkpoint_id ?? null));
    expect(light.map((c) => [c.step, c.source, c.createdAt])).toEqual(snaps.map((s) => [s.metadata?.step, s.metadata?.source, s.createdAt]));
    expect(light.map((c) => c.values)).toEqual(snaps.map((s) => JSON.parse(JSON.stringify(s.values))));
    expect(new Set(light.map((c) => c.source))).toEqual(new Set(["input", "loop", "update"]));
  });

  it("an unknown thread, or a checkpoint of another thread, is a one-line typed error", async () => {
    const ws = tempWorkspace(undefined, { "a.txt": "a\n" });
    const model = scripted(ws, { decide: [call("finish", { summary: "ok" })] });
    const agent = await openAgent({ workspace: ws, model, retrieval: "lexical" });
    agents.push(agent);
    const a = await agent.run("one");
    const b = await agent.run("two");
    const unknown = await getHistory("nope", { workspace: ws }).catch((e: unknown) => e);
    expect(unknown).toMatchObject({ code: "UNKNOWN_THREAD" });
    expect((unknown as Error).message).not.toContain("\n");
    await expect(agent.resume("nope")).rejects.toMatchObject({ code: "UNKNOWN_THREAD" });
    const otherCheckpoint = (await getHistory(b.thread, { workspace: ws }))[0]!.checkpointId;
    const foreign = await rewindThread(a.thread, { workspace: ws, to: otherCheckpoint }).catch((e: unknown) => e);
    expect(foreign).toMatchObject({ name: "TimeTravelError", code: "CHECKPOINT_NOT_FOUND" });
    expect((foreign as Error).message).toMatch(new RegExp(`^no checkpoint ${otherCheckpoint} in thread ${a.thread}`));
    expect((foreign as Error).message).not.toContain("\n");
  });
});
