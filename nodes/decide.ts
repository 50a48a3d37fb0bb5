import type { ChatMessage } from "../src/models/port.js";
import type { LedgerEvent } from "../src/state.js";
import { describeAction } from "../src/context/builder.js";
import { toolSpecs, validateToolCall } from "../tools/index.js";
import { branchWriter, callModel, type NodeDeps, type NodeFn } from "./deps.js";

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
    const { response, event } = await callModel(rt, w, "decide", turn, messages, toolSpecs(), {
      promptRef: ctx.payload.promptRef,
      signal: config.signal,
    });
    if (!event) {
      rt.progress?.({ node: "decide", step: state.step + 1, text: "script exhausted: no decide turn left" });
      return { status: "script_exhausted", ledgerHead: w.head, contextId: null };
    }
    const step = state.step + 1;
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
      text: response.toolCalls.length
        ? response.toolCalls.map((c) => describeAction(c.name, c.args)).join(", ")
        : `no tool call (${response.content.slice(0, 80)})`,
    });
    return {
      step,
      modelTurns: { ...state.modelTurns, decide: turn + 1 },
      pendingActions: pending,
      ledgerHead: w.head,
      contextId: null,
    };
  };
}
