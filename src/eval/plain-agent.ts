import fs from "node:fs";
import { AIMessage, HumanMessage, SystemMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { Annotation, END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { TOOLS, toolSpecs, validateToolCall } from "../agent/tools/index.js";
import type { ToolContext } from "../agent/tools/tool.js";
import { commandPolicy } from "../config.js";
import { costOf, priceOf } from "../economics/prices.js";
import type { Spend } from "../economics/spend.js";
import { errorMessage } from "../errors.js";
import type { ChatMessage } from "../models/port.js";
import { createLexicalSearcher } from "../retrieval/lexical.js";
import { createSandbox } from "../sandbox/executor.js";
import { ProcessManager } from "../sandbox/processes.js";
import { RunSettings } from "../settings.js";
import type { ToolCallRecord } from "../state.js";
import { pushFault, stepFault } from "./faults.js";
import { chatModelOf } from "./models.js";
import { evalRunSettings, timeLimitSignal, type AgentOutcome, type AgentRunInput } from "./run-ledgerloop.js";

// The baseline of `ledgerloop eval --baseline plain`: a plain LangGraph agent. The whole
// conversation is its state (MessagesAnnotation) and is sent to the model at every step; no plan,
// no context engine, no ledger, no checkpoints, no reflection. Same model, same tools, same sandbox
// and policy, same step limit as the ledgerloop run it is compared with.

const SYSTEM = `You are a coding agent working in a project workspace (your tools' paths are relative to it).
Use the tools to complete the task. Run the tests to check your work. When the task is done, call finish with a short summary.`;

const PlainState = Annotation.Root({
  ...MessagesAnnotation.spec,
  steps: Annotation<number>({ reducer: (_a, b) => b, default: () => 0 }),
  /** Why the loop ended, once it has: finished, max_steps or no_tool_call. */
  ended: Annotation<string | null>({ reducer: (_a, b) => b, default: () => null }),
});
type PlainState = typeof PlainState.State;

/** Runs the task with the plain baseline agent; the spend is counted from the model's answers. */
export async function runPlainAgent(input: AgentRunInput): Promise<AgentOutcome> {
  const settings = RunSettings.parse(evalRunSettings(input));
  const workspace = fs.realpathSync(input.workspace);
  const model = chatModelOf(input.model, settings.toolCallFormat);
  const { policy, allowNetwork, config } = commandPolicy(workspace, { allowNetwork: settings.allowNetwork, allow: settings.allow });
  const sandbox = createSandbox({ level: settings.sandbox ?? "auto", workspace, allowNetwork, outputCapBytes: settings.outputCapBytes, session: true });
  const processes = new ProcessManager(sandbox, workspace);
  const signal = timeLimitSignal(input.task, input.signal);
  const ctx: ToolContext = {
    workspace,
    sandbox,
    searcher: createLexicalSearcher(workspace),
    commandTimeoutMs: settings.commandTimeoutMs,
    testTimeoutMs: settings.testTimeoutMs,
    outputCapBytes: settings.outputCapBytes,
    signal,
    policy,
    approved: settings.approve === "auto",
    processes,
  };
  const price = priceOf(model.name, config.prices);
  const spend: Spend = { calls: 0, inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, costUsd: 0 };
  const specs = toolSpecs(TOOLS);
  const faults: string[] = [];
  const faultCount = { n: 0 };

  const agent = async (state: PlainState) => {
    if (state.steps >= settings.maxSteps) return { ended: "max_steps" };
    const answer = await model.invoke({ node: "decide", turn: state.steps, messages: state.messages.map(toChat), tools: specs, signal });
    spend.calls++;
    spend.inputTokens += answer.usage?.inputTokens ?? 0;
    spend.cachedInputTokens += answer.usage?.cachedInputTokens ?? 0;
    spend.outputTokens += answer.usage?.outputTokens ?? 0;
    spend.costUsd += costOf(answer.usage, price);
    const msg = toAiMessage(answer.content, answer.toolCalls);
    return { messages: [msg], steps: state.steps + 1, ...(answer.toolCalls.length ? {} : { ended: "no_tool_call" }) };
  };
  const tools = async (state: PlainState) => {
    const last = state.messages.at(-1) as AIMessage;
    const out: ToolMessage[] = [];
    let finished = false;
    for (const c of callsOf(last)) {
      const v = validateToolCall(c.name, c.args, c.argsText);
      let content: string;
      if (!v.ok) {
        content = v.error;
        pushFault(faults, stepFault(state.steps, { tool: c.name, status: "rejected", output: content }), faultCount);
      } else {
        const bound = v.tool.bind(v.args);
        try {
          const result = bound.ok ? await bound.call.run(ctx) : { status: "rejected" as const, output: "invalid arguments" };
          content = result.output;
          pushFault(faults, stepFault(state.steps, { tool: c.name, ...result }), faultCount);
        } catch (err) {
          content = `error: ${errorMessage(err)}`;
          pushFault(faults, stepFault(state.steps, { tool: c.name, status: "error", output: content }), faultCount);
        }
        if (c.name === "finish") finished = true;
      }
      out.push(new ToolMessage({ content, tool_call_id: c.id, name: c.name }));
    }
    return { messages: out, ...(finished ? { ended: "finished" } : {}) };
  };
  const graph = new StateGraph(PlainState)
    .addNode("agent", agent)
    .addNode("tools", tools)
    .addEdge(START, "agent")
    .addConditionalEdges("agent", (s) => (s.ended ? END : "tools"))
    .addConditionalEdges("tools", (s) => (s.ended ? END : "agent"))
    .compile();
  try {
    const final = await graph.invoke(
      { messages: [new SystemMessage(SYSTEM), new HumanMessage(input.task.goal)] },
      { recursionLimit: settings.maxSteps * 2 + 10, signal },
    );
    return { status: final.ended ?? "max_steps", steps: final.steps, spend, faults };
  } catch (err) {
    return { status: signal.aborted ? "interrupted" : "failed", steps: spend.calls, spend, faults, error: errorMessage(err) };
  } finally {
    await processes.stopAll().catch(() => {});
    await sandbox.closeSession?.().catch(() => null);
  }
}

/** The tool calls of an answer as LangChain carries them; arguments that are not JSON ride as invalid calls. */
function toAiMessage(content: string, calls: ToolCallRecord[]): AIMessage {
  return new AIMessage({
    content,
    tool_calls: calls.filter((c) => c.argsText === undefined).map((c) => ({ id: c.id, name: c.name, args: (c.args ?? {}) as Record<string, unknown>, type: "tool_call" as const })),
    invalid_tool_calls: calls.filter((c) => c.argsText !== undefined).map((c) => ({ id: c.id, name: c.name, args: c.argsText, error: "arguments are not JSON", type: "invalid_tool_call" as const })),
  });
}

function callsOf(m: AIMessage): ToolCallRecord[] {
  return [
    ...(m.tool_calls ?? []).map((c) => ({ id: c.id ?? "", name: c.name, args: c.args })),
    ...(m.invalid_tool_calls ?? []).map((c) => ({ id: c.id ?? "", name: c.name ?? "", argsText: c.args ?? "" })),
  ];
}

function toChat(m: BaseMessage): ChatMessage {
  const text = typeof m.content === "string" ? m.content : JSON.stringify(m.content);
  if (m instanceof SystemMessage) return { role: "system", content: text };
  if (m instanceof ToolMessage) return { role: "tool", toolCallId: m.tool_call_id, name: m.name ?? "", content: text };
  if (m instanceof AIMessage) {
    const calls = callsOf(m);
    return { role: "assistant", content: text, ...(calls.length ? { toolCalls: calls } : {}) };
  }
  return { role: "user", content: text };
}
