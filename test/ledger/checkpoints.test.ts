import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import BetterSqlite from "better-sqlite3";
import { Annotation, END, interrupt, START, StateGraph } from "@langchain/langgraph";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { afterEach, describe, expect, it } from "vitest";
import {
  checkpointCounts,
  checkpointLinks,
  checkpointStorage,
  checkpointWorkspaceRevs,
  hasCheckpointTable,
  interruptedCheck,
  pruneCheckpoints,
  threadHasCheckpoints,
} from "../../src/ledger/checkpoints.js";
import { Database } from "../../src/sqlite/driver.js";

// The one module over LangGraph's own tables, checked against rows a real SqliteSaver wrote: LangGraph's
// own (over better-sqlite3, a devDependency kept for this), since state databases written by earlier
// ledgerloop versions hold its rows. Our functions read them through our driver, on a second connection.

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function graphOn(db: BetterSqlite.Database) {
  const State = Annotation.Root({ workspaceRev: Annotation<string>(), n: Annotation<number>() });
  return new StateGraph(State)
    .addNode("one", (s) => ({ n: s.n + 1, workspaceRev: `rev-${s.n + 1}` }))
    .addNode("ask", () => {
      interrupt({ question: "go on?" });
      return { n: 100 };
    })
    .addEdge(START, "one")
    .addConditionalEdges("one", (s) => (s.n >= 3 ? "ask" : "one"))
    .addEdge("ask", END)
    .compile({ checkpointer: new SqliteSaver(db) });
}

describe("checkpoints: LangGraph's tables read in one place", () => {
  it("answers empty before LangGraph created its tables", () => {
    const db = new Database(":memory:");
    expect(hasCheckpointTable(db)).toBe(false);
    expect(threadHasCheckpoints(db, "t")).toBe(false);
    expect(checkpointCounts(db).size).toBe(0);
    expect(interruptedCheck(db)).toBeNull();
    expect(checkpointLinks(db)).toEqual([]);
    expect(checkpointWorkspaceRevs(db).size).toBe(0);
    expect(checkpointStorage(db)).toEqual({ count: 0, bytes: 0, writesBytes: 0 });
  });

  it("counts, finds the pause, names the revisions and prunes a chain as LangGraph reads it", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ll-cp-"));
    dirs.push(dir);
    const theirs = new BetterSqlite(path.join(dir, "state.db"));
    const graph = graphOn(theirs);
    await graph.invoke({ n: 0, workspaceRev: "rev-0" }, { configurable: { thread_id: "paused" } });
    await graph.invoke({ n: 5, workspaceRev: "rev-x" }, { configurable: { thread_id: "other" } });
    const history = [];
    for await (const s of graph.getStateHistory({ configurable: { thread_id: "paused" } })) history.push(s);
    const db = new Database(path.join(dir, "state.db"));

    expect(hasCheckpointTable(db)).toBe(true);
    expect(threadHasCheckpoints(db, "paused")).toBe(true);
    expect(threadHasCheckpoints(db, "nobody")).toBe(false);
    expect(checkpointCounts(db).get("paused")).toBe(history.length);
    const paused = interruptedCheck(db)!;
    expect(paused("paused")).toBe(true);
    expect(paused("nobody")).toBe(false);
    expect(paused("other")).toBe(true);
    expect([...checkpointWorkspaceRevs(db)].sort()).toEqual(expect.arrayContaining(["rev-1", "rev-2", "rev-3", "rev-6"]));
    const storage = checkpointStorage(db);
    expect(storage.count).toBe([...checkpointCounts(db).values()].reduce((a, b) => a + b, 0));
    expect(storage.writesBytes).toBeGreaterThan(0);

    // Drop the middle of the paused thread's chain: LangGraph's history skips it and stays a chain.
    const links = checkpointLinks(db).filter((l) => l.thread_id === "paused");
    const ids = history.map((s) => s.config.configurable?.checkpoint_id as string); // newest first
    const [head, middle, below] = [ids[0]!, ids[1]!, ids[2]!];
    expect(links.find((l) => l.checkpoint_id === head)?.parent_checkpoint_id).toBe(middle);
    pruneCheckpoints(db, [{ thread_id: "paused", checkpoint_id: middle }], [{ thread_id: "paused", checkpoint_id: head, parent: below }]);
    const after = [];
    for await (const s of graph.getStateHistory({ configurable: { thread_id: "paused" } })) after.push(s.config.configurable?.checkpoint_id);
    expect(after).toEqual(ids.filter((id) => id !== middle));
    expect(paused("paused")).toBe(true);
    db.close();
    theirs.close();
  });
});
