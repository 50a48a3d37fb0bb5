import { z } from "zod";
import { evaluatePolicy, type PolicyContext } from "../../sandbox/policy.js";
import { describeExit, DEFAULT_READY_TIMEOUT_MS } from "../../sandbox/processes.js";
import type { ProcessEventPayload } from "../../events.js";
import { builtinTool } from "../../tool-catalogue.js";
import { defineTool, toolError, type ToolContext, type ToolEffect } from "./tool.js";

export const MAX_READY_TIMEOUT_MS = 10 * 60 * 1000;

export const StartProcessArgs = z
  .object({
    command: z.string().min(1).max(10_000).describe("A shell command line that runs until stopped (a server, a watcher), run with bash in the workspace root."),
    name: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/)
      .optional()
      .describe("A short name to refer to it later (letters, digits, . _ -); default: derived from the program."),
    readyPort: z.number().int().min(1).max(65535).optional().describe("Ready once the process listens on this TCP port."),
    readyPattern: z.string().min(1).max(500).optional().describe("Ready once a line of its output matches this regular expression."),
    readyTimeoutMs: z
      .number()
      .int()
      .min(100)
      .max(MAX_READY_TIMEOUT_MS)
      .optional()
      .describe(`How long to wait for readiness before stopping it (default ${DEFAULT_READY_TIMEOUT_MS} ms).`),
  })
  .strict();
export type StartProcessArgs = z.infer<typeof StartProcessArgs>;

/** A free default name from the command's program: `node`, `node-2`, … */
function defaultName(command: string, ctx: ToolContext): string {
  const word =
    command
      .trim()
      .split(/\s+/)
      .find((w) => !/^[A-Za-z_][A-Za-z0-9_]*=/.test(w)) ?? "process";
  const base =
    (word.split("/").pop() ?? "process")
      .replace(/[^A-Za-z0-9._-]/g, "")
      .replace(/^[._-]+/, "")
      .slice(0, 40) || "process";
  const taken = new Set(
    ctx.processes
      ?.list()
      .filter((p) => p.status === "running")
      .map((p) => p.name),
  );
  if (!taken.has(base)) return base;
  for (let i = 2; ; i++) if (!taken.has(`${base}-${i}`)) return `${base}-${i}`;
}

const event = (e: ProcessEventPayload): ToolEffect => ({ kind: "process", event: e });

/** Starts a long-lived process in the run's sandbox and waits until it is ready. */
export const startProcessTool = defineTool({
  ...builtinTool("start_process"),
  description:
    "Start a long-running process in the background (a server, a database, a watcher) in the run's sandbox, and wait " +
    "until it is ready: readyPort (TCP port listening) and/or readyPattern (an output line matches); without either, " +
    "once it has run briefly. Your later commands reach it on 127.0.0.1; it runs until stop_process or the end of the " +
    "run. Returns its name, pid, ports and first output, or why it failed with its output (a process not ready in time " +
    "is stopped). Use process_status, process_output and stop_process with its name.",
  schema: StartProcessArgs,
  // Its command may have side effects on start (migrations, files): not repeated after a crash.
  idempotent: false,
  async command(args) {
    return args.command;
  },
  async run(args, ctx) {
    if (!ctx.processes) return toolError("background processes are not available in this run", "unsupported");
    const verdict =
      ctx.checked?.command === args.command
        ? ctx.checked.verdict
        : ctx.policy
          ? evaluatePolicy(args.command, ctx.policy, { workspace: ctx.workspace, cwd: ctx.workspace, level: ctx.sandbox.level as PolicyContext["level"] })
          : null;
    if (verdict && (verdict.decision === "deny" || (verdict.decision === "ask" && !ctx.approved))) {
      const reason = verdict.decision === "ask" ? `needs approval, which it did not get: ${verdict.reason}` : verdict.reason;
      return { ...toolError(`command refused by policy (rule ${verdict.rule}): ${reason}`, "policy_denied"), command: args.command, exitCode: 126 };
    }
    const name = args.name ?? defaultName(args.command, ctx);
    const r = await ctx.processes.start({ ...args, name, tag: ctx.commandTag, cause: ctx.actionId ?? null });
    const base = { name, command: args.command, readyPort: args.readyPort, readyPattern: args.readyPattern, readyTimeoutMs: args.readyTimeoutMs };
    const lines = (l: string[]) => (l.length ? `\n--- output (last ${l.length} lines) ---\n${l.join("\n")}` : "\n(no output)");
    if (r.ok) {
      const how =
        args.readyPort !== undefined || args.readyPattern
          ? [args.readyPort !== undefined && `port ${args.readyPort} listening`, r.matched && `output matched: ${r.matched.slice(0, 200)}`]
              .filter(Boolean)
              .join(", ")
          : "still running after a short wait (no ready check given)";
      return {
        status: "ok",
        output: `started "${name}" (pid ${r.pid}, sandbox: ${ctx.sandbox.level}${r.ports.length ? `, listening on ${r.ports.join(", ")}` : ""}): ready after ${r.readyMs} ms — ${how}${lines(r.lines)}`,
        command: args.command,
        sandbox: ctx.sandbox.level,
        effects: [event({ kind: "start", ...base, pid: r.pid }), event({ kind: "ready", ...base, pid: r.pid, readyMs: r.readyMs, ports: r.ports })],
      };
    }
    if (r.code === "ready_timeout" || r.code === "exited") {
      const exit = r.exit ?? null;
      return {
        ...toolError(
          `${r.reason}${exit && r.code === "ready_timeout" ? ` (${describeExit(exit)})` : ""}${lines(r.lines)}`,
          r.code === "exited" ? "process_exited" : "ready_timeout",
        ),
        command: args.command,
        sandbox: ctx.sandbox.level,
        exitCode: exit?.exitCode ?? null,
        signal: exit?.signal ?? null,
        effects: [
          event({ kind: "start", ...base }),
          event({ kind: "failed", ...base, reason: r.reason, exitCode: exit?.exitCode ?? null, signal: exit?.signal ?? null, lastLines: r.lines.slice(-20) }),
        ],
      };
    }
    return { ...toolError(r.reason, `process_${r.code}`), command: args.command };
  },
});
