import fs from "node:fs";
import path from "node:path";
import type Database from "better-sqlite3";
import type { RunnableConfig } from "@langchain/core/runnables";
import type { Checkpoint, CheckpointMetadata, PendingWrite } from "@langchain/langgraph-checkpoint";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { ConfigError } from "./errors.js";
import { failpoint } from "./failpoints.js";
import type { Ledger } from "./ledger/port.js";
import { SqliteLedger } from "./ledger/sqlite-ledger.js";
import { acquireLease, threadScope, workspaceScope, type Lease } from "./ledger/lease.js";
import { openStateDb } from "./ledger/state-db.js";
import { claimWorkspace } from "./ledger/workspace-identity.js";
import { budgetFor, tokenCounterFor, type TokenCounter } from "./context/tokens.js";
import { SqliteStore } from "./memory/sqlite-store.js";
import { createModel } from "./models/factory.js";
import type { ChatModel } from "./models/port.js";
import { createRetriever, type Retriever } from "./retrieval/hybrid.js";
import { createLexicalSearcher } from "./retrieval/lexical.js";
import type { CodeSearcher } from "./retrieval/port.js";
import { createSandbox } from "./sandbox/executor.js";
import type { SandboxPolicy } from "./sandbox/policy.js";
import { ProcessManager } from "./sandbox/processes.js";
import { commandPolicy, loadConfig, type LedgerloopConfig } from "./config.js";
import type { PriceTable } from "./economics/prices.js";
import type { Sandbox } from "./sandbox/port.js";
import { createRedactor, secretValuesFromDotenv, secretValuesFromEnv, type Redactor } from "./secrets.js";
import { RunSettings, type RunSettingsInput } from "./settings.js";
import { RevisionStore } from "./workspace/revisions.js";
import { resolveWorkspace, stateLocation } from "./workspace/location.js";

// Kept exported here for existing callers; light modules import them from workspace/location.ts.
export { resolveWorkspace, stateLocation };

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
  db: Database.Database;
  ledger: Ledger;
  checkpointer: SqliteSaver;
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
  /** Long-term memory shared by the runs of this workspace (LangGraph BaseStore on SQLite). */
  store: SqliteStore;
  /** Content-addressed revisions of the workspace files, one per step (time travel). */
  revisions: RevisionStore;
  counter: TokenCounter;
  /** Model prices from ledgerloop.config.json (over the defaults), read once at start. */
  prices?: PriceTable;
  progress?: (e: ProgressEvent) => void;
  /** The writer's lease on the workspace (and thread), when the runtime was created to write; released by close(). */
  lease?: Lease;
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
}

/**
 * SqliteSaver that redacts secrets from every checkpoint and pending write before they are stored:
 * a token pasted into a goal must not end up on disk.
 */
export class RedactingSqliteSaver extends SqliteSaver {
  constructor(
    db: Database.Database,
    private readonly redactor: Redactor,
  ) {
    super(db);
  }

  override async put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata): Promise<RunnableConfig> {
    const saved = await super.put(config, this.redactor.redactDeep(checkpoint), this.redactor.redactDeep(metadata));
    failpoint("checkpoint-put");
    return saved;
  }

  override async putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string): Promise<void> {
    return super.putWrites(
      config,
      writes.map(([channel, value]) => [channel, this.redactor.redactDeep(value)] as PendingWrite),
      taskId,
    );
  }
}

