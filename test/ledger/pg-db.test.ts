import net from "node:net";
import { describe, expect, it } from "vitest";
import pg from "pg";
import { StateStoreError } from "../../src/errors.js";
import { PG_SCHEMA_VERSION, isPostgresUrl, openPgState, parsePgUrl, redactUrl } from "../../src/ledger/pg-db.js";
import { describePg, freshSchema, useTestDatabase, withDatabase } from "../helpers/postgres.js";

/** The error openPgState raised, which must be one line and never show the password. */
async function failure(url: string, opts = {}): Promise<StateStoreError> {
  const err = await openPgState(url, { connectTimeoutMs: 5000, ...opts }).then(
    () => {
      throw new Error("expected openPgState to fail");
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(StateStoreError);
  const e = err as StateStoreError;
  expect(e.message).not.toContain("\n");
  return e;
}

describe("state URLs", () => {
  it("tells a PostgreSQL URL from a directory", () => {
    expect(isPostgresUrl("postgres://u@h/db")).toBe(true);
    expect(isPostgresUrl("postgresql://u@h/db")).toBe(true);
    expect(isPostgresUrl("./.ledgerloop")).toBe(false);
    expect(isPostgresUrl(undefined)).toBe(false);
  });

  it("hides the password in messages", () => {
    expect(redactUrl("postgres://me:s3cret@db.example:5433/ll")).toBe("postgres://me:***@db.example:5433/ll");
    expect(redactUrl("postgres://me@db.example/ll")).toBe("postgres://me@db.example/ll");
  });

  it("refuses a malformed URL in one line, naming what is missing", async () => {
    expect(() => parsePgUrl("postgres://")).toThrow(/invalid state URL postgres:\/\/: (not a URL|no host)/);
    expect(() => parsePgUrl("mysql://u:pw@h/db")).toThrow(/scheme must be postgres/);
    expect(() => parsePgUrl("postgres://u:pw@h")).toThrow(/no database name/);
    const e = await failure("postgres://u:topsecret@h:notaport/db");
    expect(e.code).toBe("STATE_URL_INVALID");
    expect(e.message).not.toContain("topsecret");
  });

  it("reports a server that is not there as unreachable, before anything runs", async () => {
    // A port that was free a moment ago: nothing listens on it.
    const port = await new Promise<number>((resolve) => {
      const s = net.createServer().listen(0, "127.0.0.1", () => {
        const p = (s.address() as net.AddressInfo).port;
        s.close(() => resolve(p));
      });
    });
    const e = await failure(`postgres://u:pw@127.0.0.1:${port}/db`);
    expect(e.code).toBe("STATE_DB_UNREACHABLE");
    expect(e.message).toMatch(new RegExp(`cannot reach PostgreSQL at 127\\.0\\.0\\.1:${port} \\(ECONNREFUSED\\)`));
  });
});

describePg("PostgreSQL state database", () => {
  const db = useTestDatabase("pgdb");

  it("refuses a wrong password in one line that does not repeat it", async () => {
    const u = new URL(db.url);
    u.password = "wrong-password-123";
    const e = await failure(u.toString());
    expect(e.code).toBe("STATE_DB_AUTH");
    expect(e.message).toMatch(/refused the login of user "postgres" \(password authentication failed/);
    expect(e.message).not.toContain("wrong-password-123");
  });

  it("names a database that does not exist", async () => {
    const e = await failure(withDatabase(db.url, "no_such_db_here"));
    expect(e.message).toMatch(/has no database "no_such_db_here"/);
  });

  it("migrates a new database to the current version once, also when many processes start at once", async () => {
    const schema = freshSchema("mig");
    const states = await Promise.all(Array.from({ length: 4 }, () => openPgState(db.url, { schema })));
    try {
      expect(states.map((s) => s.version)).toEqual([PG_SCHEMA_VERSION, PG_SCHEMA_VERSION, PG_SCHEMA_VERSION, PG_SCHEMA_VERSION]);
      const rows = await states[0]!.pool.query("SELECT version FROM ll_schema_version ORDER BY version");
      expect(rows.rows.map((r) => r.version)).toEqual(Array.from({ length: PG_SCHEMA_VERSION }, (_, i) => i + 1));
    } finally {
      await Promise.all(states.map((s) => s.close()));
    }
    // Opening again finds nothing to do.
    const again = await openPgState(db.url, { schema });
    expect(again.version).toBe(PG_SCHEMA_VERSION);
    await again.close();
  });

  it("refuses a database of a newer schema version before writing anything", async () => {
    const schema = freshSchema("newer");
    const first = await openPgState(db.url, { schema });
    await first.pool.query("INSERT INTO ll_schema_version (version) VALUES ($1)", [PG_SCHEMA_VERSION + 1]);
    await first.close();
    const e = await failure(db.url, { schema });
    expect(e.code).toBe("STATE_DB_NEWER");
    expect(e.message).toMatch(
      new RegExp(`has schema version ${PG_SCHEMA_VERSION + 1}, newer than this ledgerloop understands \\(${PG_SCHEMA_VERSION}\\); upgrade ledgerloop`),
    );
    expect(e.message).not.toContain(new URL(db.url).password);
    // Read-only opening (migrate: false) refuses it too.
    expect((await failure(db.url, { schema, migrate: false })).code).toBe("STATE_DB_NEWER");
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    const n = await c.query(`SELECT count(*)::int AS n FROM ${schema}.ll_schema_version`);
    await c.end();
    expect(n.rows[0].n).toBe(PG_SCHEMA_VERSION + 1);
  });
});
