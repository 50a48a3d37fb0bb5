import { createHash } from "node:crypto";
import { interrupt, isGraphInterrupt, type LangGraphRunnableConfig } from "@langchain/langgraph";
import { PathEscapeError, errorMessage } from "../../errors.js";
import { CONFIG_FILE } from "../../config.js";
import { checkThreadConfig } from "../../ledger/governing.js";
import type { BranchWriter } from "../../ledger/writer.js";
import { evaluatePolicy, type PolicyContext, type PolicyVerdict } from "../../sandbox/policy.js";
import { describeAction } from "../../context/builder.js";
import type { Runtime } from "../../runtime.js";
import { stopLeftovers } from "../../sandbox/executor.js";
import { observeToolCall } from "../../telemetry/observer.js";
import type { LedgerEvent, PayloadOf, TaskStateValue } from "../../state.js";
import { treeSummary } from "../../workspace/snapshot.js";
import { getTool, type ToolContext } from "../tools/index.js";
import { mcpVerdict } from "../tools/mcp.js";
import { adjustVerdict } from "../tools/project.js";
import { branchWriter, type NodeDeps, type NodeFn } from "./deps.js";
import { restoreProcesses } from "./restore-processes.js";

type Feedback = PayloadOf<"environment_feedback">;

/** The name an attempt's command processes carry (`LEDGERLOOP_COMMAND`): short, and no ids leak into them. */
function tagOf(attempt: string): string {
  return `ll-${createHash("sha256").update(attempt).digest("hex").slice(0, 20)}`;
}

/**
 * `attempt` names this execution of the action: the act task that runs it. A re-run of the same task
 * after a crash has the same name (and finds the start it recorded); a run from a rewound or forked
 * checkpoint is a new task, whose files were restored to before the action, so it runs it afresh.
 */
