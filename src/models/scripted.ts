import fs from "node:fs";
import { z } from "zod";
import { ModelError, errorMessage } from "../errors.js";
import type { ModelNode } from "../state.js";
import type { ChatModel, ModelRequest, ModelResponse } from "./port.js";

export const ScriptTurn = z
  .object({
    content: z.string().optional(),
    tool_calls: z
      .array(
        z
          .object({
            name: z.string().min(1),
            // A string stands for raw argument text, which lets a script send malformed JSON.
            args: z.union([z.record(z.string(), z.unknown()), z.string()]).optional(),
            id: z.string().optional(),
          })
          .strict(),
      )
      .optional(),
    /** The usage a provider would report for this turn (tokens), so cost accounting can be exercised offline; default 0. */
    usage: z
      .object({
        inputTokens: z.number().int().nonnegative(),
        outputTokens: z.number().int().nonnegative(),
        cachedInputTokens: z.number().int().nonnegative().optional(),
      })
      .strict()
      .optional(),
  })
  .strict();
export type ScriptTurn = z.infer<typeof ScriptTurn>;

/** The public trajectory format: one list of turns per model-calling node. */
export const Trajectory = z
  .object({
    description: z.string().optional(),
    plan: z.array(ScriptTurn).optional(),
    decide: z.array(ScriptTurn).optional(),
    reflect: z.array(ScriptTurn).optional(),
    summarize: z.array(ScriptTurn).optional(),
  })
  .strict();
export type Trajectory = z.infer<typeof Trajectory>;

/** Reads and validates a trajectory file, with an error naming the file and the bad field. */
export function loadTrajectory(file: string): Trajectory {
  let raw: unknown;
  try {
    raw = JSON.parse(fs.readFileSync(file, "utf8"));
  } catch (err) {
    throw new ModelError("SCRIPT_INVALID", `cannot read trajectory ${file}: ${errorMessage(err)}`, { cause: err });
  }
  const parsed = Trajectory.safeParse(raw);
  if (!parsed.success) {
    const i = parsed.error.issues[0]!;
    throw new ModelError("SCRIPT_INVALID", `invalid trajectory ${file}: ${i.path.join(".") || "(root)"}: ${i.message}`);
  }
  return parsed.data;
}

export interface RecordedRequest {
  node: ModelNode;
  turn: number;
  messages: ModelRequest["messages"];
  toolNames: string[];
}

/**
 * Replays a trajectory. The turn to answer is the request's `turn` index, not an internal cursor,
 * so a resumed or forked run gets the same answers as an uninterrupted one. Every request is
 * recorded (in memory, and appended to `recordFile` as JSON lines when set) for tests to read.
 */
export class ScriptedModel implements ChatModel {
  readonly name: string;
  readonly requests: RecordedRequest[] = [];
  private readonly served = new Map<ModelNode, Set<number>>();

  constructor(
    readonly trajectory: Trajectory,
    opts: { name?: string; recordFile?: string } = {},
  ) {
    this.name = opts.name ?? "scripted";
    this.recordFile = opts.recordFile;
  }

  private readonly recordFile: string | undefined;

  async invoke(req: ModelRequest): Promise<ModelResponse> {
    const rec: RecordedRequest = {
      node: req.node,
      turn: req.turn,
      messages: structuredClone(req.messages),
      toolNames: req.tools.map((t) => t.name),
    };
    this.requests.push(rec);
    if (this.recordFile) fs.appendFileSync(this.recordFile, JSON.stringify(rec) + "\n");
    const list = this.trajectory[req.node];
    const turn = list?.[req.turn];
    if (!turn) return { content: "", toolCalls: [], exhausted: true };
    if (!this.served.has(req.node)) this.served.set(req.node, new Set());
    this.served.get(req.node)!.add(req.turn);
    return {
      content: turn.content ?? "",
      toolCalls: (turn.tool_calls ?? []).map((c, i) => {
        const id = c.id ?? `call_${req.node}_${req.turn}_${i}`;
        return typeof c.args === "string" ? { id, name: c.name, argsText: c.args } : { id, name: c.name, args: c.args ?? {} };
      }),
      usage: turn.usage ?? { inputTokens: 0, outputTokens: 0 },
    };
  }

  /** Turns of the script that were never requested, per node (a test fails on left-overs). */
  unusedTurns(): Partial<Record<ModelNode, number[]>> {
    const out: Partial<Record<ModelNode, number[]>> = {};
    for (const node of ["plan", "decide", "reflect", "summarize"] as const) {
      const list = this.trajectory[node] ?? [];
      const served = this.served.get(node) ?? new Set();
      const unused = list.map((_, i) => i).filter((i) => !served.has(i));
      if (unused.length) out[node] = unused;
    }
    return out;
  }
}
