import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import BetterSqlite3 from "better-sqlite3";
import type { RunnableConfig } from "@langchain/core/runnables";
import { Annotation, Command, END, interrupt, MemorySaver, Send, START, StateGraph } from "@langchain/langgraph";
import {
  emptyCheckpoint,
  INTERRUPT,
  TASKS,
  type BaseCheckpointSaver,
  type CheckpointListOptions,
  type CheckpointTuple,
  type PendingWrite,
} from "@langchain/langgraph-checkpoint";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { afterAll, describe, expect, it } from "vitest";
import { SqliteCheckpointSaver } from "../../src/ledger/sqlite-saver.js";
import { Database } from "../../src/sqlite/driver.js";

// Our checkpointer against LangGraph's own SqliteSaver (over better-sqlite3) on the same state file:
// each must read what the other wrote exactly as it reads its own, and a real graph must run,
// pause and resume across the two.

const root = fs.mkdtempSync(path.join(os.tmpdir(), "ll-saver-"));
const opened: Array<{ close(): unknown }> = [];
afterAll(() => {
  for (const db of opened.splice(0).reverse()) db.close();
  fs.rmSync(root, { recursive: true, force: true });
});

let files = 0;
function newFile(): string {
  return path.join(root, `state-${++files}.db`);
}

/** Our driver on `file`, in WAL as the state database is opened. */
function ourDb(file: string, opts: { readonly?: boolean } = {}): Database {
  const db = new Database(file, opts);
  if (!opts.readonly) db.pragma("journal_mode = WAL");
  opened.push(db);
  return db;
}

/** One state file with both savers on it: theirs over better-sqlite3, ours over our driver. */
function bothOn(file = newFile()) {
  const raw = new BetterSqlite3(file);
  raw.pragma("journal_mode = WAL");
  opened.push(raw);
  return { file, raw, theirs: new SqliteSaver(raw), ours: new SqliteCheckpointSaver(ourDb(file)) };
}

const State = Annotation.Root({
  topic: Annotation<string>(),
  parts: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
  answer: Annotation<string>(),
});

/** Plan, fan out to three parallel `work` tasks by Send, then pause for a human answer. */
function graphWith(checkpointer: BaseCheckpointSaver) {
  return new StateGraph(State)
    .addNode("plan", (s) => ({ parts: [`plan:${s.topic}`] }))
    .addNode("work", (s) => ({ parts: [`work:${s.topic}`] }))
    .addNode("ask", (s) => ({ answer: interrupt<{ question: string }, string>({ question: `ship ${s.parts.length} parts?` }) }))
    .addEdge(START, "plan")
    .addConditionalEdges("plan", (s) => ["a", "b", "c"].map((x) => new Send("work", { topic: `${s.topic}/${x}` })))
    .addEdge("work", "ask")
    .addEdge("ask", END)
    .compile({ checkpointer });
}

const PARTS = ["plan:x", "work:x/a", "work:x/b", "work:x/c"];
const thread = (thread_id: string, extra: Record<string, unknown> = {}): RunnableConfig => ({ configurable: { thread_id, ...extra } });

async function history(saver: BaseCheckpointSaver, config: RunnableConfig, options?: CheckpointListOptions): Promise<CheckpointTuple[]> {
  const out: CheckpointTuple[] = [];
  for await (const t of saver.list(config, options)) out.push(t);
  return out;
}

/** Both savers read every checkpoint of the thread alike: latest, each by id, and the list. */
async function expectSameReads(ours: BaseCheckpointSaver, theirs: BaseCheckpointSaver, config: RunnableConfig): Promise<CheckpointTuple[]> {
  const listed = await history(theirs, config);
  expect(listed.length).toBeGreaterThan(3);
  expect(await history(ours, config)).toEqual(listed);
  expect(await ours.getTuple(config)).toEqual(await theirs.getTuple(config));
  for (const t of listed) expect(await ours.getTuple(t.config)).toEqual(await theirs.getTuple(t.config));
  return listed;
}

