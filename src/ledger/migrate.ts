import { createHash } from "node:crypto";
import { WRITES_IDX_MAP, type BaseStore, type CheckpointTuple, type PendingWrite } from "@langchain/langgraph-checkpoint";
import { MigrationError } from "../errors.js";
import { failpoint } from "../failpoints.js";
import { nsKey } from "../memory/store-common.js";
import { runnerAlive, toRecord, type RunRow } from "./runs.js";
import { openSide, stateIdentity, type RevisionSide, type StateSide } from "./state-sides.js";
import { ledgerHash, type ThreadExport } from "./transfer.js";

// `ledgerloop migrate`: moves runs between a SQLite state and a PostgreSQL one (either way) through
// the adapters both backends run on: the run registry row, every checkpoint and pending write (read
// with the source saver, written with the target saver, ids and parents kept), the ledger rows as
// stored, the blobs they refer to, the action starts, and the lessons store. Counts and content
// hashes are compared on both sides afterwards. The workspace revisions the runs name go with them
// (the SQLite state's revision store ⇄ PostgreSQL's replica), so time travel and a worker's takeover
// work on the other side.

/** What one side holds of a thread. */
export interface ThreadCounts {
  runs: number;
  checkpoints: number;
  writes: number;
  events: number;
  actionStarts: number;
  /** Blobs the thread's events refer to that this side stores. */
  blobs: number;
  /** sha256 of the ledger rows in seq order (ids, parents, seq, keys, payloads). */
  ledgerHash: string;
  /** sha256 of the checkpoint ids and parent links, every namespace. */
  checkpointHash: string;
}

export interface ThreadReport {
  thread: string;
  result: "migrated" | "already migrated";
  source: ThreadCounts;
  target: ThreadCounts;
}

export interface LessonsReport {
  source: number;
  copied: number;
  /** Already on the target with the same value. */
  present: number;
  /** On the target with another value (a run there updated it): the target's is kept. */
  kept: number;
  /** Lessons of the source not found on the target after copying (always 0 after a success). */
  missing: number;
}

export interface MigrationReport {
  from: string;
  to: string;
  threads: ThreadReport[];
  lessons: LessonsReport;
  revisions: RevisionsReport;
}

/** The workspace revisions the moved runs name (their files at each step, for time travel and takeover). */
export interface RevisionsReport {
  /** Revisions named by the moved runs' ledgers. */
  named: number;
  copied: number;
  /** Already on the target. */
  present: number;
  /** Named but not in the source (removed by `gc`, or never stored there): those steps cannot be restored on either side. */
  absent: string[];
}

interface ThreadData {
  run: RunRow | null;
  ledger: ThreadExport;
  /** Oldest first in each namespace (parents before children). */
  checkpoints: CheckpointTuple[];
  refs: string[];
  counts: ThreadCounts;
}

/** The blobs (stored prompts) a thread's events refer to. */
function blobRefs(ledger: ThreadExport): string[] {
  const refs = new Set<string>();
  for (const e of ledger.events) {
    if (e.type !== "context_built" && e.type !== "model_call") continue;
    const ref = (JSON.parse(e.payload) as { promptRef?: unknown }).promptRef;
    if (typeof ref === "string") refs.add(ref);
  }
  return [...refs].sort();
}

function checkpointHash(tuples: CheckpointTuple[]): string {
  const h = createHash("sha256");
  for (const t of tuples) {
    const c = t.config.configurable ?? {};
    h.update(`${c.checkpoint_ns ?? ""}\u0000${c.checkpoint_id}\u0000${t.parentConfig?.configurable?.checkpoint_id ?? ""}\n`);
  }
  return h.digest("hex");
}

