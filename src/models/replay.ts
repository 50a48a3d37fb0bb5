import type { Ledger } from "../ledger/port.js";
import type { LedgerEvent } from "../state.js";
import type { ChatModel, ModelRequest, ModelResponse } from "./port.js";

/**
 * Answers each request with the response recorded in a run's ledger for the same node and turn:
 * a replay makes no model call at all. A turn the original run never took comes back as
 * `exhausted`, and is counted as a miss (the replay has left the recorded path).
 */
export class ReplayModel implements ChatModel {
  readonly name: string;
  readonly served: Array<{ node: string; turn: number }> = [];
  readonly misses: Array<{ node: string; turn: number }> = [];

  private constructor(
    private readonly recorded: Map<string, LedgerEvent<"model_call">>,
    source: string,
  ) {
    this.name = `replay:${source}`;
  }

  /** Loads every model response on the branch ending at `head`. */
  static async fromLedger(ledger: Ledger, head: string, source: string): Promise<ReplayModel> {
    const calls = (await ledger.branch(head, { types: ["model_call"] })) as LedgerEvent<"model_call">[];
    return new ReplayModel(new Map(calls.map((c) => [`${c.payload.node}:${c.payload.turn}`, c])), source);
  }

  async invoke(req: ModelRequest): Promise<ModelResponse> {
    const hit = this.recorded.get(`${req.node}:${req.turn}`);
    if (!hit) {
      this.misses.push({ node: req.node, turn: req.turn });
      return { content: "", toolCalls: [], exhausted: true };
    }
    this.served.push({ node: req.node, turn: req.turn });
    return { content: hit.payload.content, toolCalls: hit.payload.toolCalls, usage: hit.payload.usage };
  }
}
