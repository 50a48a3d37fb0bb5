import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";
import type { CheckpointTuple } from "@langchain/langgraph-checkpoint";
import { CliError, threadDeleted } from "../errors.js";
import { copyBranch, remapIds } from "../ledger/copy.js";
import { ReplayModel } from "../models/replay.js";
import { answerMcpFromRecording } from "../agent/tools/mcp.js";
import { createRuntime, type Runtime } from "../runtime.js";
import type { LedgerEvent, TaskStateValue } from "../state.js";
import { createCodingAgent, recursionLimitFor } from "../agent/graph.js";
import { pickCheckpoint, TimeTravelError } from "./time-travel-error.js";

export { TimeTravelError } from "./time-travel-error.js";

type Values = TaskStateValue;

/** What time travel on the stored state needs: a runtime has these, and so has a bare PostgreSQL state (requeue --from). */
export type StatePorts = Pick<Runtime, "checkpointer" | "ledger">;

/** Every checkpoint of a thread, newest first. */
export async function checkpointsOf(rt: StatePorts, thread: string): Promise<CheckpointTuple[]> {
  const out: CheckpointTuple[] = [];
  for await (const t of rt.checkpointer.list({ configurable: { thread_id: thread } })) out.push(t);
  return out;
}

/** The checkpoint of a thread named by its id or a unique prefix (6+ characters). */
export async function resolveCheckpoint(rt: StatePorts, thread: string, idOrPrefix: string): Promise<CheckpointTuple> {
  return pickCheckpoint(await checkpointsOf(rt, thread), (t) => t.checkpoint.id, thread, idOrPrefix);
}

const valuesOf = (t: CheckpointTuple) => t.checkpoint.channel_values as unknown as Values;

/**
 * The workspace revision of a checkpoint. Checkpoints before the first plan have none recorded;
 * they get the revision the run started from (recorded in its task_spec).
 */
export async function revisionOf(rt: StatePorts, thread: string, t: CheckpointTuple): Promise<string> {
  const own = valuesOf(t).workspaceRev;
  if (own) return own;
  const spec = (await rt.ledger.list(thread, { types: ["task_spec"] }))[0] as LedgerEvent<"task_spec"> | undefined;
  if (!spec?.payload.revision) throw new TimeTravelError("NO_REVISION", `thread ${thread} has no workspace revision recorded yet`);
  return spec.payload.revision;
}

/**
 * Makes a revision local before it is restored, copied or diffed. On a PostgreSQL state the step that
 * took it may have run on another machine, or in another copy of the workspace: it is then pulled
 * from the replica (each object checked against its hash). On SQLite there is no replica and the
 * local store is the only one.
 */
async function haveRevision(rt: Runtime, revision: string): Promise<void> {
  await rt.revisionReplica?.ensure(rt.revisions, revision);
}

/** Refuses (or with force, first saves as a revision) edits made to the workspace outside the run. */
async function guardForeignEdits(rt: Runtime, force: boolean, what: string): Promise<string | null> {
  const st = await rt.revisions.status();
  if (st.clean) return null;
  const list = [...st.created.map((f) => `+${f}`), ...st.modified.map((f) => `~${f}`), ...st.deleted.map((f) => `-${f}`)];
  if (!force) {
    throw new TimeTravelError(
      "FOREIGN_EDITS",
      `the workspace has edits made outside the run since its last revision (${list.slice(0, 8).join(" ")}${list.length > 8 ? " …" : ""}); ${what} would overwrite them. Use --force to save them as a revision first.`,
    );
  }
  return (await rt.revisions.snapshot({ label: `saved before ${what}` })).revId;
}

export interface RewindResult {
  thread: string;
  /** The new head checkpoint (a child of the target, so the abandoned branch stays inspectable). */
  checkpointId: string;
  fromCheckpoint: string | null;
  toCheckpoint: string;
  revision: string;
  savedRevision: string | null;
  restored: { created: string[]; modified: string[]; deleted: string[] };
}

