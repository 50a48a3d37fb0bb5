import type { ChatMessage } from "../../models/port.js";
import type { LedgerEvent } from "../../state.js";
import { buildPrompt, describeAction } from "../../context/builder.js";
import { ContextBudgetError } from "../../context/budget.js";
import { ModelError } from "../../errors.js";
import type { BranchWriter } from "../../ledger/writer.js";
import type { Runtime } from "../../runtime.js";
import type { TaskStateValue } from "../../state.js";
import { toolSpecs, validateToolCall } from "../tools/index.js";
import type { LangGraphRunnableConfig } from "@langchain/langgraph";
import { promptSources } from "./context.js";
import { branchWriter, callModel, callSite, spendNote, threadIdOf, type NodeDeps, type NodeFn } from "./deps.js";

/**
 * Asks the model for the next actions. Every call is validated and written to the ledger as an
 * `agent_action` before anything runs (write-ahead); an invalid call is recorded with its error and
 * becomes error feedback for the model instead of an exception.
 */
export function createDecideNode(deps: NodeDeps): NodeFn {
  return async (state, config) => {
    const rt = await deps.resolve(config);
    const w = branchWriter(rt, state, config, "decide");
    const ctx = state.contextId ? ((await rt.ledger.get(state.contextId)) as LedgerEvent<"context_built"> | null) : null;
    if (!ctx) throw new Error(`decide needs a context_built event (contextId ${state.contextId} not found)`);
    const blob = await rt.ledger.getBlob(ctx.payload.promptRef);
    if (blob === null) throw new Error(`prompt blob ${ctx.payload.promptRef} is missing from the ledger`);
    const messages = JSON.parse(blob) as ChatMessage[];
    const turn = state.modelTurns.decide;
    const ask = (msgs: ChatMessage[], promptRef: string, key?: string) =>
      callModel(rt, w, "decide", turn, msgs, toolSpecs(), { promptRef, signal: config.signal, key, at: callSite(state, state.step + 1) });
    let answer: Awaited<ReturnType<typeof ask>>;
    // After a crash past the retry, the smaller prompt is the one that was answered.
    const retried = await w.find<"context_built">("context-retry");
    if (retried)
      answer = await ask(JSON.parse((await rt.ledger.getBlob(retried.payload.promptRef)) ?? "[]") as ChatMessage[], retried.payload.promptRef, "model-retry");
    else {
      try {
        answer = await ask(messages, ctx.payload.promptRef);
      } catch (err) {
        if (!(err instanceof ModelError && err.code === "MODEL_CONTEXT_LENGTH")) throw err;
        // The model's window is smaller than the budget assumed: compact to 70% of this prompt, retry once.
        const smaller = await compactForRetry(rt, state, config, ctx, w);
        rt.progress?.({
          node: "decide",
          step: state.step + 1,
          text: `prompt over the model's context window: compacted to ${smaller.tokens} tokens, retrying once`,
        });
        answer = await ask(smaller.messages, smaller.promptRef, "model-retry");
      }
    }
    const { response, event } = answer;
    if (!event) {
      rt.progress?.({ node: "decide", step: state.step + 1, text: "script exhausted: no decide turn left" });
      return { status: "script_exhausted", ledgerHead: w.head, contextId: null };
    }
    const step = state.step + 1;
    if (response.toolCalls.length === 0) return noToolCall(rt, state, step, turn, w.head, response.content, await spendNote(rt, threadIdOf(config), event));
    const pending: string[] = [];
    for (const [i, call] of response.toolCalls.entries()) {
      const v = validateToolCall(call.name, call.args, call.argsText, call.refused);
      const key = w.key(`action/${i}`);
      const action = await w.append(
        `action/${i}`,
        "agent_action",
        {
          tool: call.name,
          // The arguments as validated (a JSON string parsed, "" as {}): what act runs the tool with.
          args: v.ok ? v.args : call.args,
          argsText: call.argsText,
          callId: call.id,
          step,
          idempotencyKey: key,
          idempotent: v.ok ? v.tool.idempotent : true,
          invalid: v.ok ? undefined : v.error,
        },
        event.id,
      );
      pending.push(action.id);
    }
    rt.progress?.({
      node: "decide",
      step,
      text: response.toolCalls.map((c) => describeAction(c.name, c.args)).join(", ") + (await spendNote(rt, threadIdOf(config), event)),
    });
    return {
      step,
      modelTurns: { ...state.modelTurns, decide: turn + 1 },
      proseStreak: 0,
      pendingActions: pending,
      ledgerHead: w.head,
      contextId: null,
    };
  };
}

