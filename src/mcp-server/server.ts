import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { errorMessage } from "../errors.js";
import type { WorkspaceArgs } from "../ledger/open-state.js";
import { registerRunControlTools } from "./run-control.js";

/** Options of `ledgerloop mcp`. */
export interface MemoryServerOptions {
  workspace: string;
  stateDir?: string;
  /** record_decision, cancel_run and requeue_run are offered only when true. */
  allowWrites?: boolean;
  /** The PostgreSQL state whose queue cancel_run and requeue_run act on (`--state`). */
  stateUrl?: string;
}

/** A tool answer larger than this is cut (an MCP client puts it into a prompt). */
export const MAX_RESULT_CHARS = 200_000;

function ok(value: unknown): CallToolResult {
  let text = JSON.stringify(value, null, 1);
  if (text.length > MAX_RESULT_CHARS)
    text = text.slice(0, MAX_RESULT_CHARS) + `\n… cut at ${MAX_RESULT_CHARS} characters; narrow the query (limit, type, step)`;
  return { content: [{ type: "text", text }] };
}

/** Errors the caller can act on (unknown thread, no state, bad type) come back as a tool error, never a dropped connection. */
async function answer(fn: () => Promise<unknown>): Promise<CallToolResult> {
  try {
    return ok(await fn());
  } catch (err) {
    return { isError: true, content: [{ type: "text", text: errorMessage(err) }] };
  }
}

const thread = z.string().min(1).describe("the run id (see the `threads` tool)");

/**
 * The workspace's memory (retriever, ledger, prompts, decisions, lessons, reports) as an MCP server.
 * Each tool calls the same function as the CLI command of that name, so answers match the CLI's.
 */
export function createMemoryServer(opts: MemoryServerOptions): McpServer {
  const ws: WorkspaceArgs = { workspace: opts.workspace, ...(opts.stateDir ? { stateDir: opts.stateDir } : {}) };
  const server = new McpServer({ name: "ledgerloop", version: "0.1.0" });
  const readOnly = { readOnlyHint: true, openWorldHint: false } as const;

  server.registerTool(
    "threads",
    { description: "The runs recorded in this workspace, newest first: thread id, goal, status, origin.", inputSchema: {}, annotations: readOnly },
    () => answer(async () => (await import("../inspect/threads.js")).listThreads(ws)),
  );

  server.registerTool(
    "search",
    {
      description:
        "Hybrid search (n-grams, symbols, paths, vectors) over the workspace's code and/or its runs' ledger events. " +
        "Returns code ranges with workspace-relative paths, or events with their id, type and thread.",
      inputSchema: {
        query: z.string().min(1).describe("identifiers, words, a path fragment or a description"),
        k: z.number().int().min(1).max(100).optional().describe("how many results (default 10)"),
        scope: z.enum(["code", "events", "all"]).optional().describe("code (default), events or all"),
        thread: thread.optional().describe("only events of this run"),
      },
      annotations: readOnly,
    },
    (a) =>
      answer(async () => {
        const { searchWorkspace } = await import("../inspect/search.js");
        return searchWorkspace(a.query, {
          ...ws,
          ...(a.k ? { k: a.k } : {}),
          ...(a.scope ? { scope: a.scope } : {}),
          ...(a.thread ? { thread: a.thread } : {}),
        });
      }),
  );

  server.registerTool(
    "ledger_query",
    {
      description:
        "A run's ledger events (actions, feedback, decisions, plans, prompts, model calls, …) in append order, filtered by type, " +
        "by a workspace path they touched, by the branch ending at an event, or as the causal chain of an event.",
      inputSchema: {
        thread,
        types: z.array(z.string()).optional().describe('only these event types, e.g. ["decision", "environment_feedback"]'),
        file: z.string().optional().describe("only events about this workspace path"),
        head: z.string().optional().describe("only the branch ending at this event id"),
        chain: z.string().optional().describe("the causal chain of this event id (action → feedback → effects)"),
        limit: z.number().int().min(1).max(1000).optional().describe("only the newest N events (default 200)"),
      },
      annotations: readOnly,
    },
    (a) =>
      answer(async () => {
        const { getLedgerEvents } = await import("../inspect/ledger.js");
        const events = await getLedgerEvents(a.thread, {
          ...ws,
          ...(a.types ? { type: a.types } : {}),
          ...(a.file ? { file: a.file } : {}),
          ...(a.head ? { head: a.head } : {}),
          ...(a.chain ? { chain: a.chain } : {}),
        });
        const limit = a.limit ?? 200;
        return { total: events.length, events: events.slice(-limit) };
      }),
  );

  server.registerTool(
    "context_of_step",
    {
      description:
        "What the model saw at a decide step of a run: every piece of the prompt with its source, score and tokens, what was left out, and the messages.",
      inputSchema: {
        thread,
        step: z.number().int().min(0).optional().describe("the decide step (default: the latest)"),
        messages: z.boolean().optional().describe("include the prompt's messages (default true)"),
      },
      annotations: readOnly,
    },
    (a) =>
      answer(async () => {
        const { getContext } = await import("../inspect/context.js");
        const r = await getContext(a.thread, { ...ws, ...(a.step !== undefined ? { step: a.step } : {}) });
        return a.messages === false ? { ...r, messages: [] } : r;
      }),
  );

  server.registerTool(
    "decisions",
    { description: "The design decisions recorded on a run's current branch, oldest first.", inputSchema: { thread }, annotations: readOnly },
    (a) => answer(async () => (await import("./memory.js")).listDecisions(a.thread, ws)),
  );

  server.registerTool(
    "lessons",
    {
      description: "Long-term lessons that earlier runs in this workspace learned; all (newest first), or those relevant to a query.",
      inputSchema: { query: z.string().optional().describe("rank by relevance to this text") },
      annotations: readOnly,
    },
    (a) => answer(async () => (await import("../inspect/memory.js")).listMemory({ ...ws, ...(a.query ? { query: a.query } : {}) })),
  );

  server.registerTool(
    "report",
    {
      description: "The end-of-task report of a run: status, plan with evidence, decisions, files changed, tests, problems, lessons, tokens and cost.",
      inputSchema: { thread },
      annotations: readOnly,
    },
    (a) => answer(async () => (await import("../inspect/report.js")).getReport(a.thread, ws)),
  );

  if (opts.allowWrites) {
    server.registerTool(
      "record_decision",
      {
        description: "Records a design decision in a run's ledger (a child of its current head), redacted like every ledger event.",
        inputSchema: {
          thread,
          text: z.string().min(1).max(4000).describe("the decision and why"),
          key: z.string().min(1).max(200).optional().describe("idempotency key: the same key again returns the first decision"),
        },
        annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
      },
      (a) => answer(async () => (await import("./memory.js")).recordDecision(a.thread, a.text, { ...ws, ...(a.key ? { key: a.key } : {}) })),
    );
    registerRunControlTools(server, opts.stateUrl, answer);
  }
  return server;
}

/** Serves the workspace's memory over stdio until the client closes the connection. */
export async function serveStdio(opts: MemoryServerOptions): Promise<void> {
  // stdout carries the protocol: a library's console.log must not land in it.
  for (const k of ["log", "info", "debug"] as const) console[k] = (...a: unknown[]) => console.error(...a);
  const { StdioServerTransport } = await import("@modelcontextprotocol/sdk/server/stdio.js");
  const server = createMemoryServer(opts);
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    transport.onclose = () => resolve();
    process.stdin.once("end", () => resolve());
  });
  await server.connect(transport);
  await closed;
  await server.close();
}
