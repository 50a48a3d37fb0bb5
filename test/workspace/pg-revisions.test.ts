import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import net from "node:net";
import type { Database } from "../../src/sqlite/driver.js";
import pg from "pg";
import { afterAll, afterEach, beforeEach, expect, it } from "vitest";
import { DEMO_TASK } from "../../src/cli/demo.js";
import { StateStoreError } from "../../src/errors.js";
import { openAgent, type Agent } from "../../src/index.js";
import { openPgState, type PgState } from "../../src/ledger/pg-db.js";
import { openStateDb } from "../../src/ledger/state-db.js";
import { PgRevisionReplica, sweepReplica } from "../../src/ledger/pg-revisions.js";
import { RevisionError, RevisionStore, type RevisionStoreOptions } from "../../src/workspace/revisions.js";
import { describePg, freshSchema, useTestDatabase } from "../helpers/postgres.js";
import { DEMO_TRAJECTORY, DEMO_WORKSPACE, cleanupTemp, readTree, tempWorkspace } from "../helpers/workspace.js";

// The PostgreSQL replica of the revision store: two local stores (two SQLite DBs, two workspaces:
// two machines) that meet only through a real PostgreSQL.

let tmp: string;
const open: Array<Database | PgState> = [];
const agents: Agent[] = [];

beforeEach(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "ll-pgrev-")));
});
afterEach(async () => {
  for (const x of open.splice(0)) {
    if ("pool" in x) await x.close();
    else x.close();
  }
  fs.rmSync(tmp, { recursive: true, force: true });
});
afterAll(async () => {
  await Promise.all(agents.map((a) => a.close()));
  cleanupTemp();
});

/** A "machine": a workspace with its own local state DB and revision store. */
function machine(name: string, opts: RevisionStoreOptions = {}): { ws: string; store: RevisionStore } {
  const ws = path.join(tmp, name);
  fs.mkdirSync(ws, { recursive: true });
  const db = openStateDb(path.join(ws, ".ledgerloop", "state.db"));
  open.push(db);
  return { ws, store: new RevisionStore(db, ws, opts) };
}

async function pgState(url: string, schema: string): Promise<PgState> {
  const st = await openPgState(url, { schema });
  open.push(st);
  return st;
}

