import { z } from "zod";
import { currentRunner } from "../../ledger/runs.js";
import { recallLessons } from "../../memory/lessons.js";
import type { ChatMessage } from "../../models/port.js";
import { walkFiles } from "../../workspace/files.js";
import { Subtask } from "../../state.js";
import { toolSpecs, validateToolCall, getTool } from "../tools/index.js";
import { UpdatePlanArgs } from "../tools/update-plan.js";
import { branchWriter, callModel, callSite, threadIdOf, type NodeDeps, type NodeFn } from "./deps.js";

const PLAN_PROMPT = `You plan a coding task before it is carried out with tools.
Break the goal into 2-8 concrete, verifiable subtasks in the order they should be done.
Answer by calling update_plan with every subtask (status "pending", the first one "in_progress").`;

/** A plan without a model: one subtask per bullet or numbered line of the goal, else the goal itself. */
export function deterministicPlan(goal: string): Subtask[] {
  const bullets = goal
    .split("\n")
    .map((l) => l.match(/^\s*(?:[-*•]|\d+[.)])\s+(.*\S)/)?.[1])
    .filter((l): l is string => Boolean(l));
  const items = bullets.length >= 2 ? bullets : [goal.trim().split("\n")[0]!.slice(0, 500) || "Complete the task"];
  return items.slice(0, 20).map((d, i) => ({
    id: `s${i + 1}`,
    description: d.slice(0, 2000),
    status: i === 0 ? "in_progress" : "pending",
  }));
}

function parseProposal(content: string, calls: { name: string; args?: unknown; argsText?: string; refused?: string }[]): Subtask[] | null {
  for (const c of calls) {
    if (c.name !== "update_plan") continue;
    const v = validateToolCall(c.name, c.args, c.argsText, c.refused);
    if (v.ok) return (v.args as z.infer<typeof UpdatePlanArgs>).subtasks;
  }
  // Some servers answer in plain JSON instead of a tool call.
  const json = content.match(/\{[\s\S]*\}/)?.[0];
  if (json) {
    try {
      const parsed = UpdatePlanArgs.safeParse(JSON.parse(json));
      if (parsed.success) return parsed.data.subtasks;
    } catch {
      /* not JSON: fall through */
    }
  }
  return null;
}

/**
 * Turns the goal into subtasks (model-proposed, zod-validated; deterministic when the model has no
 * answer) and records them: `task_spec` on the first plan, `plan_update` on a replan, which keeps
 * completed subtasks.
 */
export function createPlanNode(deps: NodeDeps): NodeFn {
  return async (state, config) => {
    const rt = await deps.resolve(config);
    const w = branchWriter(rt, state, config, "plan");
    const first = state.subtasks.length === 0;
    if (first) {
      // The run registers itself first thing, whatever started it (CLI, script, LangGraph server):
      // every inspection command and the viewer list it, with where its checkpoints are.
      await rt.runs.register(threadIdOf(config), rt.redactor.redact(state.goal), rt.settings, {
        origin: deps.origin ?? "script",
        checkpoints: deps.checkpoints ?? "state-db",
        runner: currentRunner(),
      });
    }
    const { files } = await walkFiles(rt.workspace, { limit: 200 });
    const store = (config.store as typeof rt.store | undefined) ?? rt.store;
    const memories = await recallLessons(store, state.goal, 8);
    const messages: ChatMessage[] = [
      { role: "system", content: PLAN_PROMPT },
      {
        role: "user",
        content: [
          `# Goal\n${state.goal}`,
          first
            ? ""
            : `# Current plan\n${state.subtasks.map((s) => `- ${s.id} (${s.status}): ${s.description}`).join("\n")}\nSome subtasks are blocked: replan them.`,
          memories.length ? `# Lessons from earlier runs in this workspace\n${memories.map((m) => `- ${m.text}`).join("\n")}` : "",
          `# Workspace files (first ${files.length})\n${files.join("\n")}`,
        ]
          .filter(Boolean)
          .join("\n\n"),
      },
    ];
    const turn = state.modelTurns.plan;
    const { response, event } = await callModel(rt, w, "plan", turn, messages, toolSpecs([getTool("update_plan")!]), {
      signal: config.signal,
      at: callSite(state),
    });
    let proposed = event ? parseProposal(response.content, response.toolCalls) : null;
    const source = proposed ? "model" : "deterministic";
    if (!proposed)
      proposed = first ? deterministicPlan(state.goal) : state.subtasks.map((s) => (s.status === "blocked" ? { ...s, status: "pending" as const } : s));
    if (!first) {
      // A replan may not silently undo finished work.
      const done = new Map(state.subtasks.filter((s) => s.status === "completed").map((s) => [s.id, s]));
      proposed = proposed.map((s) => done.get(s.id) ?? s);
    }
    const subtasks = proposed;
    // The workspace as the run found it: the revision a rewind to the start restores.
    const workspaceRev = state.workspaceRev ?? (await rt.revisions.snapshot({ label: "start" })).revId;
    if (first) {
      await w.append("spec", "task_spec", { goal: state.goal, subtasks, source, memories: memories.map((m) => m.text), revision: workspaceRev });
    } else {
      await w.append("plan", "plan_update", { subtasks, reason: `replan (${source})` });
    }
    rt.progress?.({ node: "plan", step: state.step, text: `${subtasks.length} subtask(s) (${source})` });
    return {
      workspaceRev,
      subtasks,
      needsPlan: false,
      ledgerHead: w.head,
      modelTurns: event ? { ...state.modelTurns, plan: turn + 1 } : state.modelTurns,
    };
  };
}
