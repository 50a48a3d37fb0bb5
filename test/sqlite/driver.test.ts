import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Database, SqliteError } from "../../src/sqlite/driver.js";

// The driver over libsql: each case is a place where libsql on its own behaves otherwise than the
// better-sqlite3 API the code was written against (rows with a `_metadata` key, pluck ignored by
// get(), a lone null bound as named parameters, no nested transactions, `readonly` ignored, no busy
// timeout), so each of these fails against libsql used directly.

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ll-sqlite-"));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function fresh(name: string): Database {
  const db = new Database(path.join(dir, name));
  db.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, data BLOB)");
  return db;
}

describe("rows", () => {
  it("are plain objects of their columns, arrays with raw(), the first value with pluck(), for get, all and iterate", () => {
    const db = fresh("rows.db");
    db.prepare("INSERT INTO t (name, data) VALUES (?, ?)").run("a", Buffer.from([0, 255, 7]));
    db.prepare("INSERT INTO t (name, data) VALUES (?, ?)").run("b", null);
    const row = db.prepare<[], { id: number; name: string; data: Buffer }>("SELECT * FROM t ORDER BY id").get()!;
    expect(Object.keys(row)).toEqual(["id", "name", "data"]);
    expect(row.data.equals(Buffer.from([0, 255, 7]))).toBe(true);
    expect(JSON.parse(JSON.stringify(db.prepare("SELECT id, name FROM t ORDER BY id").all()))).toEqual([
      { id: 1, name: "a" },
      { id: 2, name: "b" },
    ]);
    expect(db.prepare("SELECT name FROM t ORDER BY id").pluck().get()).toBe("a");
    expect(db.prepare("SELECT name FROM t ORDER BY id").pluck().all()).toEqual(["a", "b"]);
    expect(db.prepare("SELECT id, name FROM t ORDER BY id").raw().all()).toEqual([
      [1, "a"],
      [2, "b"],
    ]);
    expect([...db.prepare<[], { name: string }>("SELECT name FROM t ORDER BY id").iterate()].map((r) => r.name)).toEqual(["a", "b"]);
    expect(db.prepare("SELECT name FROM t WHERE id = 99").get()).toBeUndefined();
    db.close();
  });

  it("binds a lone null or Buffer positionally, arrays and spread values alike, and a plain object by name", () => {
    const db = fresh("bind.db");
    db.prepare("INSERT INTO t (name, data) VALUES (?, ?)").run(["x", Buffer.from("blob")]);
    expect(db.prepare("SELECT ? AS v").pluck().get(null)).toBeNull();
    expect(db.prepare<[Buffer], number>("SELECT count(*) FROM t WHERE data = ?").pluck().get(Buffer.from("blob"))).toBe(1);
    expect(db.prepare("SELECT @a + :b + $c AS v").pluck().get({ a: 1, b: 2, c: 3 })).toBe(6);
    const r = db.prepare("INSERT INTO t (name) VALUES (?)").run("y");
    expect(r).toEqual({ changes: 1, lastInsertRowid: 2 });
    db.close();
  });
});

describe("transactions", () => {
  it("commit, roll back on a throw, and nest as savepoints: an inner failure undoes only the inner part", () => {
    const db = fresh("tx.db");
    const insert = db.prepare("INSERT INTO t (name) VALUES (?)");
    const names = () => db.prepare("SELECT name FROM t ORDER BY id").pluck().all();
    db.transaction(() => insert.run("one"))();
    expect(() =>
      db.transaction(() => {
        insert.run("lost");
        throw new Error("boom");
      })(),
    ).toThrow("boom");
    expect(names()).toEqual(["one"]);
    const inner = db.transaction(() => {
      insert.run("inner");
      throw new Error("inner fails");
    });
    db.transaction(() => {
      insert.run("outer");
      expect(() => inner()).toThrow("inner fails");
      expect(db.inTransaction).toBe(true);
    }).immediate();
    expect(names()).toEqual(["one", "outer"]);
    expect(db.inTransaction).toBe(false);
    db.close();
  });

  it("refuses an async function, which would commit before it ends, and leaves nothing open", () => {
    const db = fresh("async.db");
    const insert = db.prepare("INSERT INTO t (name) VALUES (?)");
    expect(() => db.transaction(async () => insert.run("late"))()).toThrow(/cannot be async/);
    expect(db.inTransaction).toBe(false);
    expect(db.prepare("SELECT count(*) FROM t").pluck().get()).toBe(0);
    db.close();
  });
});