/**
 * Moves a run back to a checkpoint as one consistent step: the workspace files become that
 * checkpoint's revision, the ledger continues on that checkpoint's branch (with a `time_travel`
 * event), and the graph's head becomes a fork of that checkpoint, so `resume` continues from there.
 */
export async function rewind(rt: Runtime, thread: string, to: string, opts: { force?: boolean } = {}): Promise<RewindResult> {
  const target = await resolveCheckpoint(rt, thread, to);
  const latest = (await checkpointsOf(rt, thread))[0] ?? null;
  const revision = await revisionOf(rt, thread, target);
  await haveRevision(rt, revision);
  const saved = await guardForeignEdits(rt, opts.force ?? false, "the rewind");
  const restored = await rt.revisions.restore(revision);
  // Search must see the files as they are on the branch the run continues on.
  await rt.retriever?.refresh([...restored.created, ...restored.modified, ...restored.deleted]).catch(() => {});
  return {
    thread,
    checkpointId: await moveHead(rt, thread, target, latest, revision, saved),
    fromCheckpoint: latest?.checkpoint.id ?? null,
    toCheckpoint: target.checkpoint.id,
    revision,
    savedRevision: saved,
    restored: { created: restored.created, modified: restored.modified, deleted: restored.deleted },
  };
}

/**
 * The state side of a rewind: the ledger continues on the target's branch (a `time_travel` event)
 * and the graph's head becomes a fork of the target. The files are left alone: whoever runs the
 * thread next is moved to that revision (rewind does it itself; a worker's first node does on requeue --from).
 * Returns the new head checkpoint's id.
 */
export async function moveHead(
  ports: StatePorts,
  thread: string,
  target: CheckpointTuple,
  latest: CheckpointTuple | null,
  revision: string,
  savedRevision: string | null,
): Promise<string> {
  const ev = await ports.ledger.append({
    threadId: thread,
    parentId: valuesOf(target).ledgerHead ?? null,
    type: "time_travel",
    payload: { kind: "rewind", fromThread: thread, fromCheckpoint: latest?.checkpoint.id ?? null, toCheckpoint: target.checkpoint.id, revision, savedRevision },
  });
  // updateState runs no node: the graph needs the checkpointer only.
  const agent = createCodingAgent({
    checkpointer: ports.checkpointer,
    resolve: async () => {
      throw new Error("moving a run's head runs no node");
    },
  });
  const cfg = await agent.updateState(target.config, { ledgerHead: ev.id, workspaceRev: revision });
  return String(cfg.configurable?.checkpoint_id);
}

export interface ForkResult {
  thread: string;
  fromThread: string;
  fromCheckpoint: string;
  workspace: string;
  stateDir: string;
  checkpointId: string;
  revision: string;
}

/**
 * Starts a new thread from a checkpoint of another. With `workspace`, the fork gets its own copy of
 * the files (that checkpoint's revision) and its own state database; without, it shares the
 * workspace, whose files are set to that revision. The original thread is not changed either way.
 */
