import http from "node:http";
import { errorMessage } from "../errors.js";
import type { Trajectory } from "../models/scripted.js";
import { errorBody, listenOnLoopback, sendCompletion, sendJson, type WireCompletion, type WireRequestBody } from "./openai-wire.js";
import { misbehavingAnswer, oracleAnswer, parseCallId, turnPlans, type Misbehaviour, type TurnPlan } from "./test-server-plan.js";

// The eval's test server (`ledgerloop eval --model test-server`): a real OpenAI-compatible HTTP
// server that plays each task's oracle trajectory the way a model would over the wire, with
// misbehaviour mixed in (test-server-plan.ts). It serves ledgerloop and the plain baseline alike,
// though they send different prompts, so it keeps nothing per connection and reads from each request:
// - the task: the one whose goal's opening is in the request (both agents show the goal);
// - the node: the tools offered (update_plan alone: plan; several: decide; none: reflect, summarize);
// - the run and the turn: from the ids of the calls already in the conversation. The server numbers
//   its calls `call_ts<run>_t<turn>_c<i>`; the newest oracle turn whose call is in the request has
//   been run, so the next one is due. A re-sent turn (a retry, a resume after a crash) is answered
//   the same way again, and a misbehaving answer (ids marked `_x`, or none) does not advance the oracle.
// The only state: which misbehaviours each run has already been shown (each is played once). A
// prompt must keep the newest answer that had the server's calls in it (the last two turns suffice).

/** A task the server can play: its goal (how requests are matched to it) and its oracle. */
export interface TestServerTask {
  id: string;
  goal: string;
  trajectory: Trajectory;
}

/** One answer the server gave, for reports and tests. */
export interface PlayedAnswer {
  task: string;
  node: "plan" | "decide" | "other";
  /** The run (numbered by the server as first seen) and oracle turn, for decide answers. */
  run?: number;
  turn?: number;
  /** oracle, parallel (several oracle turns at once), or the misbehaviour played. */
  played: "oracle" | "parallel" | Misbehaviour | "plan" | "text";
}

export interface TestServer {
  /** Base URL ending in `/v1`, what OPENAI_BASE_URL takes. */
  url: string;
  /** Every answer given, in order. */
  played: PlayedAnswer[];
  close(): Promise<void>;
}

/** The model name the server lists (any name is answered). */
export const TEST_SERVER_MODEL = "test-server";

/** How much of a goal identifies its task: enough to tell the suite's tasks apart, short enough to survive a prompt's shortening. */
const GOAL_KEY_CHARS = 160;

const squash = (s: string) => s.replace(/\s+/g, " ").trim();

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((p) => (p && typeof p === "object" && "text" in p ? String((p as { text: unknown }).text) : "")).join("\n");
  return "";
}

/** Every call id of the conversation: on the assistant's calls and on the tool results. */
function callIds(body: WireRequestBody): string[] {
  const ids: string[] = [];
  for (const m of body.messages) {
    const calls = m.tool_calls as Array<{ id?: string }> | undefined;
    for (const c of calls ?? []) if (c.id) ids.push(c.id);
    if (typeof m.tool_call_id === "string") ids.push(m.tool_call_id);
  }
  return ids;
}

/** A rough token count (4 characters a token), so the eval's token columns mean something. */
const tokens = (text: string) => Math.ceil(text.length / 4);