/** The pause: Sends stored as TASKS writes, the interrupt as a pending write of the head. */
function expectPausedRows(listed: CheckpointTuple[]): void {
  const writes = listed.flatMap((t) => t.pendingWrites ?? []);
  expect(writes.filter(([, channel]) => channel === TASKS)).toHaveLength(3);
  expect(listed[0]!.pendingWrites!.some(([, channel, value]) => channel === INTERRUPT && JSON.stringify(value).includes("ship 4 parts?"))).toBe(true);
}

async function handOver(firstRunsOurs: boolean): Promise<void> {
  const { ours, theirs } = bothOn();
  const [first, second] = firstRunsOurs ? [ours, theirs] : [theirs, ours];
  const cfg = thread("t1");
  await graphWith(first).invoke({ topic: "x" }, cfg);
  const paused = await graphWith(second).getState(cfg);
  expect(paused.next).toEqual(["ask"]);
  expect(paused.tasks[0]!.interrupts.map((i) => i.value)).toEqual([{ question: "ship 4 parts?" }]);
  expectPausedRows(await expectSameReads(ours, theirs, cfg));

  const done = await graphWith(second).invoke(new Command({ resume: "yes" }), cfg);
  expect(done.answer).toBe("yes");
  expect([...done.parts].sort()).toEqual(PARTS);
  const after = await expectSameReads(ours, theirs, cfg);
  expect(after[0]!.metadata).toMatchObject({ source: "loop" });
  expect((await graphWith(first).getState(cfg)).next).toEqual([]);
}