export async function fork(
  rt: Runtime,
  thread: string,
  at: string,
  opts: { newThread?: string; workspace?: string; force?: boolean; runtime?: (workspace: string, thread: string) => Promise<Runtime> } = {},
): Promise<ForkResult & { runtime: Runtime }> {
  const target = await resolveCheckpoint(rt, thread, at);
  const revision = await revisionOf(rt, thread, target);
  const newThread = opts.newThread ?? `${thread}-fork-${randomBytes(3).toString("hex")}`;
  await haveRevision(rt, revision);
  let dest = rt;
  if (opts.workspace) {
    const dir = path.resolve(opts.workspace);
    if (fs.existsSync(dir) && fs.readdirSync(dir).length > 0) {
      throw new CliError(`${dir} exists and is not empty; give a new directory to --workspace`, 2, "CONFIG_INVALID");
    }
    fs.mkdirSync(dir, { recursive: true });
    // The new workspace is written from here on: its writer's lease first, so a second fork or
    // replay into the same directory is refused instead of interleaving.
    dest = opts.runtime
      ? await opts.runtime(dir, newThread)
      : await createRuntime(
          { ...rt.settings, workspace: dir, stateDir: undefined, vectorLine: newThread },
          { model: rt.model, lease: { command: "fork", thread: newThread } },
        );
    await rt.revisions.copyTo(revision, dest.workspace, { into: dest.revisions });
  } else {
    await guardForeignEdits(rt, opts.force ?? false, "the fork");
    const restored = await rt.revisions.restore(revision);
    await rt.retriever?.refresh([...restored.created, ...restored.modified, ...restored.deleted]).catch(() => {});
  }
  if (await dest.runs.hasCheckpoints(newThread)) {
    throw new CliError(`thread "${newThread}" already exists`, 1, "THREAD_EXISTS");
  }
  if ((await dest.ledger.deletedThreads()).includes(newThread)) throw threadDeleted(newThread);
  const values = valuesOf(target);
  const ids = await copyBranch(rt.ledger, values.ledgerHead, dest.ledger, newThread);
  const ev = await dest.ledger.append({
    threadId: newThread,
    parentId: values.ledgerHead ? (ids.get(values.ledgerHead) ?? null) : null,
    type: "time_travel",
    payload: {
      kind: "fork",
      fromThread: thread,
      fromCheckpoint: target.checkpoint.id,
      toCheckpoint: target.checkpoint.id,
      revision,
      workspace: dest.workspace,
    },
  });
  // The checkpoint itself is copied, so the fork's next node is exactly the original's; the state
  // is then pointed at the fork's own copies of the ledger events.
  await dest.checkpointer.put(
    { configurable: { thread_id: newThread, checkpoint_ns: "" } },
    target.checkpoint,
    { ...target.metadata, source: "fork" } as never,
    // Every channel is new to the fork's thread (PostgresSaver stores only the versions named here).
    target.checkpoint.channel_versions,
  );
  const agent = createCodingAgent({ runtime: dest });
  const mapped = remapIds(values, ids);
  const cfg = await agent.updateState(
    { configurable: { thread_id: newThread, checkpoint_ns: "", checkpoint_id: target.checkpoint.id } },
    {
      ledgerHead: ev.id,
      workspaceRev: revision,
      contextId: mapped.contextId ?? null,
      pendingActions: mapped.pendingActions ?? [],
      subtasks: mapped.subtasks ?? [],
    },
  );
  const saved = await rt.runs.get(thread);
  // The fork is the root of a new revision line: on a shared Chroma its vectors stay apart from the
  // original's (retrieval/collection-naming.ts), and a resume of it keeps that line.
  await dest.runs.register(newThread, saved?.goal ?? values.goal, {
    ...(saved?.settings ?? rt.settings),
    workspace: dest.workspace,
    stateDir: dest.stateDir,
    vectorLine: newThread,
  });
  return {
    thread: newThread,
    fromThread: thread,
    fromCheckpoint: target.checkpoint.id,
    workspace: dest.workspace,
    stateDir: dest.stateDir,
    checkpointId: String(cfg.configurable?.checkpoint_id),
    revision,
    runtime: dest,
  };
}

/** File changes between the workspace revisions of two checkpoints. */
export async function diffCheckpoints(rt: Runtime, thread: string, from: string, to: string, opts: { stat?: boolean } = {}) {
  const a = await revisionOf(rt, thread, await resolveCheckpoint(rt, thread, from));
  const b = await revisionOf(rt, thread, await resolveCheckpoint(rt, thread, to));
  await haveRevision(rt, a);
  await haveRevision(rt, b);
  return opts.stat ? { from: a, to: b, stat: await rt.revisions.diff(a, b, { stat: true }) } : { from: a, to: b, diff: await rt.revisions.diff(a, b) };
}

export interface Divergence {
  step: number;
  tool: string;
  field: string;
  recorded: unknown;
  replayed: unknown;
}

export interface ReplayResult {
  thread: string;
  fromThread: string;
  fromCheckpoint: string;
  workspace: string;
  status: string;
  recordedStatus: string;
  steps: number;
  /** Model responses served from the ledger; real model calls are always zero. */
  replayedTurns: number;
  modelCalls: 0;
  divergences: Divergence[];
}

