import fs from "node:fs";
import path from "node:path";
import type { Database } from "./sqlite/driver.js";
import type { BaseCheckpointSaver, BaseStore } from "@langchain/langgraph-checkpoint";
import { ConfigError } from "./errors.js";
import type { Ledger } from "./ledger/port.js";
import { acquireLease, threadScope, workspaceScope, type Lease } from "./ledger/lease.js";
import type { PgState } from "./ledger/pg-db.js";
import { isPostgresUrl } from "./ledger/state-url.js";
import type { RunRegistryPort } from "./ledger/runs.js";
import { openStateDb } from "./ledger/state-db.js";
import { claimWorkspace } from "./ledger/workspace-identity.js";
import { tokenCounterFor } from "./context/token-thread.js";
import { budgetFor, modelProfile, type TokenCounter } from "./context/tokens.js";
import { createModel } from "./models/factory.js";
import { TextToolCallModel } from "./models/text-tools.js";
import { checkLangSmith } from "./telemetry/langsmith.js";
import type { ChatModel } from "./models/port.js";
import { createRetriever, type Retriever } from "./retrieval/hybrid.js";
import { createLexicalSearcher } from "./retrieval/lexical.js";
import type { CodeSearcher } from "./retrieval/port.js";
import { createSandbox } from "./sandbox/executor.js";
import type { SandboxPolicy } from "./sandbox/policy.js";
import { ProcessManager } from "./sandbox/processes.js";
import { commandPolicy } from "./config.js";
import type { PriceTable } from "./economics/prices.js";
import type { Sandbox } from "./sandbox/port.js";
import { createRedactor, secretValuesFromDotenv, secretValuesFromEnv, type Redactor } from "./secrets.js";
import { RunSettings, type RunSettingsInput } from "./settings.js";
import { openStatePort } from "./ledger/open-state-port.js";
import type { StatePort } from "./ledger/state-port.js";
import type { PgRevisionReplica } from "./ledger/pg-revisions.js";
import { RevisionStore } from "./workspace/revisions.js";
import { resolveWorkspace, stateLocation } from "./workspace/location.js";

// Kept exported here for existing callers; light modules import them from workspace/location.ts,
// the saver from ledger/sqlite-checkpoints.ts.
export { resolveWorkspace, stateLocation };
export { RedactingSqliteSaver } from "./ledger/sqlite-checkpoints.js";

/** A line of progress a node reports (the CLI prints these on stderr). */
export interface ProgressEvent {
  node: string;
  step: number;
  text: string;
}