async function readThread(side: StateSide, thread: string): Promise<ThreadData> {
  const run = await side.runRow(thread);
  const ledger = await side.ledger.exportThread(thread);
  const checkpoints: CheckpointTuple[] = [];
  if (side.checkpointer) {
    // No checkpoint_ns: every namespace of the thread (subgraphs included).
    for await (const t of side.checkpointer.list({ configurable: { thread_id: thread } })) checkpoints.push(t);
  }
  const key = (t: CheckpointTuple) => `${t.config.configurable?.checkpoint_ns ?? ""}\u0000${t.config.configurable?.checkpoint_id}`;
  checkpoints.sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
  const refs = blobRefs(ledger);
  let blobs = 0;
  for (const r of refs) if (await side.ledger.hasBlob(r)) blobs++;
  return {
    run,
    ledger,
    checkpoints,
    refs,
    counts: {
      runs: run ? 1 : 0,
      checkpoints: checkpoints.length,
      writes: checkpoints.reduce((n, t) => n + (t.pendingWrites?.length ?? 0), 0),
      events: ledger.events.length,
      actionStarts: ledger.actionStarts.length,
      blobs,
      ledgerHash: ledgerHash(ledger.events),
      checkpointHash: checkpointHash(checkpoints),
    },
  };
}

/** The registry fields that make a run what it is (the runner changes whenever a process takes it up). */
const sameRun = (a: RunRow | null, b: RunRow | null) =>
  a === null || b === null
    ? a === b
    : a.created_at === b.created_at && a.goal === b.goal && a.settings === b.settings && (a.origin ?? null) === (b.origin ?? null);

/** What differs between two sides' view of a thread, in words (empty when they match). */
function differences(a: ThreadData, b: ThreadData): string[] {
  const out: string[] = [];
  if (!sameRun(a.run, b.run)) out.push(a.run && b.run ? "the run registry rows differ" : `run registry ${a.counts.runs} vs ${b.counts.runs}`);
  for (const k of ["checkpoints", "writes", "events", "actionStarts", "blobs"] as const) {
    if (a.counts[k] !== b.counts[k]) out.push(`${k === "actionStarts" ? "action starts" : k} ${a.counts[k]} vs ${b.counts[k]}`);
  }
  if (a.counts.events === b.counts.events && a.counts.ledgerHash !== b.counts.ledgerHash) out.push("ledger content hash");
  if (a.counts.checkpoints === b.counts.checkpoints && a.counts.checkpointHash !== b.counts.checkpointHash) out.push("checkpoint ids or parents");
  return out;
}

const isEmpty = (d: ThreadData) => d.run === null && d.counts.events === 0 && d.counts.checkpoints === 0;

/**
 * A copy that stopped part-way (a killed migrate): the registry row, written last, is missing; the
 * ledger, imported in one transaction, is absent or whole; and every checkpoint there is one of the
 * source's with the same parent. Copying again completes it (imports and saver writes are idempotent).
 */
function interruptedCopy(source: ThreadData, there: ThreadData): boolean {
  if (!source.run || there.run) return false;
  if (there.counts.events && there.counts.ledgerHash !== source.counts.ledgerHash) return false;
  const link = (t: CheckpointTuple) =>
    `${t.config.configurable?.checkpoint_ns ?? ""}\u0000${t.config.configurable?.checkpoint_id}\u0000${t.parentConfig?.configurable?.checkpoint_id ?? ""}`;
  const mine = new Set(source.checkpoints.map(link));
  return there.checkpoints.every((t) => mine.has(link(t)));
}

