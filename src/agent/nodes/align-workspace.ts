import type { LangGraphRunnableConfig } from "@langchain/langgraph";
import type { Runtime } from "../../runtime.js";
import type { LedgerEvent, TaskStateValue } from "../../state.js";
import { branchWriter, threadIdOf } from "./deps.js";

/** What a node continues from after the workspace was moved to its checkpoint's revision. */
export interface Alignment {
  ledgerHead: string;
  workspaceRev: string;
  restored: { created: string[]; modified: string[]; deleted: string[] };
  savedRevision: string | null;
}

/**
 * The revision the state stands for. A state from before the first plan has none recorded: if the
 * thread already started once (its task_spec names the revision it started from), a run from that
 * early checkpoint means "from the start", so that revision.
 */
async function targetRevision(rt: Runtime, state: TaskStateValue, thread: string): Promise<string | null> {
  if (state.workspaceRev) return state.workspaceRev;
  if (state.ledgerHead) return null;
  const spec = (await rt.ledger.list(thread, { types: ["task_spec"], limit: 1 }))[0] as LedgerEvent<"task_spec"> | undefined;
  return spec?.payload.revision ?? null;
}

/**
 * Time travel from any client (Studio replay or fork, the SDK's checkpoint_id, a script's
 * updateState): when the graph continues from a checkpoint whose workspace revision is not the
 * workspace's current one, the files are made that revision and the ledger branch continues from
 * the checkpoint's head with a `time_travel` (kind "restore") event, as `ledgerloop rewind` does.
 * Edits made outside the run since the workspace's last revision are saved as a revision first
 * (named in the event), so nothing is lost. Returns null when the workspace is already there.
 *
 * `rerun` says this node run is the same task re-run after a crash (its own writes exist): its files
 * may legitimately be ahead of the state (act ran tools before the runner died), so nothing is moved.
 */
export async function alignWorkspace(
  rt: Runtime,
  state: TaskStateValue,
  config: LangGraphRunnableConfig,
  node: string,
  rerun: () => Promise<boolean> = async () => false,
): Promise<Alignment | null> {
  const thread = threadIdOf(config);
  const target = await targetRevision(rt, state, thread);
  if (!target) return null;
  const head = rt.revisions.head()?.revId ?? null;
  if (head === target) return null;
  if (await rerun()) return null;
  // A run continued on another machine (a worker took it over) may have its revisions in PostgreSQL
  // only: copied here before anything is recorded, so a missing one fails the step cleanly.
  await rt.revisionReplica?.ensure(rt.revisions, target);
  const w = branchWriter(rt, state, config, node);
  // Recorded first: a crash before the files are restored leaves the event, and the re-run
  // (same task, same key) finds it and restores.
  const prior = await w.find<"time_travel">("restore");
  let savedRevision = prior?.payload.savedRevision ?? null;
  if (!prior) {
    const st = await rt.revisions.status();
    if (!st.clean) savedRevision = (await rt.revisions.snapshot({ label: "saved before restoring a checkpoint's revision" })).revId;
  }
  const { event } = await w.once("restore", "time_travel", async () => ({
    kind: "restore" as const,
    fromThread: thread,
    fromCheckpoint: null,
    toCheckpoint: String(config.configurable?.checkpoint_id ?? config.executionInfo?.checkpointId ?? ""),
    revision: target,
    savedRevision,
    workspace: rt.workspace,
  }));
  const restored = await rt.revisions.restore(target);
  // Search must see the files of the branch the run continues on.
  await rt.retriever?.refresh([...restored.created, ...restored.modified, ...restored.deleted]).catch(() => {});
  const n = restored.created.length + restored.modified.length + restored.deleted.length;
  rt.progress?.({
    node,
    step: state.step,
    text: `workspace restored to the checkpoint's revision ${target.slice(0, 12)} (${n} file(s))${savedRevision ? `; edits made outside the run saved as ${savedRevision.slice(0, 12)}` : ""}`,
  });
  return { ledgerHead: event.id, workspaceRev: target, restored, savedRevision };
}