describe("opening", () => {
  it("readonly reads and refuses every write with SQLITE_READONLY, also for a path needing URI escapes", () => {
    const sub = path.join(dir, "a b#c%d?e");
    fs.mkdirSync(sub);
    const file = path.join(sub, "ro.db");
    const w = new Database(file);
    w.exec("CREATE TABLE t (x); INSERT INTO t VALUES (1)");
    w.close();
    const ro = new Database(file, { readonly: true });
    expect(ro.readonly).toBe(true);
    expect(ro.prepare("SELECT x FROM t").pluck().get()).toBe(1);
    let err: unknown;
    try {
      ro.exec("INSERT INTO t VALUES (2)");
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SqliteError);
    expect((err as SqliteError).code).toBe("SQLITE_READONLY");
    ro.close();
    expect(fs.readdirSync(sub).sort()).toEqual(["ro.db"]);
  });

  it("refuses a missing file when it must exist (readonly implies it) without creating it", () => {
    const file = path.join(dir, "missing.db");
    for (const opts of [{ readonly: true }, { fileMustExist: true }]) {
      expect(() => new Database(file, opts)).toThrow(expect.objectContaining({ code: "SQLITE_CANTOPEN" }));
    }
    expect(fs.existsSync(file)).toBe(false);
  });

  it("names SQLite's errors by code (constraint, not a database) as SqliteError", () => {
    const db = fresh("codes.db");
    db.prepare("INSERT INTO t (id) VALUES (1)").run();
    expect(() => db.prepare("INSERT INTO t (id) VALUES (1)").run()).toThrow(
      expect.objectContaining({ name: "SqliteError", code: "SQLITE_CONSTRAINT_PRIMARYKEY" }),
    );
    db.close();
    const junk = path.join(dir, "junk.db");
    fs.writeFileSync(junk, "x".repeat(8192));
    expect(() => new Database(junk).prepare("SELECT * FROM sqlite_master").all()).toThrow(expect.objectContaining({ code: "SQLITE_NOTADB" }));
  });

  it("waits for a writer up to the busy timeout, then says SQLITE_BUSY", () => {
    const file = path.join(dir, "busy.db");
    const a = new Database(file);
    a.exec("CREATE TABLE t (x)");
    const b = new Database(file, { timeout: 300 });
    expect(b.pragma("busy_timeout", { simple: true })).toBe(300);
    expect(new Database(file).pragma("busy_timeout", { simple: true })).toBe(5000);
    a.exec("BEGIN IMMEDIATE");
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    expect(() => b.exec("INSERT INTO t VALUES (1)")).toThrow(expect.objectContaining({ code: "SQLITE_BUSY" }));
    // It waited (sleeping, not spinning) rather than failing at once.
    expect(performance.now() - t0).toBeGreaterThanOrEqual(250);
    const cpu = process.cpuUsage(cpu0);
    expect((cpu.user + cpu.system) / 1000).toBeLessThan(250);
    a.exec("COMMIT");
    b.exec("INSERT INTO t VALUES (1)");
    a.close();
    b.close();
  });

  it("a closed connection says so, and closing twice is harmless", () => {
    const db = fresh("closed.db");
    db.close();
    db.close();
    expect(db.open).toBe(false);
    expect(() => db.prepare("SELECT 1")).toThrow(/closed/);
  });
});
