import fs from "node:fs";
import path from "node:path";
import { randomBytes } from "node:crypto";
import type { Database } from "../sqlite/driver.js";
import { LedgerloopError } from "../errors.js";
import { renameWorkspaceRevisions } from "../workspace/revisions.js";
import { clearLeases } from "./lease.js";

// A state database records which workspace it belongs to: a random id made when it was created,
// the workspace and state directory paths, and the state directory's device and inode. Paths are
// never taken from it to decide where to write (the workspace given on the command line decides);
// they only tell a moved workspace (the old path no longer holds this state directory: adopted,
// with one warning) from a copied one (the old path still holds it: refused until adopted
// explicitly with `ledgerloop adopt`, because two workspaces would then continue the same runs).

/** A writer opened the state database of a copied workspace without adopting it. */
export class WorkspaceCopiedError extends LedgerloopError {
  readonly exitCode = 1;
  constructor(message: string) {
    super("WORKSPACE_COPIED", message);
  }
}

export interface WorkspaceIdentity {
  id: string;
  workspace: string;
  stateDir: string;
  dev: string;
  ino: string;
  createdAt: string;
}

export type IdentityOutcome = "created" | "same" | "moved" | "adopted";

function ensureTable(db: Database): void {
  db.exec(`CREATE TABLE IF NOT EXISTS ll_workspace (
    key INTEGER PRIMARY KEY CHECK (key = 1),
    id TEXT NOT NULL,
    workspace TEXT NOT NULL,
    state_dir TEXT NOT NULL,
    dev TEXT NOT NULL,
    ino TEXT NOT NULL,
    created_at TEXT NOT NULL
  )`);
}

function dirId(dir: string): { dev: string; ino: string } | null {
  try {
    const st = fs.statSync(dir, { bigint: true });
    return { dev: String(st.dev), ino: String(st.ino) };
  } catch {
    return null;
  }
}

/** The identity recorded in a state database, or null (none yet, or a database from before identities). */
export function readIdentity(db: Database): WorkspaceIdentity | null {
  const has = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'll_workspace'").get();
  if (!has) return null;
  const r = db.prepare("SELECT * FROM ll_workspace WHERE key = 1").get() as
    { id: string; workspace: string; state_dir: string; dev: string; ino: string; created_at: string } | undefined;
  return r ? { id: r.id, workspace: r.workspace, stateDir: r.state_dir, dev: r.dev, ino: r.ino, createdAt: r.created_at } : null;
}

/**
 * Checks that the state database in `stateDir` belongs to `workspace` before anything writes to it:
 * records the identity on first use, adopts a moved workspace, and refuses a copied one unless
 * `adopt` (which gives the copy an identity of its own and drops the original's leases).
 */
export function claimWorkspace(
  db: Database,
  loc: { workspace: string; stateDir: string },
  opts: { adopt?: boolean; warn?: (message: string) => void } = {},
): { outcome: IdentityOutcome; identity: WorkspaceIdentity } {
  const stateDir = path.resolve(loc.stateDir);
  const cur = dirId(stateDir) ?? { dev: "0", ino: "0" };
  ensureTable(db);
  const write = (id: string, createdAt: string) =>
    db
      .prepare("INSERT OR REPLACE INTO ll_workspace (key, id, workspace, state_dir, dev, ino, created_at) VALUES (1, ?, ?, ?, ?, ?, ?)")
      .run(id, loc.workspace, stateDir, cur.dev, cur.ino, createdAt);
  const fresh = () => randomBytes(12).toString("hex");
  let moved: string | null = null;
  const decide = db.transaction((): IdentityOutcome => {
    const row = readIdentity(db);
    if (!row) {
      write(fresh(), new Date().toISOString());
      return "created";
    }
    if (row.stateDir === stateDir) {
      // Same place: the directory may have been restored or replaced in place; it is still this workspace's.
      if (row.workspace !== loc.workspace || row.dev !== cur.dev || row.ino !== cur.ino) write(row.id, row.createdAt);
      return "same";
    }
    const orig = dirId(row.stateDir);
    const originalStillThere =
      orig !== null &&
      orig.dev === row.dev &&
      orig.ino === row.ino &&
      !(cur.dev === row.dev && cur.ino === row.ino) &&
      fs.existsSync(path.join(row.stateDir, "state.db"));
    if (!originalStillThere) {
      moved = row.workspace;
      write(row.id, row.createdAt);
      renameWorkspaceRevisions(db, row.workspace, loc.workspace);
      return "moved";
    }
    if (!opts.adopt) {
      throw new WorkspaceCopiedError(
        `the state in ${stateDir} was copied from workspace ${row.workspace}, which still exists; ` +
          `run \`ledgerloop adopt -w ${loc.workspace}\` to make this copy a workspace of its own (its runs continue separately), or work in ${row.workspace}`,
      );
    }
    write(fresh(), new Date().toISOString());
    renameWorkspaceRevisions(db, row.workspace, loc.workspace);
    // The copied lease rows name the original's processes: they guard the original, not this copy.
    clearLeases(db);
    return "adopted";
  });
  const outcome = decide.immediate();
  if (moved) opts.warn?.(`this workspace's state was moved from ${moved}; it now belongs to ${loc.workspace}`);
  return { outcome, identity: readIdentity(db)! };
}