async function execute(
  rt: Runtime,
  action: LedgerEvent<"agent_action">,
  attempt: string,
  signal?: AbortSignal,
  checked: { command: string; verdict: PolicyVerdict } | null = null,
  approved = false,
): Promise<Feedback> {
  const a = action.payload;
  const started = performance.now();
  const base = { tool: a.tool, durationMs: 0 };
  if (a.invalid) return { ...base, status: "rejected", output: a.invalid, errorClass: "invalid_call" };
  const tool = getTool(a.tool);
  if (!tool) return { ...base, status: "rejected", output: `Unknown tool "${a.tool}".`, errorClass: "invalid_call" };
  // decide recorded these arguments after they passed this schema; binding parses them into its type.
  const bound = tool.bind(a.args);
  if (!bound.ok) {
    const why = bound.issues
      .slice(0, 3)
      .map((i) => `${i.path.length ? i.path.join(".") : "(arguments)"}: ${i.message}`)
      .join("; ");
    return { ...base, status: "rejected", output: `Recorded arguments of ${a.tool} no longer match its schema: ${why}.`, errorClass: "invalid_call" };
  }
  const call = bound.call;

  const previous = await rt.ledger.actionStart(attempt);
  const commandTag = tagOf(attempt);
  // The runner died while this ran: whatever of it is still running is stopped first.
  const leftovers = previous ? await stopLeftovers(previous, commandTag) : null;
  if (previous && !tool.idempotent) {
    // Running it again could repeat a side effect, so the model is told and decides.
    return {
      ...base,
      status: "interrupted",
      output:
        `${describeAction(a.tool, a.args)} was interrupted: the runner stopped (crash or kill) while it was running, ` +
        `started at ${previous.startedAt}. It was NOT run again, because it may have side effects. ` +
        `Check the workspace state (files, test results) before deciding whether to run it again.` +
        (leftovers?.stopped ? " A leftover process of it was stopped." : "") +
        (leftovers?.running
          ? ` ${leftovers.running} of its processes could not be stopped and may still be running.`
          : " None of its processes is still running."),
      errorClass: "interrupted",
    };
  }
  const ctx: ToolContext = {
    workspace: rt.workspace,
    sandbox: rt.sandbox,
    searcher: rt.searcher,
    commandTimeoutMs: rt.settings.commandTimeoutMs,
    testTimeoutMs: rt.settings.testTimeoutMs,
    outputCapBytes: rt.settings.outputCapBytes,
    signal,
    guard: previous?.guard ?? null,
    commandTag,
    policy: rt.policy,
    checked: checked ?? undefined,
    approved,
    files: rt.revisions.tracker,
    processes: rt.processes,
    actionId: action.id,
  };
  try {
    let guard = previous?.guard ?? null;
    if (!previous) {
      guard = await call.prepare(ctx);
      await rt.ledger.markActionStarted({ actionId: attempt, pid: null, pgid: null, procStart: null, guard });
    }
    ctx.onProcessStart = (p) => rt.ledger.markActionStarted({ actionId: attempt, ...p, guard });
    const r = await call.run(ctx);
    keepWalk(rt, tool.writes, r.filesChanged);
    return {
      tool: a.tool,
      status: r.status,
      output: r.output,
      durationMs: Math.round(performance.now() - started),
      exitCode: r.exitCode,
      signal: r.signal,
      stdout: r.stdout,
      stderr: r.stderr,
      truncated: r.truncated,
      filesChanged: r.filesChanged,
      tests: r.tests,
      errorClass: r.errorClass ?? (r.status === "error" ? "tool_error" : null),
      sandbox: r.sandbox,
      command: r.command,
      stoppedBy: r.stoppedBy,
      limit: r.limit,
      usage: r.usage,
      effects: r.effects,
    };
  } catch (err) {
    rt.revisions.tracker.invalidate();
    if (isGraphInterrupt(err)) throw err;
    const denied = err instanceof PathEscapeError;
    return {
      ...base,
      durationMs: Math.round(performance.now() - started),
      status: "error",
      output: denied ? errorMessage(err) : `${a.tool} failed: ${errorMessage(err)}`,
      errorClass: denied ? "path_outside_workspace" : "tool_error",
    };
  }
}

/** Whether a background process of the run is alive (start_process). */
function backgroundRunning(rt: Runtime): boolean {
  return (rt.processes?.list() ?? []).some((p) => p.status === "running");
}

/** Keeps the step's one walk true after a tool ran: its reported writes are stat'ed again, anything else drops it. */
function keepWalk(rt: Runtime, writes: "nothing" | "reported" | undefined, changed: Feedback["filesChanged"]): void {
  // A background process may write at any moment: while one runs, no walk stays true.
  if (backgroundRunning(rt)) return rt.revisions.tracker.invalidate();
  if (writes === "nothing") return;
  if (writes === "reported" && changed) rt.revisions.tracker.touched([...changed.created, ...changed.modified, ...changed.deleted]);
  else if (writes !== "reported") rt.revisions.tracker.invalidate();
}

/** What a paused run hands the user to decide on (the interrupt's value). */
export interface ApprovalRequest {
  kind: "approval";
  actionId: string;
  tool: string;
  command: string;
  rule: string;
  reason: string;
  parts: Array<{ text: string; decision: string; rule: string; reason: string }>;
}

/** A resume value approves when it says so: `true`, "approve", or `{ decision: "approve" }`. */
export function isApproval(answer: unknown): boolean {
  if (answer === true || answer === "approve" || answer === "approved") return true;
  if (answer && typeof answer === "object") return isApproval((answer as { decision?: unknown }).decision);
  return false;
}

/**
 * Decides a command the policy wants approved, once: --approve auto/deny decide at once; "ask"
 * pauses the run with interrupt() until someone answers (the act task re-runs on resume and finds
 * what it already did). The decision is a ledger event linked to the action.
 */
