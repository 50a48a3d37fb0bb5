import fs from "node:fs";
import path from "node:path";
import { CliError } from "../errors.js";
import type { Ledger } from "../ledger/port.js";
import { stderrNote, type WorkspaceArgs } from "../ledger/open-state.js";
import { resolveWorkspace, stateLocation } from "../workspace/location.js";
import type { Retriever, RetrieverOptions } from "./hybrid.js";

// A workspace's retriever as `index`, `search` and the MCP server open it: index.db beside the
// state, the ledger of the state database when there is one, and the run's redaction.

/** Options shared by `index` and `search`. */
export interface RetrievalArgs extends WorkspaceArgs {
  /** `hashed` (default), `hashed:<dims>` or `xenova:<model>`. */
  embedder?: string;
  /** Where `xenova:` model files are (default `<state dir>/models`). */
  modelsDir?: string;
}

/** An open retriever for a workspace, with the ledger of its state database when there is one. */
export interface OpenedRetriever {
  workspace: string;
  stateDir: string;
  retriever: Retriever;
  hasLedger: boolean;
  close(): Promise<void>;
}

/** Opens the workspace's retriever (index.db beside the state database), reading its ledger when it exists. */
export async function openRetriever(
  args: RetrievalArgs,
  onWarning: (m: string) => void = (m) => stderrNote(`ledgerloop: warning: ${m}`),
  extra: Pick<RetrieverOptions, "vectorServer"> = {},
): Promise<OpenedRetriever> {
  const workspace = resolveWorkspace(args.workspace ?? process.cwd());
  const { stateDir, dbPath } = stateLocation(workspace, args.stateDir);
  // The retriever (Chroma client, tree-sitter) loads on use, in parallel with the state database.
  // The ledger's modules only when there is a state database to read (a plain workspace has none).
  const hasState = fs.existsSync(dbPath);
  const [{ createRetriever }, { EmbedderError }, stateModules, { createRedactor, secretValuesFromDotenv, secretValuesFromEnv }] = await Promise.all([
    import("./hybrid.js"),
    import("./errors.js"),
    hasState ? Promise.all([import("../ledger/sqlite-ledger.js"), import("../ledger/state-db.js")]) : null,
    import("../secrets.js"),
  ]);
  // The same redaction as a run's (runtime.ts): index.db is shared with the runs of this workspace,
  // and a file or commit message indexed here must not keep a secret the run's index would hide.
  const redactor = createRedactor([...secretValuesFromEnv(), ...secretValuesFromDotenv(workspace)]);
  let db: ReturnType<typeof import("../ledger/state-db.js").openStateDb> | undefined;
  let ledger: Ledger | undefined;
  if (stateModules) {
    const [{ SqliteLedger }, { openStateDb }] = stateModules;
    db = openStateDb(dbPath, { create: false });
    ledger = new SqliteLedger(db);
  }
  let retriever: Retriever;
  try {
    retriever = await createRetriever({
      workspace,
      stateDir,
      ...(ledger ? { ledger } : {}),
      ...(args.embedder ? { embedder: args.embedder } : {}),
      ...(args.modelsDir ? { modelsDir: path.resolve(args.modelsDir) } : {}),
      redact: (t) => redactor.redact(t),
      onWarning,
      ...extra,
    });
  } catch (err) {
    db?.close();
    if (err instanceof EmbedderError && err.code !== "EMBEDDER_FAILED") throw new CliError(err.message, 2, "CONFIG_INVALID", { cause: err });
    throw err;
  }
  return {
    workspace,
    stateDir,
    retriever,
    hasLedger: ledger !== undefined,
    async close() {
      await retriever.close();
      if (db?.open) db.close();
    },
  };
}