describe("SqliteCheckpointSaver: LangGraph's SqliteSaver tables over our driver", () => {
  it("creates the same tables as LangGraph's saver, idempotently, leaving the journal mode alone", async () => {
    const file = newFile();
    const db = new Database(file);
    opened.push(db);
    const ours = new SqliteCheckpointSaver(db);
    ours.setup();
    ours.setup();
    expect(db.pragma("journal_mode", { simple: true })).toBe("delete");
    const theirsFile = newFile();
    const raw = new BetterSqlite3(theirsFile);
    opened.push(raw);
    await new SqliteSaver(raw).getTuple(thread("none")); // their setup runs on first use
    for (const pragma of ["table_info(checkpoints)", "table_info(writes)", "index_list(checkpoints)", "index_list(writes)"]) {
      expect(db.pragma(pragma)).toEqual(raw.pragma(pragma));
    }
    // Their setup on our tables is a no-op, and they can use them.
    const theirs = new SqliteSaver(new BetterSqlite3(file));
    opened.push(theirs.db);
    await graphWith(theirs).invoke({ topic: "x" }, thread("t"));
    expect((await ours.getTuple(thread("t")))!.pendingWrites!.some(([, c]) => c === INTERRUPT)).toBe(true);
  });

  it("reads a run LangGraph's saver checkpointed exactly as it does, and resumes it", () => handOver(false));

  it("writes a run LangGraph's saver reads exactly as ours does, and resumes there", () => handOver(true));

  it("pauses at an interrupt after a parallel Send fan-out and resumes on a new connection, as MemorySaver does", async () => {
    const file = newFile();
    const cfg = thread("fan");
    const memory = graphWith(new MemorySaver());
    const first = graphWith(new SqliteCheckpointSaver(ourDb(file)));
    for (const g of [memory, first]) await g.invoke({ topic: "x" }, cfg);
    const view = async (g: typeof memory) => {
      const out = [];
      for await (const s of g.getStateHistory(cfg)) {
        out.push({
          values: s.values,
          next: s.next,
          step: s.metadata?.step,
          source: s.metadata?.source,
          asks: s.tasks.flatMap((t) => t.interrupts.map((i) => i.value)),
        });
      }
      return out;
    };
    const pausedView = await view(first);
    expect(pausedView[0]!.asks).toEqual([{ question: "ship 4 parts?" }]);
    expect(pausedView).toEqual(await view(memory));

    // A fresh connection and saver, as after a restart: the pause and its Sends were on disk.
    const second = graphWith(new SqliteCheckpointSaver(ourDb(file)));
    const [fromMemory, fromDisk] = await Promise.all([memory, second].map((g) => g.invoke(new Command({ resume: "go" }), cfg)));
    expect(fromDisk).toEqual(fromMemory);
    expect(fromDisk!.answer).toBe("go");
    expect([...fromDisk!.parts].sort()).toEqual(PARTS);
    expect(await view(second)).toEqual(await view(memory));
  });

  it("lists with thread, namespace, filter, before and limit as LangGraph's saver does", async () => {
    const { ours, theirs } = bothOn();
    await graphWith(ours).invoke({ topic: "x" }, thread("a"));
    await graphWith(theirs).invoke({ topic: "y" }, thread("b"));
    // Two subgraph-namespace checkpoints in thread a.
    const sub = thread("a", { checkpoint_ns: "sub:1" });
    const subFirst = await ours.put(sub, emptyCheckpoint(), { source: "loop", step: 1, parents: { "": "p" } });
    await theirs.put(subFirst, emptyCheckpoint(), { source: "update", step: 2, parents: {} });
    const a = await history(theirs, thread("a", { checkpoint_ns: "" }));
    const mid = a[2]!.config;

    const configs = [thread("a"), thread("a", { checkpoint_ns: "" }), sub, thread("b"), { configurable: {} }, thread("nobody")];
    const options: Array<CheckpointListOptions | undefined> = [
      undefined,
      { limit: 2 },
      { limit: 0 },
      { before: mid },
      { before: mid, limit: 1 },
      { filter: { source: "loop" } },
      { filter: { step: 1 } },
      { filter: { source: "loop", step: 2 } },
      { filter: { source: undefined, step: -1 } },
      { filter: { parents: {} } },
      { filter: { parents: { "": "p" } } },
      { filter: { source: "loop" }, before: mid, limit: 2 },
    ];
    const sizes = new Set<number>();
    for (const config of configs) {
      for (const opts of options) {
        const expected = await history(theirs, config, opts);
        expect(await history(ours, config, opts)).toEqual(expected);
        sizes.add(expected.length);
      }
    }
    expect(sizes.size).toBeGreaterThan(5);
    expect(await history(ours, thread("a"))).toHaveLength(a.length + 2);
    expect((await history(ours, sub)).map((t) => t.metadata?.step)).toEqual([2, 1]);
    expect(await history(ours, thread("a", { checkpoint_ns: "" }), { filter: { source: "input" } })).toHaveLength(1);
    const before = await history(ours, thread("a", { checkpoint_ns: "" }), { before: mid, limit: 1 });
    expect(before.map((t) => t.config)).toEqual([a[3]!.config]);
  });

  it("keeps the first ordinary write and the latest special write, as LangGraph's saver does", async () => {
    const { ours, theirs } = bothOn();
    const batches: Array<[string, PendingWrite[]]> = [
      [
        "t1",
        [
          ["a", "first"],
          ["b", "first"],
        ],
      ],
      ["t1", [["a", "second"]]], // same slot: ignored
      ["t1", [["__error__", "e1"]]],
      ["t1", [["__error__", "e2"]]], // special only: replaces
      [
        "t1",
        [
          [INTERRUPT, "i1"],
          ["c", "x"],
        ],
      ], // mixed: ignores, so c (slot 1) loses to b
      [
        "t1",
        [
          [INTERRUPT, "i2"],
          ["d", "y"],
        ],
      ], // mixed: the stored interrupt stays
      ["t2", [["a", "other"]]],
    ];
    const run = async (saver: SqliteSaver | SqliteCheckpointSaver, threadId: string) => {
      const cfg = await saver.put(thread(threadId), emptyCheckpoint(), { source: "loop", step: 0, parents: {} });
      for (const [task, writes] of batches) await saver.putWrites(cfg, writes, task);
      return cfg;
    };
    const expected = [
      ["t1", INTERRUPT, "i1"],
      ["t1", "__error__", "e2"],
      ["t1", "a", "first"],
      ["t1", "b", "first"],
      ["t2", "a", "other"],
    ];
    for (const cfg of [await run(ours, "w-ours"), await run(theirs, "w-theirs")]) {
      const mine = await ours.getTuple(cfg);
      expect(mine!.pendingWrites).toEqual(expected);
      expect(mine).toEqual(await theirs.getTuple(cfg));
    }

    // Deliberate difference: without checkpoint_ns, theirs drops an ordinary write (NULL under OR IGNORE).
    const bare = { configurable: { thread_id: "w-ours", checkpoint_id: (await ours.getTuple(thread("w-ours")))!.checkpoint.id } };
    await ours.putWrites(bare, [["late", 1]], "t3");
    expect((await theirs.getTuple(thread("w-ours")))!.pendingWrites!.at(-1)).toEqual(["t3", "late", 1]);
  });

  it("deletes one thread's checkpoints and writes in every namespace, and nothing else", async () => {
    const { ours, theirs, raw } = bothOn();
    await graphWith(theirs).invoke({ topic: "x" }, thread("drop"));
    await graphWith(ours).invoke({ topic: "x" }, thread("keep"));
    const nested = await ours.put(thread("drop", { checkpoint_ns: "sub:1" }), emptyCheckpoint(), { source: "loop", step: 0, parents: {} });
    await ours.putWrites(nested, [["a", 1]], "t");
    const count = (table: string, threadId: string) => raw.prepare(`SELECT count(*) FROM ${table} WHERE thread_id = ?`).pluck().get(threadId) as number;
    const kept = { checkpoints: count("checkpoints", "keep"), writes: count("writes", "keep") };
    expect(count("writes", "drop")).toBeGreaterThan(0);
    const keepBefore = await history(theirs, thread("keep"));

    await ours.deleteThread("drop");
    expect([count("checkpoints", "drop"), count("writes", "drop")]).toEqual([0, 0]);
    expect({ checkpoints: count("checkpoints", "keep"), writes: count("writes", "keep") }).toEqual(kept);
    expect(kept.checkpoints * kept.writes).toBeGreaterThan(0);
    expect(await theirs.getTuple(thread("drop"))).toBeUndefined();
    expect(await history(theirs, thread("keep"))).toEqual(keepBefore);
  });

  it("moves a v<4 checkpoint's parent Sends into its channel values, as LangGraph's saver does", async () => {
    const { ours, theirs } = bothOn();
    const parent = await ours.put(
      thread("old"),
      { ...emptyCheckpoint(), v: 3, channel_versions: { topic: 2, parts: 5 } },
      { source: "loop", step: 1, parents: {} },
    );
    const sends = [new Send("work", { topic: "p" }), new Send("work", { topic: "q" }), new Send("ask", {})];
    await ours.putWrites(parent, [["other", 0], ...sends.map((s): PendingWrite => [TASKS, s])], "task-1");
    const child = await theirs.put(parent, { ...emptyCheckpoint(), v: 3, channel_versions: { topic: 2, parts: 7 } }, { source: "loop", step: 2, parents: {} });
    const modern = await ours.put(parent, { ...emptyCheckpoint(), channel_versions: { parts: 8 } }, { source: "loop", step: 2, parents: {} });

    const migrated = (await ours.getTuple(child))!;
    expect(migrated).toEqual(await theirs.getTuple(child));
    expect((migrated.checkpoint.channel_values[TASKS] as Send[]).map((s) => [s.node, s.args])).toEqual(sends.map((s) => [s.node, s.args]));
    expect(migrated.checkpoint.channel_versions[TASKS]).toBe(7);
    expect((await ours.getTuple(parent))!.checkpoint.channel_values).not.toHaveProperty(TASKS);
    expect((await ours.getTuple(modern))!.checkpoint.channel_values).not.toHaveProperty(TASKS);
    expect(await history(ours, thread("old"))).toEqual(await history(theirs, thread("old")));
  });

  it("reads checkpoints over a read-only connection, without writing", async () => {
    const file = newFile();
    const writer = new SqliteCheckpointSaver(ourDb(file));
    const cfg = thread("ro");
    await graphWith(writer).invoke({ topic: "x" }, cfg);
    const expected = { latest: await writer.getTuple(cfg), listed: await history(writer, cfg) };
    const check = async () => {
      const ro = ourDb(file, { readonly: true });
      const reader = new SqliteCheckpointSaver(ro);
      expect(await reader.getTuple(cfg)).toEqual(expected.latest);
      expect(await history(reader, cfg)).toEqual(expected.listed);
      expect((await graphWith(reader).getState(cfg)).next).toEqual(["ask"]);
      expect(() => ro.exec("CREATE TABLE probe (a)")).toThrow(/readonly/i);
      ro.close();
    };
    await check(); // while the writer has the file open
    writer.db.close();
    await check(); // and after it closed it
  });
});
