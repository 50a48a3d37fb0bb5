import { CliError } from "../errors.js";
import {
  openExistingState,
  openPgInspection,
  requirePgThread,
  requireThread,
  stderrNote,
  stateUrlOf,
  whereCheckpointsAre,
  type WorkspaceArgs,
} from "../ledger/open-state.js";
import type { ProgressEvent, Runtime } from "../runtime.js";
import type { RunSettings } from "../settings.js";
import { resolveWorkspace } from "../workspace/location.js";

// The runtime of a thread that already exists, for the commands that work on a stored run (resume,
// diff, rewind, fork, replay): its workspace and settings from the registry, and the refusal to
// race a queue worker that holds it.

/** A model for commands that run no node (rewind, fork, diff, gc): calling it is a bug. */
const INERT_MODEL = {
  name: "none:inspection",
  async invoke(): Promise<never> {
    throw new CliError("this command does not call a model", 1, "NO_MODEL");
  },
};

/**
 * An existing thread's workspace and the settings it was started with (none for a thread made
 * outside the CLI); reads the state database without writing to it, or with `postgres` and --state
 * (or $LEDGERLOOP_STATE_URL) the PostgreSQL run registry. Fails for an unknown thread.
 */
export async function savedRun(
  thread: string,
  args: WorkspaceArgs,
  opts: { postgres?: boolean } = {},
): Promise<{ workspace: string; settings: RunSettings | undefined }> {
  const url = stateUrlOf(args);
  // Only for callers that go through the runtime's ports on PostgreSQL (resume, diff, rewind, fork,
  // replay); the others (context, logs, …) read the local tables, and keep saying that they do not
  // read PostgreSQL yet.
  if (url && opts.postgres) {
    // With --state the run's registry and checkpoints are in PostgreSQL; the workspace is this
    // machine's copy of the files (with its revisions and lease in .ledgerloop/).
    const workspace = resolveWorkspace(args.workspace ?? process.cwd());
    const pg = await openPgInspection(url);
    try {
      await requirePgThread(pg, thread);
      if (!(await pg.runs.hasCheckpoints(thread))) {
        throw new CliError(
          `${thread} has no checkpoints in ${pg.location}; this command needs them there (inspect the run with threads, history, ledger, report)`,
          1,
          "CHECKPOINTS_ELSEWHERE",
        );
      }
      return { workspace, settings: (await pg.runs.get(thread))?.settings };
    } finally {
      await pg.close();
    }
  }
  const st = await openExistingState(args);
  try {
    requireThread(st, thread);
    if (!st.runs.hasCheckpoints(thread)) {
      // resume, rewind, fork, diff and replay need the run's checkpoints in this database.
      throw new CliError(
        `${whereCheckpointsAre(st, thread)}; this command needs them here (inspect the run with threads, history, ledger, report, context)`,
        1,
        "CHECKPOINTS_ELSEWHERE",
      );
    }
    return { workspace: st.workspace, settings: st.runs.get(thread)?.settings };
  } catch (err) {
    throw st.named(err);
  } finally {
    st.close();
  }
}

/**
 * The runtime of an existing thread, with the settings it was started with (model replaced by an
 * inert one unless the command runs the agent). With `postgres` the command works through the
 * runtime's ports only (checkpointer, ledger, runs, revisions with their replica), so --state (or
 * $LEDGERLOOP_STATE_URL) gives it a runtime on that PostgreSQL state and the `-w` workspace's files;
 * without, it is refused there (savedRun).
 */
export async function runtimeForThread(
  thread: string,
  args: WorkspaceArgs,
  opts: { progress?: (e: ProgressEvent) => void; lease?: string; postgres?: boolean; warn?: (line: string) => void } = {},
): Promise<Runtime> {
  const { workspace, settings } = await savedRun(thread, args, { postgres: opts.postgres });
  const url = opts.postgres ? stateUrlOf(args) : undefined;
  // Loaded here, not at the top: inspection commands share this module and must not load LangGraph.
  const { createRuntime } = await import("../runtime.js");
  // Time-travel commands need no index: the next run refreshes it from the files' sizes and mtimes.
  // The state is the workspace's own (or --state-dir), never a path stored in the run's settings.
  const rt = await createRuntime(
    // The registry never stores where it is: a run read from PostgreSQL is changed there.
    { ...(settings ?? {}), workspace, stateDir: args.stateDir, ...(url ? { stateUrl: url } : {}), model: INERT_MODEL.name, retrieval: "lexical" },
    {
      model: INERT_MODEL,
      progress: opts.progress,
      warn: (m) => (opts.warn ?? stderrNote)(`warning: ${m}`),
      ...(opts.lease ? { lease: { command: opts.lease, thread } } : {}),
    },
  );
  if (opts.lease) {
    try {
      await rt.state.refuseIfQueued(thread, opts.lease);
    } catch (err) {
      await rt.close();
      throw err;
    }
  }
  return rt;
}