/**
 * What replay compares of a tool result: outcome, tests, files changed and the output with what
 * varies between two honest runs taken out (the workspace path, durations, wall-clock times).
 */
export function comparable(e: LedgerEvent<"environment_feedback">, ws: string | string[]): Record<string, unknown> {
  const p = e.payload;
  // Longest first: one workspace path may be a prefix of another.
  const paths = [...new Set(typeof ws === "string" ? [ws] : ws)].filter(Boolean).sort((a, b) => b.length - a.length);
  const norm = (s: string | undefined) =>
    paths
      .reduce((out, w) => out.split(w).join("WS"), s ?? "")
      .replace(/\(\d+\.\d\d s, sandbox/g, "(T s, sandbox")
      .replace(/duration_ms:? [\d.]+/g, "duration_ms T")
      // Wall-clock times a command printed (ISO 8601, `date`, log prefixes) differ on every run.
      .replace(/\b\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:?\d\d)?/g, "DATETIME")
      .replace(/\b(Mon|Tue|Wed|Thu|Fri|Sat|Sun) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +\d+ \d\d:\d\d:\d\d( [A-Z]{2,5})? \d{4}\b/g, "DATETIME")
      .replace(/\b\d\d:\d\d:\d\d(\.\d+)?\b/g, "TIME")
      .replace(/\d+(\.\d+)?\s?m?s\b/g, "T");
  return {
    status: p.status,
    exitCode: p.exitCode ?? null,
    errorClass: p.errorClass ?? null,
    tests: p.tests ? { passed: p.tests.passed, failed: p.tests.failed, skipped: p.tests.skipped, failedTests: p.tests.failedTests } : null,
    filesChanged: p.filesChanged ?? null,
    output: norm(p.output),
  };
}

/** Feedback of a branch keyed by "step/index of the call in that step". */
async function feedbackBySlot(rt: Runtime, head: string): Promise<Map<string, LedgerEvent<"environment_feedback">>> {
  const events = await rt.ledger.branch(head, { types: ["agent_action", "environment_feedback"] });
  const actions = new Map(events.filter((e) => e.type === "agent_action").map((e) => [e.id, e as LedgerEvent<"agent_action">]));
  const out = new Map<string, LedgerEvent<"environment_feedback">>();
  for (const e of events) {
    if (e.type !== "environment_feedback" || !e.causedBy) continue;
    const a = actions.get(e.causedBy);
    if (!a) continue;
    const index = a.idempotencyKey?.split("/action/")[1] ?? "0";
    out.set(`${a.payload.step}/${index}`, e as LedgerEvent<"environment_feedback">);
  }
  return out;
}

/**
 * Re-runs a thread from one of its checkpoints (default: its first) in a scratch copy of that
 * checkpoint's workspace, with every model response taken from the ledger: no model is called.
 * Each tool result is compared with the recorded one; differences are reported by step.
 */
