import fs from "node:fs";
import path from "node:path";
import { afterAll, expect, it } from "vitest";
import { acquireLease, workspaceScope } from "../../src/ledger/lease.js";
import { openStateDb } from "../../src/ledger/state-db.js";
import { stateLocation } from "../../src/workspace/location.js";
import { createRuntime } from "../../src/runtime.js";
import { describePg, pgQuery, useTestDatabase } from "../helpers/postgres.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";
import { writeTrajectory } from "../queue/queue-fixtures.js";

// A runtime that fails to start after it opened its PostgreSQL state (a model spec without its key,
// a workspace another process holds) must close what it opened: a worker or server that retries
// would otherwise leak a pool of connections per failed start until the server refuses clients.
describePg("a runtime whose start fails", () => {
  const db = useTestDatabase("rt_start_failure");
  afterAll(() => cleanupTemp());
  const connections = async () =>
    Number(
      (await pgQuery<{ n: string }>(db.url, "SELECT COUNT(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"))[0]!.n,
    );

  it("closes its PostgreSQL pool when the model cannot be built, and when the workspace is held", async () => {
    const workspace = tempWorkspace(undefined, { "README.md": "x\n" });
    const before = await connections();
    const env = process.env.OPENAI_API_KEY;
    delete process.env.OPENAI_API_KEY;
    try {
      for (let i = 0; i < 3; i++) {
        await expect(createRuntime({ workspace, model: "openai:gpt-4o-mini", stateUrl: db.url, retrieval: "lexical" })).rejects.toThrow(/OPENAI_API_KEY/);
      }
    } finally {
      if (env !== undefined) process.env.OPENAI_API_KEY = env;
    }
    expect(await connections()).toBe(before);

    // Held by another writer: the start fails at the lease, after the state database, model and sandbox.
    const { dbPath } = stateLocation(workspace);
    fs.mkdirSync(path.dirname(dbPath), { recursive: true });
    const holderDb = openStateDb(dbPath);
    const held = acquireLease(holderDb, [workspaceScope(fs.realpathSync(workspace))], { command: "another run" });
    try {
      await expect(
        createRuntime(
          { workspace, model: `scripted:${writeTrajectory(tempWorkspace(), 1)}`, stateUrl: db.url, retrieval: "lexical" },
          { lease: { command: "run" } },
        ),
      ).rejects.toThrow(/in use by another run/);
      expect(await connections()).toBe(before);
    } finally {
      held.release();
      holderDb.close();
    }
  });
});