async function approve(rt: Runtime, w: BranchWriter, action: LedgerEvent<"agent_action">, command: string, v: PolicyVerdict): Promise<boolean> {
  const prior = await w.find<"approval">(`approval/${action.id}`);
  if (prior) return prior.payload.decision === "approved";
  let approved: boolean;
  let by: "user" | "auto" = "auto";
  if (rt.settings.approve === "auto") approved = true;
  else if (rt.settings.approve === "deny") approved = false;
  else {
    const request: ApprovalRequest = {
      kind: "approval",
      actionId: action.id,
      tool: action.payload.tool,
      command,
      rule: v.rule,
      reason: v.reason,
      parts: v.parts.map((p) => ({ text: p.text, decision: p.decision, rule: p.rule, reason: p.reason })),
    };
    // Recorded before the pause, on the run's branch, so every reader (a CLI on a server-run thread
    // included) sees the run is waiting; the re-run on resume finds it and continues after it.
    const waiting = await w.find<"run_status">(`await/${action.id}`);
    if (waiting) w.head = waiting.id;
    else
      await w.append(`await/${action.id}`, "run_status", { status: "awaiting_approval", steps: action.payload.step, reason: command.slice(0, 500) }, action.id);
    approved = isApproval(interrupt(request));
    by = "user";
  }
  await w.append(
    `approval/${action.id}`,
    "approval",
    { actionId: action.id, command, decision: approved ? "approved" : "rejected", by, rule: v.rule, reason: v.reason },
    action.id,
  );
  rt.progress?.({ node: "act", step: action.payload.step, text: `${approved ? "approved" : "rejected"} (${by}): ${command.slice(0, 100)}` });
  return approved;
}

/**
 * True when this act task already started on its actions (a re-run after a crash): its files may be
 * ahead of the state's revision, and must not be moved back to it.
 */
export async function actRerun(rt: Runtime, state: TaskStateValue, config: LangGraphRunnableConfig): Promise<boolean> {
  const w = branchWriter(rt, state, config, "act");
  for (const id of state.pendingActions) {
    if (await rt.ledger.actionStart(w.key(`start/${id}`))) return true;
    if (await w.find(`feedback/${id}`)) return true;
  }
  return Boolean(await w.find("snapshot"));
}

/**
 * Runs the pending actions. An action that already has feedback (a re-run after a crash) is not run
 * again; an interrupted non-idempotent one gets `interrupted` feedback instead of a second run.
 */