export async function replay(rt: Runtime, thread: string, opts: { from?: string; workspace?: string } = {}): Promise<ReplayResult & { runtime: Runtime }> {
  const all = await checkpointsOf(rt, thread);
  if (!all.length) throw new TimeTravelError("CHECKPOINT_NOT_FOUND", `thread ${thread} has no checkpoints`);
  const latest = all[0]!;
  const start = opts.from ? await resolveCheckpoint(rt, thread, opts.from) : all.at(-1)!;
  const recordedHead = valuesOf(latest).ledgerHead;
  if (!recordedHead) throw new TimeTravelError("CHECKPOINT_NOT_FOUND", `thread ${thread} has no recorded history to replay`);
  const model = await ReplayModel.fromLedger(rt.ledger, recordedHead, thread);
  const workspace = opts.workspace ?? fs.mkdtempSync(path.join(os.tmpdir(), "ledgerloop-replay-"));
  if (!opts.workspace) fs.rmSync(workspace, { recursive: true });
  const forked = await fork(rt, thread, start.checkpoint.id, {
    newThread: `${thread}-replay-${randomBytes(3).toString("hex")}`,
    workspace,
    // The tools must see what they saw in the recording: same retrieval settings as the original run.
    runtime: async (dir, newThread) => {
      const saved = (await rt.runs.get(thread))?.settings;
      const retrieval = {
        retrieval: saved?.retrieval ?? rt.settings.retrieval,
        vectors: saved?.vectors ?? rt.settings.vectors,
        embedder: saved?.embedder ?? rt.settings.embedder,
      };
      // Its state is the scratch workspace's own SQLite database, also for a run on PostgreSQL: a
      // replay is a check, not a run of the shared database (what it copies is read through the ports).
      return createRuntime(
        { ...rt.settings, ...retrieval, workspace: dir, stateDir: undefined, stateUrl: undefined, model: model.name },
        { model, summaryModel: model, progress: rt.progress, lease: { command: "replay", thread: newThread }, localState: true },
      );
    },
  });
  const dest = forked.runtime;
  // MCP calls are answered from the recording: no server is started (agent/tools/mcp.ts).
  answerMcpFromRecording(dest, { ledger: rt.ledger, head: recordedHead });
  const agent = createCodingAgent({ runtime: dest });
  const config = { configurable: { thread_id: forked.thread }, recursionLimit: recursionLimitFor(dest.settings.maxSteps), durability: "sync" as const };
  await agent.invoke(null, config);
  const final = (await agent.getState(config)).values as Values;
  const recorded = await feedbackBySlot(rt, recordedHead);
  const replayed = await feedbackBySlot(dest, final.ledgerHead!);
  const divergences: Divergence[] = [];
  const slots = [...new Set([...recorded.keys(), ...replayed.keys()])].sort((a, b) => {
    const [sa, ia] = a.split("/").map(Number);
    const [sb, ib] = b.split("/").map(Number);
    return sa! - sb! || ia! - ib!;
  });
  const startStep = valuesOf(start).step ?? 0;
  // Results from before the starting checkpoint were copied into the replay's ledger, not produced
  // by it: comparing them would only compare a copy (whose output still names the original
  // workspace, which the replay side's normalisation does not know) with itself.
  const startHead = valuesOf(start).ledgerHead;
  const recordedWorkspaces = [(await rt.runs.get(thread))?.settings.workspace ?? "", rt.workspace];
  const copied = startHead ? new Set((await feedbackBySlot(rt, startHead)).keys()) : new Set<string>();
  for (const slot of slots) {
    const step = Number(slot.split("/")[0]);
    if (copied.has(slot)) continue;
    if (step <= startStep && !replayed.has(slot)) continue; // before the replay's starting point
    const r = recorded.get(slot);
    const p = replayed.get(slot);
    if (!r || !p) {
      divergences.push({
        step,
        tool: (r ?? p)!.payload.tool,
        field: r ? "missing in replay" : "not in the recording",
        recorded: r?.payload.tool ?? null,
        replayed: p?.payload.tool ?? null,
      });
      continue;
    }
    // The recording names the workspace it ran in (its registered one; on a queue, a worker's
    // clone), not the one this command was started in: a run made elsewhere would diverge everywhere.
    const a = comparable(r, recordedWorkspaces);
    const b = comparable(p, dest.workspace);
    for (const k of Object.keys(a)) {
      if (JSON.stringify(a[k]) !== JSON.stringify(b[k])) divergences.push({ step, tool: r.payload.tool, field: k, recorded: a[k], replayed: b[k] });
    }
  }
  const recordedStatus = valuesOf(latest).status;
  if (final.status !== recordedStatus) divergences.push({ step: final.step, tool: "-", field: "run status", recorded: recordedStatus, replayed: final.status });
  return {
    thread: forked.thread,
    fromThread: thread,
    fromCheckpoint: start.checkpoint.id,
    workspace: dest.workspace,
    status: final.status,
    recordedStatus,
    steps: final.step,
    replayedTurns: model.served.length,
    modelCalls: 0,
    divergences,
    runtime: dest,
  };
}
