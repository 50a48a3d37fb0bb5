import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe } from "vitest";
import pg from "pg";

/**
 * A real PostgreSQL for the tests: `.ci/run` starts one and sets LEDGERLOOP_TEST_PG_URL (see
 * .ci/postgres.sh). Each test file gets its own database, created before its tests and dropped
 * after, so files run in parallel without seeing each other's rows.
 */
export const TEST_PG_URL = process.env.LEDGERLOOP_TEST_PG_URL || undefined;
export const PG_SKIP_REASON = "LEDGERLOOP_TEST_PG_URL not set";

/** `describe` that runs only with a server; without one its title says why it skipped. */
export function describePg(name: string, fn: () => void): void {
  if (TEST_PG_URL) describe(name, fn);
  else describe.skip(`${name} (skipped: ${PG_SKIP_REASON})`, fn);
}

/** The URL of `base` with another database name. */
export function withDatabase(base: string, database: string): string {
  const u = new URL(base);
  u.pathname = `/${database}`;
  return u.toString();
}

/** One statement on its own connection: the rows (tests that look into the tables directly). */
export async function pgQuery<T extends pg.QueryResultRow = pg.QueryResultRow>(url: string, sql: string, args: unknown[] = []): Promise<T[]> {
  return admin(url, async (c) => (await c.query<T>(sql, args)).rows);
}

async function admin<T>(base: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: base });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/**
 * Creates an empty database and returns its URL and a way to drop it. `base` is the server to create
 * it on (default LEDGERLOOP_TEST_PG_URL; benches pass LEDGERLOOP_BENCH_PG_URL's).
 */
export async function createTestDatabase(label = "t", base = TEST_PG_URL): Promise<{ url: string; name: string; drop(): Promise<void> }> {
  if (!base) throw new Error(PG_SKIP_REASON);
  const name = `ll_${label
    .replace(/[^a-z0-9_]/gi, "_")
    .toLowerCase()
    .slice(0, 30)}_${process.pid}_${randomBytes(4).toString("hex")}`;
  await admin(base, (c) => c.query(`CREATE DATABASE "${name}"`));
  return {
    url: withDatabase(base, name),
    name,
    // WITH (FORCE): a pool a failed test left open must not keep the database alive.
    drop: () => admin(base, (c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)).then(() => undefined),
  };
}

/**
 * This test file's own database (call at the top level of a file or inside describePg). The
 * returned object's `url` is set once beforeAll has run.
 */
export function useTestDatabase(label: string): { url: string } {
  const ref = { url: "" };
  let drop: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    if (!TEST_PG_URL) return;
    const db = await createTestDatabase(label);
    ref.url = db.url;
    drop = db.drop;
  });
  afterAll(async () => {
    await drop?.();
  });
  return ref;
}

/** A schema name that is new in the database, for one test's isolated tables. */
export function freshSchema(prefix = "s"): string {
  return `${prefix}_${randomBytes(5).toString("hex")}`;
}