/** Everything a run needs, built once from its settings. */
export interface Runtime {
  settings: RunSettings & { budgetTokens: number };
  /** Absolute, realpath'd workspace. */
  workspace: string;
  stateDir: string;
  dbPath: string;
  /**
   * The workspace's local SQLite database. With a PostgreSQL backend it keeps only what belongs to
   * this machine's copy of the workspace (its lease, its identity, its revisions); the ledger,
   * checkpoints, lessons and run registry are in PostgreSQL.
   */
  db: Database;
  /** Where the durable state is: "sqlite" (dbPath, the default) or "postgres" (stateUrl). */
  backend: "sqlite" | "postgres";
  /** The state's location for messages: dbPath, or the PostgreSQL URL without its password. */
  stateLocation: string;
  /** The open PostgreSQL state (backend "postgres"): a queue worker's shared one, or the run's own. */
  pg?: PgState;
  /** The run's durable state (ledger, runs, checkpointer, store, replica) as one port; the fields beside it are its parts. */
  state: StatePort;
  ledger: Ledger;
  /** The run registry of the backend. */
  runs: RunRegistryPort;
  /** RedactingSqliteSaver, or RedactingPostgresSaver with backend "postgres". */
  checkpointer: BaseCheckpointSaver;
  sandbox: Sandbox;
  /** The run's background processes (start_process & co.), in the sandbox's session. */
  processes?: ProcessManager;
  /** The command policy (ledgerloop.config.json over the defaults, plus flags). */
  policy: SandboxPolicy;
  /** Fingerprint of the config file the policy was read from (see ledger/governing.ts). */
  configSha: string;
  model: ChatModel;
  /** The model of plan, summarize and reflect (`summaryModel`); absent: `model` serves them too. */
  summaryModel?: ChatModel;
  searcher: CodeSearcher;
  /** The hybrid retriever over code and ledger history (absent with retrieval "lexical" or when it failed to start). */
  retriever?: Retriever;
  redactor: Redactor;
  /** Long-term memory shared by the runs of this workspace (LangGraph BaseStore on SQLite or PostgreSQL). */
  store: BaseStore;
  /** Content-addressed revisions of the workspace files, one per step (time travel). */
  revisions: RevisionStore;
  /**
   * Backend "postgres": the replica of the revisions in PostgreSQL. Every snapshot of `revisions` is
   * pushed to it before the snapshot returns, so each revision a checkpoint names is there for a
   * worker on another machine to pull.
   */
  revisionReplica?: PgRevisionReplica;
  counter: TokenCounter;
  /**
   * Resolves once `counter` may be used: its ranks load while the run starts, and the graph's nodes
   * wait for this before they run (absent: the counter is ready).
   */
  counterReady?: Promise<void>;
  /** Model prices from ledgerloop.config.json (over the defaults), read once at start. */
  prices?: PriceTable;
  progress?: (e: ProgressEvent) => void;
  /** The writer's lease on the workspace (and thread), when the runtime was created to write; released by close(). */
  lease?: Lease;
  /**
   * A graceful stop (a queue worker handing its runs back): once aborted, no further node starts;
   * the node that is running (a command included) finishes and is checkpointed first.
   */
  stopBetweenSteps?: AbortSignal;
  /**
   * One-time notes for the model's next prompt (a queue worker's: the run moved to a fresh clone).
   * The context node takes them when it records a prompt, so each is shown once per runtime.
   */
  notices?: string[];
  close(): Promise<void>;
}

export interface RuntimeOverrides {
  model?: ChatModel;
  /** Replaces the summary model too (replay answers every node from the ledger). */
  summaryModel?: ChatModel;
  sandbox?: Sandbox;
  progress?: (e: ProgressEvent) => void;
  /** Scripted models append every request here (JSON lines). */
  recordRequestsFile?: string;
  /** Warnings worth a line on stderr (retrieval degraded, isolation weaker than asked). */
  warn?: (message: string) => void;
  /**
   * Take the one-writer lease of the workspace (and of `thread`) before anything is written or
   * started; fails with LeaseHeldError naming the holder. Commands that only read leave it out.
   */
  lease?: { command: string; thread?: string };
  /** A queue worker's holding of the run (PgLedger's `fence`): the ledger refuses appends once it is lost. */
  fence?: { thread: string; token: string };
  /**
   * An open PostgreSQL state (the database of `stateUrl`) to build the run's state on: a queue worker
   * holds one pool for all its runs. The run's close() leaves it open.
   */
  sharedPg?: PgState;
  /** See {@link Runtime.stopBetweenSteps}. */
  stopBetweenSteps?: AbortSignal;
  /**
   * Keep the state in the workspace's SQLite database whatever `stateUrl` or LEDGERLOOP_STATE_URL
   * say: replay's scratch copy of a PostgreSQL run is its own, and leaves nothing in the shared database.
   */
  localState?: boolean;
  /**
   * The runtime serves a run started now, not resumed: its first prompt searches code without vectors
   * (the context node's rule for step 0), so the vector side connects, and the embedded Chroma server
   * starts, only once the workspace's files are indexed (the retriever's connectAfterFiles).
   */
  newRun?: boolean;
}