/** Copies one thread: blobs, ledger rows and action starts, checkpoints with their writes, then the registry row. */
async function copyThread(src: StateSide, dst: StateSide, thread: string, data: ThreadData): Promise<void> {
  for (const ref of data.refs) {
    const blob = await src.ledger.getBlob(ref);
    if (blob === null) continue;
    const stored = await dst.ledger.putBlob(blob);
    if (stored !== ref)
      throw new MigrationError(
        "MIGRATE_MISMATCH",
        `blob ${ref} of thread "${thread}" was stored as ${stored} on the target (redaction changed it); nothing more was copied`,
      );
  }
  await dst.ledger.importThread(thread, data.ledger);
  if (data.checkpoints.length) {
    const saver = dst.checkpointer!;
    for (const t of data.checkpoints) {
      const ns = t.config.configurable?.checkpoint_ns ?? "";
      const id = t.config.configurable?.checkpoint_id as string;
      const parent = t.parentConfig?.configurable?.checkpoint_id as string | undefined;
      // Every channel as new: PostgresSaver stores the values of the channels named here only.
      await saver.put(
        { configurable: { thread_id: thread, checkpoint_ns: ns, ...(parent ? { checkpoint_id: parent } : {}) } },
        t.checkpoint,
        t.metadata!,
        t.checkpoint.channel_versions,
      );
      const at = { configurable: { thread_id: thread, checkpoint_ns: ns, checkpoint_id: id } };
      // One call per task as the graph made them, special channels (errors, interrupts) apart: the
      // savers number a task's ordinary writes by their position in the call.
      const byTask = new Map<string, { plain: PendingWrite[]; special: PendingWrite[] }>();
      for (const [task, channel, value] of t.pendingWrites ?? []) {
        const g = byTask.get(task) ?? { plain: [], special: [] };
        (channel in WRITES_IDX_MAP ? g.special : g.plain).push([channel, value]);
        byTask.set(task, g);
      }
      for (const [task, g] of byTask) {
        if (g.plain.length) await saver.putWrites(at, g.plain, task);
        if (g.special.length) await saver.putWrites(at, g.special, task);
      }
      failpoint("migrate-checkpoint");
    }
  }
  if (data.run) await dst.importRun(data.run);
}

/** Copies every lesson (all namespaces) the target does not hold yet; a lesson the target holds with another value is kept as it is there. */
async function copyLessons(src: BaseStore | null, dst: BaseStore | null): Promise<LessonsReport> {
  const report: LessonsReport = { source: 0, copied: 0, present: 0, kept: 0, missing: 0 };
  if (!src || !dst) return report;
  for (const ns of await src.listNamespaces({ limit: 1_000_000 })) {
    const items = (await src.search(ns, { limit: 1_000_000 })).filter((i) => nsKey(i.namespace) === nsKey(ns));
    for (const item of items) {
      report.source++;
      const there = await dst.get(ns, item.key);
      if (!there) {
        await dst.put(ns, item.key, item.value);
        report.copied++;
      } else if (JSON.stringify(there.value) === JSON.stringify(item.value)) report.present++;
      else report.kept++;
    }
    // Read back: every lesson of the source is on the target.
    for (const item of items) if (!(await dst.get(ns, item.key))) report.missing++;
  }
  return report;
}

/** Every workspace revision a thread's ledger names (task start, steps, actions, time travel). */
async function revisionsOf(side: StateSide, thread: string): Promise<string[]> {
  const out = new Set<string>();
  for (const e of await side.ledger.list(thread)) {
    const p = e.payload as { revision?: unknown; savedRevision?: unknown };
    for (const v of [p.revision, p.savedRevision]) if (typeof v === "string" && /^[0-9a-f]{64}$/.test(v)) out.add(v);
  }
  return [...out];
}

async function hasRevision(side: RevisionSide, rev: string): Promise<boolean> {
  return side.kind === "store" ? side.store.info(rev) !== null : side.replica.has(rev);
}

/** Copies the revisions the threads name from one side to the other (SQLite store ⇄ PostgreSQL replica), then checks each is there. */
async function copyRevisions(src: StateSide, dst: StateSide, threads: string[]): Promise<RevisionsReport> {
  const named = new Set<string>();
  for (const t of threads) for (const r of await revisionsOf(src, t)) named.add(r);
  const report: RevisionsReport = { named: named.size, copied: 0, present: 0, absent: [] };
  const from = src.revisions;
  const to = dst.revisions;
  for (const rev of named) {
    if (!from || !(await hasRevision(from, rev))) {
      report.absent.push(rev);
      continue;
    }
    if (to && (await hasRevision(to, rev))) {
      report.present++;
      continue;
    }
    if (from.kind === "store" && to?.kind === "replica") await to.replica.push(from.store, rev);
    else if (from.kind === "replica" && to?.kind === "store") await from.replica.pull(to.store, rev);
    else continue;
    if (!(await hasRevision(to, rev)))
      throw new MigrationError("MIGRATE_MISMATCH", `after copying, workspace revision ${rev.slice(0, 12)} is missing on ${dst.location}`);
    report.copied++;
  }
  return report;
}

