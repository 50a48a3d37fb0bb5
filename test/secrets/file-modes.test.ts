import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openStateDb } from "../../src/ledger/state-db.js";
import { SqliteLedger } from "../../src/ledger/sqlite-ledger.js";
import { loadEventSchemas } from "../../src/ledger/event-rows.js";
import { NgramIndex } from "../../src/retrieval/ngram-index.js";
import { writeRunReport } from "../../src/report/write-run-report.js";
import { testAgent, type TestAgent } from "../helpers/agent.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

// These tests append synchronously (appendSync): the event schemas load first.
await loadEventSchemas();

const mode = (p: string) => fs.statSync(p).mode & 0o777;
const dirs: string[] = [];
let agents: TestAgent[] = [];
let umask: number;
afterEach(async () => {
  await Promise.all(agents.map((a) => a.close()));
  agents = [];
  cleanupTemp();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
  if (umask !== undefined) process.umask(umask);
});

function tmp(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), "ll-modes-"));
  dirs.push(d);
  return d;
}

// A permissive umask, as on many desktops: the modes must not depend on the user's umask.
function permissiveUmask(): void {
  umask = process.umask(0o002);
}

describe("state files are private to their owner", () => {
  it("creates .ledgerloop 0700 and state.db (and its WAL) 0600", () => {
    permissiveUmask();
    const dir = path.join(tmp(), ".ledgerloop");
    const db = openStateDb(path.join(dir, "state.db"));
    new SqliteLedger(db).appendSync({ threadId: "t", parentId: null, type: "decision", payload: { text: "a", step: 0 } });
    expect(mode(dir)).toBe(0o700);
    expect(mode(path.join(dir, "state.db"))).toBe(0o600);
    expect(mode(path.join(dir, "state.db-wal"))).toBe(0o600);
    db.close();
  });

  it("tightens a state directory and database made world-readable by an older version", () => {
    const dir = path.join(tmp(), ".ledgerloop");
    openStateDb(path.join(dir, "state.db")).close();
    fs.chmodSync(dir, 0o755);
    fs.chmodSync(path.join(dir, "state.db"), 0o644);
    openStateDb(path.join(dir, "state.db"), { create: false }).close();
    expect(mode(dir)).toBe(0o700);
    expect(mode(path.join(dir, "state.db"))).toBe(0o600);
  });

  it("never narrows a shared directory given as the state directory", () => {
    const shared = tmp();
    fs.chmodSync(shared, 0o1777);
    openStateDb(path.join(shared, "state.db")).close();
    expect(mode(shared) & 0o777).toBe(0o777);
    expect(mode(path.join(shared, "state.db"))).toBe(0o600);
  });

  it("creates index.db 0600 and tightens an existing one", () => {
    permissiveUmask();
    const file = path.join(tmp(), ".ledgerloop", "index.db");
    NgramIndex.open(file).close();
    expect(mode(file)).toBe(0o600);
    fs.chmodSync(file, 0o644);
    NgramIndex.open(file).close();
    expect(mode(file)).toBe(0o600);
  });

  it("writes reports 0600, also over an existing world-readable one", async () => {
    permissiveUmask();
    const ws = tempWorkspace(undefined, { "a.txt": "a\n" });
    const a = await testAgent(ws, { decide: [{ tool_calls: [{ name: "finish", args: { summary: "done" } }] }] });
    agents.push(a);
    await a.run("nothing");
    const file = await writeRunReport(a.rt, "t1");
    expect(mode(file)).toBe(0o600);
    expect(mode(path.dirname(file))).toBe(0o700);
    fs.chmodSync(file, 0o644);
    await writeRunReport(a.rt, "t1");
    expect(mode(file)).toBe(0o600);
    expect(mode(path.join(ws, ".ledgerloop"))).toBe(0o700);
  }, 60_000);
});