/** Validates settings and builds the runtime. The model is built before any file is touched. */
export async function createRuntime(input: RunSettingsInput, overrides: RuntimeOverrides = {}): Promise<Runtime> {
  const parsed = RunSettings.safeParse(input);
  if (!parsed.success) {
    const i = parsed.error.issues[0]!;
    throw new ConfigError(`invalid setting ${i.path.join(".") || "(settings)"}: ${i.message}`);
  }
  const settings = parsed.data;
  const workspace = resolveWorkspace(settings.workspace);
  // Read once at start: the file is in the workspace, and a run must not change its own permissions.
  const { policy, allowNetwork, configSha } = commandPolicy(workspace, { allowNetwork: settings.allowNetwork, allow: settings.allow });
  // The workspace's .env values too: `cat .env` or a test log can print them without their key.
  const redactor = createRedactor([...secretValuesFromEnv(), ...secretValuesFromDotenv(workspace)]);
  const model = overrides.model ?? createModel(settings.model, { recordFile: overrides.recordRequestsFile });
  // --summary-model / the run context first, then the config file; same spec as the main model, same
  // checks (a missing key is named now, not at the first plan).
  const summarySpec = settings.summaryModel ?? loadConfigQuietly(workspace)?.summaryModel;
  const summaryModel = overrides.summaryModel ?? (summarySpec && summarySpec !== settings.model ? createModel(summarySpec, { recordFile: overrides.recordRequestsFile }) : undefined);
  const sandbox =
    overrides.sandbox ??
    // One session per run: commands share a loopback, so a server started in the background by one
    // is reachable from the next (session.ts).
    createSandbox({ level: settings.sandbox ?? "auto", workspace, allowNetwork, outputCapBytes: settings.outputCapBytes, session: true });
  const { counter, profile } = await tokenCounterFor(model.name);
  const budgetTokens = settings.budgetTokens ?? budgetFor(profile);
  const { stateDir, dbPath } = stateLocation(workspace, settings.stateDir);
  const db = openStateDb(dbPath);
  // Progress and warnings reach the terminal and whatever log collects it: same redaction as the ledger.
  const warn = overrides.warn ? (m: string) => overrides.warn!(redactor.redact(m)) : () => {};
  let lease: Lease | undefined;
  try {
    // A copied workspace must not continue the original's runs unnoticed; a moved one is adopted.
    claimWorkspace(db, { workspace, stateDir }, { warn });
    if (overrides.lease) {
      const scopes = [...(overrides.lease.thread ? [threadScope(overrides.lease.thread)] : []), workspaceScope(workspace)];
      lease = acquireLease(db, scopes, { command: overrides.lease.command, thread: overrides.lease.thread });
    }
  } catch (err) {
    db.close();
    throw err;
  }
  // Keep the state out of the user's own git history.
  const gi = path.join(stateDir, ".gitignore");
  if (!fs.existsSync(gi)) fs.writeFileSync(gi, "*\n");
  const ledger = new SqliteLedger(db, { redactor });
  const checkpointer = new RedactingSqliteSaver(db, redactor);
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
        onWarning: warn,
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
  return {
    settings: { ...settings, workspace, stateDir, budgetTokens, ...(summaryModel ? { summaryModel: summaryModel.name } : {}) },
    workspace,
    stateDir,
    dbPath,
    db,
    ledger,
    checkpointer,
    sandbox,
    processes,
    policy,
    configSha,
    model,
    summaryModel,
    searcher: retriever ?? createLexicalSearcher(workspace),
    retriever,
    redactor,
    store: new SqliteStore(db, redactor),
    revisions: new RevisionStore(db, workspace, { blobsDir: path.join(stateDir, "blobs") }),
    counter,
    prices: loadConfigQuietly(workspace)?.prices,
    progress,
    lease,
    async close() {
      // The retriever first: it stops an embedded Chroma server this process started.
      await retriever?.close().catch(() => {});
      // Background processes and the session end with the run (finish, pause, interrupt).
      await processes.stopAll().catch(() => {});
      await sandbox.closeSession?.().catch(() => null);
      lease?.release();
      if (db.open) db.close();
    },
  };
}

/** The config file for prices and the summary model; the policy already read and accepted it, so this cannot fail for a new reason. */
function loadConfigQuietly(workspace: string): LedgerloopConfig | undefined {
  try {
    return loadConfig(workspace);
  } catch {
    return undefined;
  }
}
