import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

// Run control of the PostgreSQL queue over MCP (cancel_run, requeue_run): the same calls as
// `ledgerloop cancel` and `ledgerloop requeue`, on the state the server was started with (--state).
// A workspace's SQLite state has no queue: there the tools say what they need instead.

type Answer = (fn: () => Promise<unknown>) => Promise<CallToolResult>;

/** Registers cancel_run and requeue_run; without `stateUrl` each answers with an error naming --state. */
export function registerRunControlTools(server: McpServer, stateUrl: string | undefined, answer: Answer): void {
  const url = (tool: string): string => {
    if (stateUrl) return stateUrl;
    throw new Error(
      `${tool} works on the PostgreSQL queue the workers use; this server reads a workspace's SQLite state, which has none: start it with \`ledgerloop mcp --state postgres://… --allow-writes\` (or set LEDGERLOOP_STATE_URL)`,
    );
  };
  const thread = z.string().min(1).describe("the submitted run's thread id (see `ledgerloop threads --state …`)");
  const writes = { readOnlyHint: false, idempotentHint: false, openWorldHint: false } as const;

  server.registerTool(
    "cancel_run",
    {
      description:
        "Cancels a run of the PostgreSQL queue: a queued (or stopped) one at once; a running one is stopped by its worker at its next step boundary. " +
        "requeue_run continues it later.",
      inputSchema: { thread },
      annotations: { ...writes, destructiveHint: true },
    },
    (a) =>
      answer(async () => {
        const target = url("cancel_run");
        return (await import("../runs/run-control.js")).cancelSubmittedRun(target, a.thread);
      }),
  );

  server.registerTool(
    "requeue_run",
    {
      description:
        "Queues a failed, paused, cancelled or rewound run of the PostgreSQL queue again; a worker continues it from its last checkpoint, " +
        "or from the checkpoint given in `from` (a run that is done, too).",
      inputSchema: {
        thread,
        from: z
          .string()
          .min(1)
          .optional()
          .describe("a checkpoint id (or 6+ character prefix) of this run to continue from, as `ledgerloop history --state` lists them"),
      },
      annotations: { ...writes, destructiveHint: false },
    },
    (a) =>
      answer(async () => {
        const target = url("requeue_run");
        return (await import("../runs/run-control.js")).requeueSubmittedRun(target, a.thread, a.from !== undefined ? { from: a.from } : {});
      }),
  );
}