/**
 * An answer without a tool call (prose, empty, null) is a step like any other, so `maxSteps` bounds
 * model calls whatever the model says. The next prompt tells the model why nothing happened (the
 * nudge in the turn log); `proseStreakLimit` such answers in a row stop the run as `no_progress`,
 * which a resume continues (see resumeStopped in the run driver).
 */
function noToolCall(
  rt: Runtime,
  state: TaskStateValue,
  step: number,
  turn: number,
  head: string | null,
  content: string,
  spend: string,
): Partial<TaskStateValue> {
  const proseStreak = state.proseStreak + 1;
  const limit = rt.settings.proseStreakLimit;
  const status = step >= rt.settings.maxSteps ? "max_steps" : proseStreak >= limit ? "no_progress" : "running";
  const endReason =
    status === "no_progress"
      ? `the model answered without a tool call ${proseStreak} times in a row (proseStreakLimit ${limit})`
      : status === "max_steps"
        ? `reached maxSteps (${rt.settings.maxSteps}); the last answer had no tool call`
        : null;
  const said = content.trim() ? content.trim().slice(0, 80) : "an empty answer";
  rt.progress?.({ node: "decide", step, text: `no tool call (${said})${status === "running" ? ` [${proseStreak}/${limit}]` : `: ${status}`}${spend}` });
  return {
    step,
    status,
    endReason,
    proseStreak,
    modelTurns: { ...state.modelTurns, decide: turn + 1 },
    pendingActions: [],
    ledgerHead: head,
    contextId: null,
  };
}

/**
 * A compaction under a budget of 70% of the refused prompt, recorded as its own context_built (the
 * next context extends it, so the smaller budget holds for the rest of the run).
 */
async function compactForRetry(rt: Runtime, state: TaskStateValue, config: LangGraphRunnableConfig, ctx: LedgerEvent<"context_built">, w: BranchWriter) {
  const { event } = await w.once("context-retry", "context_built", async () => {
    const sources = promptSources(rt, state, config);
    const build = (budgetTokens: number) => buildPrompt({ ...sources, previous: null, budgetTokens });
    // As small as the fixed part allows, from 70% of the refused prompt up.
    let budgetTokens = 0;
    let built: Awaited<ReturnType<typeof build>> | undefined;
    for (const share of [0.7, 0.85, 0.95]) {
      budgetTokens = Math.max(1000, Math.floor(Math.min(ctx.payload.tokens, ctx.payload.budget) * share));
      try {
        built = await build(budgetTokens);
        break;
      } catch (err) {
        if (!(err instanceof ContextBudgetError) || share === 0.95) throw err;
      }
    }
    if (!built) throw new Error("unreachable: no retry budget tried");
    return {
      step: state.step + 1,
      promptRef: await rt.ledger.putBlob(JSON.stringify(rt.redactor.redactDeep(built.messages))),
      tokens: built.tokens,
      budget: budgetTokens,
      items: built.items,
      omitted: built.omitted,
      layout: { ...built.layout, reason: "context length" },
      ...(sources.eventSearcher.record ? { recall: sources.eventSearcher.record } : {}),
    };
  });
  const blob = (await rt.ledger.getBlob(event.payload.promptRef)) ?? "[]";
  return { messages: JSON.parse(blob) as ChatMessage[], promptRef: event.payload.promptRef, tokens: event.payload.tokens };
}