/** Validates settings and builds the runtime. The model is built before any file is touched. */
export async function createRuntime(input: RunSettingsInput, overrides: RuntimeOverrides = {}): Promise<Runtime> {
  const parsed = RunSettings.safeParse(input);
  if (!parsed.success) {
    const i = parsed.error.issues[0]!;
    throw new ConfigError(`invalid setting ${i.path.join(".") || "(settings)"}: ${i.message}`);
  }
  const settings = parsed.data;
  const envUrl = process.env.LEDGERLOOP_STATE_URL?.trim();
  const stateUrl = overrides.localState ? undefined : (settings.stateUrl ?? (envUrl ? envUrl : undefined));
  if (stateUrl !== undefined && !isPostgresUrl(stateUrl)) {
    throw new ConfigError(`invalid setting stateUrl (from LEDGERLOOP_STATE_URL): must be a postgres:// or postgresql:// URL`);
  }
  const workspace = resolveWorkspace(settings.workspace);
  // Read once at start: the file is in the workspace, and a run must not change its own permissions.
  const { policy, allowNetwork, configSha, config } = commandPolicy(workspace, { allowNetwork: settings.allowNetwork, allow: settings.allow });
  // The workspace's .env values too: `cat .env` or a test log can print them without their key.
  const redactor = createRedactor([...secretValuesFromEnv(), ...secretValuesFromDotenv(workspace), ...urlPassword(stateUrl)]);
  // PostgreSQL first: a wrong URL, a refused password or a newer schema is a one-line error before
  // any model, sandbox or file is touched.
  const opened = await openStatePort({ url: stateUrl, shared: overrides.localState ? undefined : overrides.sharedPg, fence: overrides.fence }, redactor);
  // Whatever was opened before a later step failed (a model spec without its key, a corrupt state
  // database, a held lease) is closed again, last first: a failed start leaks no connection or session.
  const undo: Array<() => unknown> = [() => opened.close()];
  try {
    const asked = overrides.model ?? createModel(settings.model, { recordFile: overrides.recordRequestsFile });
    const model = settings.toolCallFormat === "text" ? new TextToolCallModel(asked) : asked;
    // --summary-model / the run context first, then the config file; same spec as the main model, same
    // checks (a missing key is named now, not at the first plan).
    const summarySpec = settings.summaryModel ?? config.summaryModel;
    const summaryAsked =
      overrides.summaryModel ??
      (summarySpec && summarySpec !== settings.model ? createModel(summarySpec, { recordFile: overrides.recordRequestsFile }) : undefined);
    const summaryModel = summaryAsked && settings.toolCallFormat === "text" ? new TextToolCallModel(summaryAsked) : summaryAsked;
    // One session per run: commands share a loopback, so a server started in the background by one
    // is reachable from the next (session.ts).
    const ownSandbox = overrides.sandbox
      ? undefined
      : createSandbox({ level: settings.sandbox ?? "auto", workspace, allowNetwork, outputCapBytes: settings.outputCapBytes, session: true });
    const sandbox: Sandbox = overrides.sandbox ?? ownSandbox!;
    if (ownSandbox) undo.push(() => ownSandbox.closeSession?.());
    // A level from the probe cache is re-checked while the rest starts; a failure stops the run here.
    const sandboxChecked = ownSandbox?.verified() ?? Promise.resolve();
    sandboxChecked.catch(() => {});
    const profile = await modelProfile(model.name);
    // The tokenizer loads on a worker thread (token-thread.ts): started as early as its profile is
    // known (by the CLI before it loads the graph, else here), it loads while this thread opens the
    // state, the sandbox, the index and the Chroma server.
    const counter = tokenCounterFor(profile);
    undo.push(() => counter.close());
    await sandboxChecked;
    const budgetTokens = settings.budgetTokens ?? budgetFor(profile);
    const { stateDir, dbPath } = stateLocation(workspace, settings.stateDir);
    const db = openStateDb(dbPath);
    undo.push(() => db.open && db.close());
    // Progress and warnings reach the terminal and whatever log collects it: same redaction as the ledger.
    const warn = overrides.warn ? (m: string) => overrides.warn!(redactor.redact(m)) : () => {};
    // LangSmith tracing (LangChain's, by environment) is checked once: offline it is switched off with one warning.
    await checkLangSmith(warn);
    let lease: Lease | undefined;
    // A copied workspace must not continue the original's runs unnoticed; a moved one is adopted.
    claimWorkspace(db, { workspace, stateDir }, { warn });
    if (overrides.lease) {
      const scopes = [...(overrides.lease.thread ? [threadScope(overrides.lease.thread)] : []), workspaceScope(workspace)];
      lease = acquireLease(db, scopes, { command: overrides.lease.command, thread: overrides.lease.thread });
    }
    // Keep the state out of the user's own git history.
    const gi = path.join(stateDir, ".gitignore");
    if (!fs.existsSync(gi)) fs.writeFileSync(gi, "*\n");
    const state = opened.attach(db, dbPath);
    const { ledger } = state;
    const progress = overrides.progress && ((e: ProgressEvent) => overrides.progress!({ ...e, text: redactor.redact(e.text) }));
    let retriever: Retriever | undefined;
    if (settings.retrieval === "hybrid") {
      try {
        retriever = await createRetriever({
          workspace,
          stateDir,
          ledger,
          embedder: settings.embedder,
          vectorIndex: settings.vectors === "off" ? "off" : undefined,
          ...(settings.vectorLine ? { vectorLine: settings.vectorLine } : {}),
          onWarning: warn,
          // Chroma comes up while the run starts (a new run: after the files are indexed); the first
          // search that may use vectors waits for it.
          connectInBackground: true,
          ...(overrides.newRun ? { connectAfterFiles: true } : {}),
          redact: (t) => redactor.redact(t),
          history: settings.history && { perFile: settings.historyPerFile, maxCommits: settings.historyMaxCommits },
        });
        // Build or refresh the index in the background; the first search waits for it if needed.
        void retriever.index().catch((err) => warn(`indexing failed: ${(err as Error).message}`));
      } catch (err) {
        warn(`the hybrid retriever could not start (${(err as Error).message}); using a plain file scan for search`);
      }
    }
    const processes = new ProcessManager(sandbox, workspace);
    const replica = state.revisionReplica;
    const revisions: RevisionStore = new RevisionStore(db, workspace, {
      blobsDir: path.join(stateDir, "blobs"),
      ...(replica && {
        afterSnapshot: async (r) => {
          await replica.push(revisions, r.revId);
        },
      }),
    });
    return {
      settings: { ...settings, workspace, stateDir, budgetTokens, ...(summaryModel ? { summaryModel: summaryModel.name } : {}) },
      workspace,
      stateDir,
      dbPath,
      db,
      backend: state.backend,
      stateLocation: state.location,
      pg: state.pg,
      state,
      ledger,
      runs: state.runs,
      checkpointer: state.checkpointer,
      sandbox,
      processes,
      policy,
      configSha,
      model,
      summaryModel,
      searcher: retriever ?? createLexicalSearcher(workspace),
      retriever,
      redactor,
      store: state.store,
      revisions,
      revisionReplica: replica,
      counter,
      // A getter: the load keeps the process alive only once someone waits for it (the graph's nodes).
      get counterReady() {
        return counter.ready;
      },
      prices: config.prices,
      progress,
      lease,
      ...(overrides.stopBetweenSteps ? { stopBetweenSteps: overrides.stopBetweenSteps } : {}),
      async close() {
        // The retriever first: it stops an embedded Chroma server this process started.
        await retriever?.close().catch(() => {});
        // Background processes and the session end with the run (finish, pause, interrupt).
        await processes.stopAll().catch(() => {});
        await sandbox.closeSession?.().catch(() => null);
        lease?.release();
        if (db.open) db.close();
        await state.close().catch(() => {});
        await counter.close();
      },
    };
  } catch (err) {
    for (const u of undo.reverse())
      await Promise.resolve()
        .then(u)
        .catch(() => {});
    throw err;
  }
}

/** The password of a state URL, so that nothing ledgerloop writes or prints can carry it. */
function urlPassword(url: string | undefined): string[] {
  if (!url) return [];
  try {
    const p = decodeURIComponent(new URL(url).password);
    return p ? [p] : [];
  } catch {
    return [];
  }
}