export function createActNode(deps: NodeDeps): NodeFn {
  return async (state, config) => {
    const rt = await deps.resolve(config);
    // Nothing runs under a configuration the thread was not started with (see ledger/governing.ts).
    const thread = config.configurable?.thread_id;
    if (typeof thread === "string") await checkThreadConfig(rt.ledger, thread, rt.configSha, CONFIG_FILE);
    const w = branchWriter(rt, state, config, "act");
    // A run resumed (or rewound) to just before its actions: the processes they expect come back
    // first. Not when this task already recorded results (they were written after its own head).
    const first = state.pendingActions[0];
    if (first && !(await w.find(`feedback/${first}`))) await restoreProcesses(rt, state, w);
    // Background processes that ended on their own since the last step (the model sees them in the context).
    for (const x of rt.processes?.takeExits() ?? []) {
      await w.append(
        `process-exit/${x.name}/${x.order}`,
        "process",
        {
          kind: "exit",
          name: x.name,
          command: x.command,
          pid: x.pid,
          exitCode: x.exit?.exitCode ?? null,
          signal: x.exit?.signal ?? null,
          lastLines: x.lastLines,
        },
        x.cause,
      );
    }
    // A walk made after this point (by a command of this step) is the one the step's revision reads.
    const walkSeq = rt.revisions.tracker.seq;
    for (const id of state.pendingActions) {
      const action = (await rt.ledger.get(id)) as LedgerEvent<"agent_action"> | null;
      if (!action || action.type !== "agent_action") throw new Error(`pending action ${id} is not in the ledger`);
      let approved = false;
      let checked: { command: string; verdict: PolicyVerdict } | null = null;
      const tool = getTool(action.payload.tool);
      const bound = !action.payload.invalid && tool?.runsCommand ? tool.bind(action.payload.args) : null;
      if (bound?.ok && !(await w.find(`feedback/${id}`))) {
        // Approval comes before the start marker: a paused command has not started.
        const command = await bound.call.command({ workspace: rt.workspace }).catch(() => null);
        if (command) {
          // A project tool's `approve` adjusts the policy's verdict (tools/project.ts).
          // An MCP tool has no command line to judge: its configured `approve` decides (agent/tools/mcp.ts).
          const v =
            mcpVerdict(tool) ??
            adjustVerdict(
              tool,
              evaluatePolicy(command, rt.policy, { workspace: rt.workspace, cwd: rt.workspace, level: rt.sandbox.level as PolicyContext["level"] }),
            );
          checked = { command, verdict: v };
          if (v.decision === "ask") approved = await approve(rt, w, action, command, v);
        }
      }
      const { event: fb, reused } = await w.once(
        `feedback/${id}`,
        "environment_feedback",
        async () => {
          const p = await observeToolCall({ tool: action.payload.tool, actionId: id, ...(tool ? { risk: tool.risk } : {}) }, () =>
            execute(rt, action, w.key(`start/${id}`), config.signal, checked, approved),
          );
          // PostgreSQL state: the files as this action left them, before its feedback is recorded,
          // so a worker on another machine never continues from a "done" action without its effects.
          if (!rt.revisionReplica || tool?.writes === "nothing") return p;
          if (backgroundRunning(rt)) rt.revisions.tracker.invalidate();
          return { ...p, revision: (await rt.revisions.snapshot({ label: `step ${state.step}, after ${action.payload.tool}` })).revId };
        },
        id,
      );
      // Decisions are recorded here, with the action; plan changes need evidence and are judged by observe.
      for (const [j, effect] of (fb.payload.effects ?? []).entries()) {
        if (effect.kind === "decision") {
          await w.append(`effect/${id}/${j}`, "decision", { text: effect.text, step: action.payload.step }, id);
        } else if (effect.kind === "process") {
          await w.append(`effect/${id}/${j}`, "process", effect.event, id);
        }
      }
      const p = fb.payload;
      const detail = p.tests ? ` (${p.tests.passed} passed, ${p.tests.failed} failed)` : p.errorClass ? ` (${p.errorClass})` : "";
      rt.progress?.({
        node: "act",
        step: state.step,
        text: `${describeAction(action.payload.tool, action.payload.args)} → ${p.status}${detail}${reused ? " [recorded before restart]" : ""}`,
      });
    }
    // The workspace as this step left it, shell-made changes included: the revision a rewind to any
    // later checkpoint restores. Taken here, so the checkpoint after act already names it.
    // Background processes may have written since the last walk: then the revision walks afresh.
    if (backgroundRunning(rt)) rt.revisions.tracker.invalidate();
    const snap = await rt.revisions.snapshot({ label: `step ${state.step}`, reuseWalkAfter: walkSeq });
    const c = snap.changed;
    const changed = c.created.length + c.modified.length + c.deleted.length > 0;
    const files = c.created.length + c.deleted.length > 0 ? [...snap.files.keys()] : null;
    await w.append("snapshot", "workspace_snapshot", {
      kind: "light",
      changed: c,
      revision: snap.revId,
      ...(files ? { fileCount: files.length, tree: treeSummary(files) } : {}),
    });
    // The next context searches the code as this step left it.
    if (changed) await rt.retriever?.refresh([...c.created, ...c.modified, ...c.deleted]).catch(() => {});
    return { ledgerHead: w.head, workspaceRev: snap.revId };
  };
}