/**
 * Moves runs from one state to another and checks the copy. Refuses, before writing any run, a
 * target that holds a different run under a thread id being moved; a thread already moved
 * identically is left alone ("already migrated"). The source is only read.
 */
export async function migrateState(opts: { from: string; to: string; threads?: string[] }): Promise<MigrationReport> {
  if (stateIdentity(opts.from) === stateIdentity(opts.to)) {
    throw new MigrationError("MIGRATE_SAME_STATE", `--from and --to are the same state (${opts.to}); nothing to migrate`);
  }
  const src = await openSide(opts.from, { write: false });
  try {
    const all = await src.threads();
    const wanted = opts.threads?.length ? [...new Set(opts.threads)] : all;
    const known = new Set(all);
    const unknown = wanted.find((t) => !known.has(t));
    if (unknown !== undefined)
      throw new MigrationError("MIGRATE_UNKNOWN_THREAD", `unknown thread "${unknown}" in ${src.location}; list runs with \`ledgerloop threads\``);
    if (!wanted.length) throw new MigrationError("MIGRATE_NO_STATE", `${src.location} holds no runs to migrate`);
    const source = new Map<string, ThreadData>();
    for (const t of wanted) {
      const data = await readThread(src, t);
      // A run being written would be copied half-way through a step.
      const runner = data.run ? toRecord(data.run).runner : null;
      if (runner && runnerAlive(runner) === true) {
        throw new MigrationError(
          "MIGRATE_RUN_ACTIVE",
          `run "${t}" is running (pid ${runner.pid} on ${runner.host}); stop it or let it finish, then migrate (nothing was written)`,
        );
      }
      source.set(t, data);
    }
    // Only now is the target opened (created, migrated): bad input above writes nothing anywhere.
    const dst = await openSide(opts.to, { write: true });
    try {
      const todo: string[] = [];
      for (const t of wanted) {
        const there = await readThread(dst, t);
        if (isEmpty(there) || interruptedCopy(source.get(t)!, there)) todo.push(t);
        else {
          const diff = differences(source.get(t)!, there);
          if (diff.length) {
            throw new MigrationError(
              "MIGRATE_TARGET_CONFLICT",
              `${dst.location} already holds a different run with thread id "${t}" (${diff.join(", ")}); no run was written`,
            );
          }
        }
      }
      for (const t of todo) await copyThread(src, dst, t, source.get(t)!);
      const lessons = await copyLessons(src.store, dst.store);
      const revisions = await copyRevisions(src, dst, wanted);
      const threads: ThreadReport[] = [];
      for (const t of wanted) {
        const s = source.get(t)!;
        const there = await readThread(dst, t);
        const diff = differences(s, there);
        if (diff.length) throw new MigrationError("MIGRATE_MISMATCH", `after copying, thread "${t}" differs on ${dst.location}: ${diff.join(", ")}`);
        threads.push({ thread: t, result: todo.includes(t) ? "migrated" : "already migrated", source: s.counts, target: there.counts });
      }
      if (lessons.missing) {
        throw new MigrationError("MIGRATE_MISMATCH", `after copying, ${lessons.missing} lessons of ${src.location} are missing on ${dst.location}`);
      }
      return { from: src.location, to: dst.location, threads, lessons, revisions };
    } finally {
      await dst.close();
    }
  } finally {
    await src.close();
  }
}