function write(root: string, files: Record<string, string | Buffer>): void {
  for (const [rel, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    fs.writeFileSync(path.join(root, rel), content);
  }
}

/** Every entry under root except .ledgerloop: content (base64) and permission bits, or link target. */
function tree(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string) => {
    for (const e of fs.readdirSync(path.join(root, rel), { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (r === ".ledgerloop") continue;
      const abs = path.join(root, r);
      if (e.isSymbolicLink()) out[r] = `-> ${fs.readlinkSync(abs)}`;
      else if (e.isDirectory()) walk(r);
      else out[r] = `${(fs.statSync(abs).mode & 0o777).toString(8)} ${fs.readFileSync(abs).toString("base64")}`;
    }
  };
  walk("");
  return out;
}

async function rows(st: PgState, table: string): Promise<number> {
  return (await st.pool.query(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n as number;
}

async function expectRevisionError(p: Promise<unknown>, code: string, ...mention: string[]): Promise<void> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(RevisionError);
  expect((err as RevisionError).code).toBe(code);
  for (const m of mention) expect((err as Error).message).toContain(m);
  expect((err as Error).message).not.toContain("\n");
}

/** A workspace of `dirs` directories of `perDir` small files, plus a few root files. */
function manyFiles(root: string, dirs: number, perDir: number): void {
  for (let d = 0; d < dirs; d++) {
    for (let f = 0; f < perDir; f++) write(root, { [`src/d${d}/f${f}.ts`]: `export const v${d}_${f} = ${d * 1000 + f};\n`.repeat(3) });
  }
  write(root, { "README.md": "# many\n", "package.json": "{}\n" });
}

async function expectStateError(p: Promise<unknown>, code: string, pattern: RegExp): Promise<void> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(StateStoreError);
  expect((err as StateStoreError).code).toBe(code);
  expect((err as Error).message).toMatch(pattern);
  expect((err as Error).message).not.toContain("\n");
}

it("says in one line that PostgreSQL cannot be reached when a push or pull fails for it, naming the revision", async () => {
  const port = await new Promise<number>((resolve) => {
    const srv = net.createServer().listen(0, "127.0.0.1", () => {
      const p = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(p));
    });
  });
  const pool = new pg.Pool({ connectionString: `postgres://u:secret@127.0.0.1:${port}/db`, connectionTimeoutMillis: 5_000 });
  try {
    const a = machine("a");
    write(a.ws, { "a.txt": "a\n" });
    const r = await a.store.snapshot();
    const replica = new PgRevisionReplica(pool);
    await expectStateError(
      replica.push(a.store, r.revId),
      "STATE_DB_UNREACHABLE",
      new RegExp(`^pushing workspace revision ${r.revId} to PostgreSQL failed: cannot reach the server \\(ECONNREFUSED`),
    );
    await expectStateError(
      replica.pull(machine("b").store, r.revId),
      "STATE_DB_UNREACHABLE",
      new RegExp(`^pulling workspace revision ${r.revId} from PostgreSQL failed`),
    );
  } finally {
    await pool.end();
  }
});

describePg("workspace revisions replicated to PostgreSQL", () => {
  const db = useTestDatabase("pgrev");

  it("pushes a revision from one machine and pulls it into another, whose restore gives the same files, modes and symlinks", async () => {
    const st = await pgState(db.url, freshSchema("rev"));
    // Small limits so that blobs kept as files and a stat-only large file are in the revision too.
    const opts = { inlineBlobBytes: 2_000, largeFileBytes: 100_000 };
    const a = machine("a", opts);
    const compressible = Buffer.from("the same line again and again\n".repeat(400));
    write(a.ws, {
      "README.md": "# demo\n",
      "empty.txt": "",
      "src/app/main.ts": "console.log('hi');\n",
      "src/app/util/deep.ts": "export const deep = 1;\n",
      "bin/run.sh": "#!/bin/sh\necho run\n",
      "assets/noise.bin": randomBytes(5_000),
      "assets/text.log.txt": compressible,
      "data/huge.dat": Buffer.alloc(200_000, 7),
    });
    fs.chmodSync(path.join(a.ws, "bin/run.sh"), 0o755);
    fs.chmodSync(path.join(a.ws, "README.md"), 0o600);
    fs.symlinkSync("../src/app/main.ts", path.join(a.ws, "bin/main-link"));
    fs.symlinkSync("does-not-exist", path.join(a.ws, "dangling"));
    const snap = await a.store.snapshot({ label: "first" });
    expect(snap.stats.large).toBe(1);

    const replica = new PgRevisionReplica(st.pool);
    expect(await replica.has(snap.revId)).toBe(false);
    const pushed = await replica.push(a.store, snap.revId);
    // Every directory is a tree; every file and link but the large one a blob.
    expect(pushed).toMatchObject({ trees: 7, blobs: 9 });
    expect(pushed.bytes).toBeGreaterThan(5_000);
    expect([await rows(st, "ll_rev_trees"), await rows(st, "ll_rev_blobs"), await rows(st, "ll_rev_revisions")]).toEqual([7, 9, 1]);
    // The compressible file travels compressed, the random one as it is.
    const stored = await st.pool.query("SELECT codec, octet_length(data) AS n FROM ll_rev_blobs WHERE size = $1", [compressible.length]);
    expect(stored.rows[0]).toMatchObject({ codec: 1 });
    expect(stored.rows[0].n).toBeLessThan(compressible.length / 10);

    // Machine b has an empty workspace and its own state DB, and reaches PostgreSQL with its own pool.
    const b = machine("b", opts);
    const other = new PgRevisionReplica((await pgState(db.url, st.schema)).pool);
    expect(await other.has(snap.revId)).toBe(true);
    expect(await other.pull(b.store, snap.revId)).toMatchObject({ trees: 7, blobs: 9, bytes: pushed.bytes });
    expect(b.store.info(snap.revId)).toMatchObject({ label: "first", files: 10, createdAt: a.store.info(snap.revId)!.createdAt });
    const restored = await b.store.restore(snap.revId);
    expect(restored.skipped).toEqual([{ path: "data/huge.dat", reason: "large" }]);
    const expected = tree(a.ws);
    delete expected["data/huge.dat"];
    expect(tree(b.ws)).toEqual(expected);
    expect(fs.lstatSync(path.join(b.ws, "bin/main-link")).isSymbolicLink()).toBe(true);
    expect(await b.store.status()).toMatchObject({ clean: true, baseRevId: snap.revId });
    // The blob over inlineBlobBytes is a file on b's side too.
    expect(b.store.stats().blobs.inFiles.count).toBe(a.store.stats().blobs.inFiles.count);
    expect(b.store.stats().blobs.inFiles.count).toBeGreaterThan(0);

    // Pulling again copies nothing; pushing again sends nothing.
    expect(await other.pull(b.store, snap.revId)).toEqual({ trees: 0, blobs: 0, bytes: 0 });
    expect(await replica.push(a.store, snap.revId)).toEqual({ trees: 0, blobs: 0, bytes: 0, queried: 0 });
    expect(await other.push(b.store, snap.revId)).toEqual({ trees: 0, blobs: 0, bytes: 0, queried: 0 });
  });

  it("sends only what changed when revisions are pushed step after step", async () => {
    const st = await pgState(db.url, freshSchema("rev"));
    const a = machine("a");
    manyFiles(a.ws, 10, 20);
    const r1 = await a.store.snapshot();
    const replica = new PgRevisionReplica(st.pool);
    const first = await replica.push(a.store, r1.revId);
    expect(first).toMatchObject({ trees: 12, blobs: 202, queried: 1 + 12 + 202 });

    // One file changed, two directories down: its blob, and the trees of src/d3, src and the root.
    write(a.ws, { "src/d3/f7.ts": "changed\n" });
    const r2 = await a.store.snapshot();
    const second = await replica.push(a.store, r2.revId);
    expect(second).toEqual({ trees: 3, blobs: 1, bytes: expect.any(Number), queried: 1 + 3 + 1 });
    expect(second.bytes).toBeLessThan(first.bytes / 5);
    expect([await rows(st, "ll_rev_trees"), await rows(st, "ll_rev_blobs"), await rows(st, "ll_rev_revisions")]).toEqual([15, 203, 2]);

    // A replica that knows nothing yet (another worker) asks about the trees once, skips every
    // subtree PostgreSQL has, and asks about the blobs of the changed trees only (the root's 2 and
    // src/d5's 21).
    write(a.ws, { "src/d5/f1.ts": "changed too\n", "src/d5/new.ts": "new\n" });
    const r3 = await a.store.snapshot();
    const fresh = new PgRevisionReplica(st.pool);
    const third = await fresh.push(a.store, r3.revId);
    expect(third).toMatchObject({ trees: 3, blobs: 2, queried: 1 + 12 + 2 + 21 });
    // A revision already there costs one question, or none for a replica that pushed it.
    expect(await new PgRevisionReplica(st.pool).push(a.store, r3.revId)).toEqual({ trees: 0, blobs: 0, bytes: 0, queried: 1 });
    expect(await fresh.push(a.store, r3.revId)).toMatchObject({ queried: 0 });

    // Each of them restores on another machine.
    const b = machine("b");
    for (const rev of [r2.revId, r1.revId, r3.revId]) {
      await fresh.pull(b.store, rev);
      await b.store.restore(rev);
      await a.store.restore(rev);
      expect(tree(b.ws)).toEqual(tree(a.ws));
    }
  });

  it("a sweep keeps what live revisions reach and removes the rest; a replica that remembered swept objects pushes them again", async () => {
    const st = await pgState(db.url, freshSchema("rev"));
    const a = machine("a");
    manyFiles(a.ws, 4, 5);
    const r1 = await a.store.snapshot();
    write(a.ws, { "src/d1/f1.ts": "changed\n", "gone/only.ts": "only in r2\n" });
    const r2 = await a.store.snapshot();
    const replica = new PgRevisionReplica(st.pool);
    await replica.push(a.store, r1.revId);
    await replica.push(a.store, r2.revId);
    const all = [await rows(st, "ll_rev_trees"), await rows(st, "ll_rev_blobs")];

    // Only r1 is live: r2, its own trees (root, src, src/d1, gone) and blobs (the changed file, gone/only.ts) go.
    const swept = await sweepReplica(st.pool, new Set([r1.revId]), { graceMs: 0 });
    expect(swept).toMatchObject({ revisionsKept: 1, revisionsDeleted: 1, treesDeleted: 4, blobsDeleted: 2 });
    expect(swept.bytesFreed).toBeGreaterThan(0);
    expect([await rows(st, "ll_rev_trees"), await rows(st, "ll_rev_blobs"), await rows(st, "ll_rev_revisions")]).toEqual([all[0]! - 4, all[1]! - 2, 1]);
    const b = machine("b");
    await new PgRevisionReplica(st.pool).pull(b.store, r1.revId);
    await b.store.restore(r1.revId);
    await a.store.restore(r1.revId);
    expect(tree(b.ws)).toEqual(tree(a.ws));

    // The same replica object still remembers r2 and its objects; the sweep's generation makes it
    // forget, so it sends them again instead of naming trees that are gone.
    expect(await replica.push(a.store, r2.revId)).toMatchObject({ trees: 4, blobs: 2 });
    const c = machine("c");
    await new PgRevisionReplica(st.pool).pull(c.store, r2.revId);
    expect(c.store.info(r2.revId)).not.toBeNull();

    // A revision pushed within the grace period stays, named or not.
    expect(await sweepReplica(st.pool, new Set(), { graceMs: 60_000 })).toMatchObject({
      revisionsKept: 2,
      revisionsDeleted: 0,
      treesDeleted: 0,
      blobsDeleted: 0,
    });
    // So does an old one pushed again (an edit undone brings its files back): its push time is renewed.
    await st.pool.query("UPDATE ll_rev_revisions SET pushed_at = now() - interval '2 hours'");
    expect(await replica.push(a.store, r1.revId)).toMatchObject({ trees: 0, blobs: 0 });
    expect(await sweepReplica(st.pool, new Set(), { graceMs: 3_600_000 })).toMatchObject({ revisionsKept: 1, revisionsDeleted: 1 });
    expect((await st.pool.query("SELECT rev_id FROM ll_rev_revisions")).rows).toEqual([{ rev_id: r1.revId }]);
  });

  it("a push whose objects a sweep removes between its questions and its commit starts again and leaves a whole revision", async () => {
    const st = await pgState(db.url, freshSchema("rev"));
    const a = machine("a");
    manyFiles(a.ws, 3, 4);
    const r0 = await a.store.snapshot();
    await new PgRevisionReplica(st.pool).push(a.store, r0.revId);
    write(a.ws, { "src/d0/f0.ts": "changed\n" });
    const r1 = await a.store.snapshot();
    // r1 shares src/d1 and src/d2 with r0: the push finds them there and will not send them. Then,
    // at its first question about blobs, a sweep that keeps nothing removes r0 with those trees.
    const replica = new PgRevisionReplica(st.pool);
    let swept = false;
    const query = st.pool.query.bind(st.pool) as (...args: unknown[]) => Promise<unknown>;
    (st.pool as unknown as { query: (...args: unknown[]) => Promise<unknown> }).query = async (...args: unknown[]) => {
      if (!swept && typeof args[0] === "string" && args[0].startsWith("SELECT hash FROM ll_rev_blobs")) {
        swept = true;
        expect(await sweepReplica(st.pool, new Set(), { graceMs: 0 })).toMatchObject({ revisionsDeleted: 1, treesDeleted: 5 });
      }
      return query(...args);
    };
    await replica.push(a.store, r1.revId);
    expect(swept).toBe(true);
    // Committed under the old generation, r1 would name src/d1 and src/d2, which are gone.
    const b = machine("b");
    await new PgRevisionReplica(st.pool).pull(b.store, r1.revId);
    await b.store.restore(r1.revId);
    expect(tree(b.ws)).toEqual(tree(a.ws));
    expect([await rows(st, "ll_rev_trees"), await rows(st, "ll_rev_blobs"), await rows(st, "ll_rev_revisions")]).toEqual([5, 14, 1]);
  });

  it("takes concurrent pushes of the same revisions from two processes, writing each object once", async () => {
    const schema = freshSchema("rev");
    const [s1, s2] = [await pgState(db.url, schema), await pgState(db.url, schema)];
    // Two machines with the same files: the same revision ids, taken independently.
    const a = machine("a");
    const b = machine("b");
    manyFiles(a.ws, 6, 200);
    manyFiles(b.ws, 6, 200);
    const [ra, rb] = [await a.store.snapshot(), await b.store.snapshot()];
    expect(ra.revId).toBe(rb.revId);
    const [p1, p2] = [new PgRevisionReplica(s1.pool), new PgRevisionReplica(s2.pool)];
    const [x, y] = await Promise.all([p1.push(a.store, ra.revId), p2.push(b.store, rb.revId)]);
    expect(x.blobs + y.blobs).toBe(1202);
    expect(x.trees + y.trees).toBe(8);
    expect([await rows(s1, "ll_rev_trees"), await rows(s1, "ll_rev_blobs"), await rows(s1, "ll_rev_revisions")]).toEqual([8, 1202, 1]);

    // Then different revisions sharing most objects, each pushed by both at once (rows in
    // different orders would deadlock; hash order does not).
    write(a.ws, { "src/d0/f0.ts": "a\n", "src/d5/f9.ts": "a\n" });
    write(b.ws, { "src/d0/f0.ts": "b\n", "src/d5/f9.ts": "b\n" });
    const [na, nb] = [await a.store.snapshot(), await b.store.snapshot()];
    await Promise.all([
      p1.push(a.store, na.revId),
      p2.push(b.store, nb.revId),
      new PgRevisionReplica(s2.pool).push(a.store, na.revId),
      new PgRevisionReplica(s1.pool).push(b.store, nb.revId),
    ]);
    expect(await rows(s1, "ll_rev_revisions")).toBe(3);
    expect(await rows(s1, "ll_rev_blobs")).toBe(1204); // "a\n" and "b\n"

    const c = machine("c");
    await p2.pull(c.store, na.revId);
    await c.store.restore(na.revId);
    expect(tree(c.ws)).toEqual(tree(a.ws));
  });

  it("names a revision PostgreSQL does not have, and a damaged or missing object, without storing the revision", async () => {
    const st = await pgState(db.url, freshSchema("rev"));
    const replica = new PgRevisionReplica(st.pool);
    const b = machine("b");
    const nope = "ab".repeat(32);
    expect(await replica.has(nope)).toBe(false);
    await expectRevisionError(replica.pull(b.store, nope), "REV_NOT_FOUND", `workspace revision ${nope} is not in the PostgreSQL state database`);

    const a = machine("a");
    write(a.ws, { "a.txt": "the content of a\n".repeat(20), "d/b.txt": "b\n", "d/c.txt": "c\n" });
    const r = await a.store.snapshot();
    await replica.push(a.store, r.revId);
    const hashOf = (rel: string) => r.files.get(rel)!.hash;

    // A blob row whose bytes were changed (same length, so only the hash check can tell).
    await st.pool.query("UPDATE ll_rev_blobs SET data = overlay(data placing '\\x00'::bytea from 1) WHERE hash = $1", [hashOf("d/b.txt")]);
    await expectRevisionError(replica.pull(b.store, r.revId), "REV_BLOB_CORRUPT", `blob ${hashOf("d/b.txt")} (from PostgreSQL) is corrupt`);
    expect(b.store.info(r.revId)).toBeNull();
    await expectRevisionError(b.store.restore(r.revId), "REV_NOT_FOUND");
    expect(fs.readdirSync(b.ws)).toEqual([".ledgerloop"]);

    // A compressed blob whose stream is damaged.
    await st.pool.query("UPDATE ll_rev_blobs SET data = $2 WHERE hash = $1", [hashOf("d/b.txt"), Buffer.from("b\n")]);
    await st.pool.query("UPDATE ll_rev_blobs SET data = '\\xdeadbeef'::bytea WHERE hash = $1", [hashOf("a.txt")]);
    await expectRevisionError(replica.pull(machine("b2").store, r.revId), "REV_BLOB_CORRUPT", `blob ${hashOf("a.txt")} (from PostgreSQL) is corrupt`);

    // A missing blob, then a damaged tree.
    await st.pool.query("DELETE FROM ll_rev_blobs WHERE hash = $1", [hashOf("d/c.txt")]);
    await expectRevisionError(
      replica.pull(machine("b3").store, r.revId),
      "REV_BLOB_MISSING",
      `blob ${hashOf("d/c.txt")} of revision ${r.revId} is missing from PostgreSQL`,
    );
    await st.pool.query("UPDATE ll_rev_trees SET data = data || '\\x00'::bytea WHERE hash = $1", [r.revId]);
    await expectRevisionError(replica.pull(machine("b4").store, r.revId), "REV_TREE_CORRUPT", `tree object ${r.revId} in PostgreSQL is corrupt`);

    // A database without the replica's tables (not migrated) is named as such.
    const bare = new pg.Pool({ connectionString: db.url, options: `-c search_path=${freshSchema("bare")}` });
    try {
      await expectStateError(
        new PgRevisionReplica(bare).push(a.store, r.revId),
        "STATE_DB_UNREADABLE",
        /the database refused it \(42P01: relation "ll_rev_revisions" does not exist\)/,
      );
    } finally {
      await bare.end();
    }

    // Pushing a revision the local store does not have is refused too.
    await expectRevisionError(replica.push(b.store, "cd".repeat(32)), "REV_NOT_FOUND", "cd".repeat(32));
  });

  it("gets every revision a run on PostgreSQL names in its checkpoints into PostgreSQL, ready for another machine", async () => {
    const ws = tempWorkspace(DEMO_WORKSPACE);
    const agent = await openAgent({ workspace: ws, model: `scripted:${DEMO_TRAJECTORY}`, retrieval: "lexical", maxSteps: 30, stateUrl: db.url });
    agents.push(agent);
    expect(agent.runtime.revisionReplica).toBeInstanceOf(PgRevisionReplica);
    const r = await agent.run(DEMO_TASK, { thread: "rev-run" });
    expect(r.status).toBe("finished");

    const revs = new Set<string>();
    for await (const s of agent.graph.getStateHistory({ configurable: { thread_id: "rev-run" } })) {
      const rev = (s.values as { workspaceRev?: string | null }).workspaceRev;
      if (rev) revs.add(rev);
    }
    expect(revs.size).toBeGreaterThan(2);
    const st = await pgState(db.url, "public");
    const there = await st.pool.query<{ rev_id: string }>("SELECT rev_id FROM ll_rev_revisions WHERE rev_id = ANY($1)", [[...revs]]);
    expect(new Set(there.rows.map((x) => x.rev_id))).toEqual(revs);

    // Another machine materialises the final workspace from PostgreSQL alone.
    const final = (await agent.graph.getState({ configurable: { thread_id: "rev-run" } })).values as { workspaceRev: string };
    const m = machine("worker");
    await new PgRevisionReplica(st.pool).pull(m.store, final.workspaceRev);
    await m.store.restore(final.workspaceRev);
    expect(readTree(m.ws)).toEqual(readTree(ws));

    // Time travel on another machine: a graph over an empty workspace of its own continues the run
    // from an early checkpoint; the node pulls that checkpoint's revision from PostgreSQL, restores
    // it, and the run ends with the same files as on the first machine.
    const history = [];
    for await (const s of agent.graph.getStateHistory({ configurable: { thread_id: "rev-run" } })) history.push(s);
    const early = history.findLast((s) => s.next.includes("act") && (s.values as { step: number }).step === 4)!;
    const earlyRev = (early.values as { workspaceRev: string }).workspaceRev;
    expect(earlyRev).not.toBe(final.workspaceRev);
    const ws2 = tempWorkspace();
    const second = await openAgent({ workspace: ws2, model: `scripted:${DEMO_TRAJECTORY}`, retrieval: "lexical", maxSteps: 30, stateUrl: db.url });
    agents.push(second);
    expect(second.runtime.revisions.info(earlyRev)).toBeNull();
    const cfg = { configurable: { thread_id: "rev-run", checkpoint_id: String(early.config.configurable?.checkpoint_id) }, recursionLimit: 200 };
    expect(((await second.graph.invoke(null, cfg)) as { status: string }).status).toBe("finished");
    expect(second.runtime.revisions.info(earlyRev)).not.toBeNull();
    expect(readTree(ws2)).toEqual(readTree(ws));
  });
});