/** Starts the test server on a free loopback port for `tasks`, its misbehaviour drawn from `seed`. */
export async function startTestServer(tasks: TestServerTask[], opts: { seed?: number } = {}): Promise<TestServer> {
  const seed = opts.seed ?? 1;
  const keyed = tasks.map((t) => ({ task: t, key: squash(t.goal).slice(0, GOAL_KEY_CHARS), plans: turnPlans(t.trajectory, t.id, seed) }));
  for (const a of keyed) {
    const twin = keyed.find((b) => b !== a && (b.key.startsWith(a.key) || a.key.startsWith(b.key)));
    if (twin) throw new Error(`test server: tasks ${a.task.id} and ${twin.task.id} open their goals alike; a request could not tell them apart`);
  }
  const played: PlayedAnswer[] = [];
  const shown = new Set<string>();
  let runs = 0;
  let served = 0;

  const taskOf = (body: WireRequestBody) => {
    const text = squash(body.messages.map((m) => textOf(m.content)).join("\n"));
    return keyed.find((k) => text.includes(k.key)) ?? null;
  };

  function answer(body: WireRequestBody): WireCompletion | string {
    const tools = (body.tools ?? []).map((t) => t.function.name);
    const k = taskOf(body);
    if (!k) return "test server: no task of the suite has its goal in this request";
    const task = k.task;
    if (tools.length === 0) {
      // toolCallFormat "text" teaches the calls in the system prompt (models/text-tools.ts) and sends no ids back.
      if (body.messages.some((m) => m.role === "system" && textOf(m.content).includes("You act only by calling tools")))
        return "test server: it speaks native tool calls only (it tells runs apart by their call ids); run without --tool-call-format text";
      played.push({ task: task.id, node: "other", played: "text" });
      return { content: "Noted: nothing to add beyond what the run's record shows." };
    }
    if (tools.length === 1 && tools[0] === "update_plan") {
      played.push({ task: task.id, node: "plan", played: "plan" });
      const plan = task.trajectory.plan?.[0];
      if (!plan) return { content: "I will work through the task step by step." };
      return { content: plan.content ?? null, tool_calls: (plan.tool_calls ?? []).map((c, i) => ({ id: `call_plan_${served}_${i}`, name: c.name, arguments: JSON.stringify(c.args ?? {}) })) };
    }
    const ours = callIds(body)
      .map(parseCallId)
      .filter((p) => p !== null);
    // A conversation with answers in it but none of ours has lost the ids that say where it is
    // (a prompt cut down to a misbehaving answer alone): starting the oracle over would be a lie.
    if (!ours.length && body.messages.some((m) => m.role === "assistant"))
      return "test server: this conversation has answers but none of the server's call ids (call_ts…), so its run and turn are unknown; keep at least the newest answer with tool calls in the prompt";
    const run = ours.at(-1)?.run ?? ++runs;
    const done = ours.filter((p) => p.run === run && !p.bad).map((p) => p.turn);
    const turn = done.length ? Math.max(...done) + 1 : 0;
    const plan: TurnPlan = k.plans[turn] ?? { kind: "oracle" };
    if (plan.kind === "misbehave" && !shown.has(`${run}:${turn}`)) {
      shown.add(`${run}:${turn}`);
      played.push({ task: task.id, node: "decide", run, turn, played: plan.what });
      return misbehavingAnswer(plan.what, task.trajectory, run, turn);
    }
    const count = plan.kind === "parallel" ? plan.turns : 1;
    played.push({ task: task.id, node: "decide", run, turn, played: count > 1 ? "parallel" : "oracle" });
    return oracleAnswer(task.trajectory, run, turn, count);
  }

  const server = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on("data", (c: Buffer) => parts.push(c));
    req.on("end", () => {
      try {
        handle(req, res, Buffer.concat(parts).toString("utf8"));
      } catch (err) {
        if (!res.headersSent) sendJson(res, 500, errorBody(`test server failed: ${errorMessage(err)}`, "server_error"));
        else res.destroy();
      }
    });
  });

  function handle(req: http.IncomingMessage, res: http.ServerResponse, raw: string): void {
    const route = (req.url ?? "/").split("?")[0];
    if (route === "/v1/models" && req.method === "GET") {
      sendJson(res, 200, { object: "list", data: [{ id: TEST_SERVER_MODEL, object: "model", created: 0, owned_by: "ledgerloop" }] });
      return;
    }
    if (route !== "/v1/chat/completions" || req.method !== "POST") {
      sendJson(res, 404, errorBody(`test server: no route ${req.method} ${route}`, "invalid_request_error", "not_found"));
      return;
    }
    let body: WireRequestBody;
    try {
      body = JSON.parse(raw) as WireRequestBody;
      if (!Array.isArray(body.messages)) throw new Error("no messages");
    } catch (err) {
      sendJson(res, 400, errorBody(`test server: the request is not a chat completion request (${errorMessage(err)})`));
      return;
    }
    const reply = answer(body);
    const n = served++;
    if (typeof reply === "string") {
      sendJson(res, 400, errorBody(reply));
      return;
    }
    const out = textOf(reply.content) + (reply.tool_calls ?? []).map((c) => c.name + c.arguments).join("");
    const usage = { prompt_tokens: tokens(JSON.stringify(body.messages) + JSON.stringify(body.tools ?? [])), completion_tokens: tokens(out) + 1 };
    sendCompletion(res, body, { ...reply, usage }, n);
  }

  const { url, close } = await listenOnLoopback(server);
  return {
    url,
    played,
    close,
  };
}
