import net from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import PgBoss from "pg-boss";
import { handleDoctor } from "../../src/cli/doctor.js";
import { QUEUE_SCHEMA, RUN_QUEUE } from "../../src/queue/status.js";
import { startTestChroma } from "../retrieval/helpers/chroma.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";
import { describePg, useTestDatabase } from "../helpers/postgres.js";

afterAll(() => cleanupTemp());

const checkOf = (r: Awaited<ReturnType<typeof handleDoctor>>, name: string) => r.checks.find((c) => c.name === name);

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
}

/** Runs doctor with CHROMA_URL as given (or unset), restoring the variable after. */
async function doctorWith(env: { CHROMA_URL?: string }, args: { state?: string } = {}) {
  const before = process.env.CHROMA_URL;
  if (env.CHROMA_URL === undefined) delete process.env.CHROMA_URL;
  else process.env.CHROMA_URL = env.CHROMA_URL;
  try {
    return await handleDoctor({ workspace: tempWorkspace(undefined, { "a.txt": "a\n" }), ...args });
  } finally {
    if (before === undefined) delete process.env.CHROMA_URL;
    else process.env.CHROMA_URL = before;
  }
}

describePg("doctor --state: the run queue", () => {
  const db = useTestDatabase("doctorq");

  it("says the queue is not installed before the first worker, then reports pg-boss's version and the run queue's jobs by state", async () => {
    const before = await doctorWith({}, { state: db.url });
    expect(checkOf(before, "state")).toMatchObject({ ok: true });
    expect(checkOf(before, "queue")).toEqual({ name: "queue", ok: true, detail: "not installed yet (created by the first `ledgerloop worker`)" });

    // The real library installs its schema and takes jobs, as the worker does.
    const boss = new PgBoss({ connectionString: db.url, schema: QUEUE_SCHEMA, supervise: false, schedule: false });
    boss.on("error", () => {});
    await boss.start();
    try {
      await boss.createQueue(RUN_QUEUE);
      for (let i = 0; i < 4; i++) await boss.send(RUN_QUEUE, { task: `t${i}` }, { retryLimit: 0 });
      // Another queue's jobs are not counted.
      await boss.createQueue("something-else");
      await boss.send("something-else", {});
      const [taken] = await boss.fetch(RUN_QUEUE);
      const [failing] = await boss.fetch(RUN_QUEUE);
      await boss.fail(RUN_QUEUE, failing!.id, { reason: "invalid payload" });
      expect(taken).toBeDefined();

      const after = await doctorWith({}, { state: db.url });
      const queue = checkOf(after, "queue")!;
      expect(queue.ok).toBe(true);
      // A job failed by hand is a failure, not a takeover (those come from the reaper).
      expect(queue.detail).toMatch(
        /^pg-boss schema ll_queue version \d+; queue ledgerloop-runs: 2 queued, 1 active, 1 failed, 0 taken over \(a dead worker's run continued by another\)$/,
      );
    } finally {
      await boss.stop({ graceful: false, wait: true });
    }
  }, 120_000);

  it("reports no queue check when the database itself cannot be reached", async () => {
    const r = await doctorWith({}, { state: `postgres://u:pw@127.0.0.1:${await freePort()}/db` });
    expect(checkOf(r, "state")).toMatchObject({ ok: false });
    expect(checkOf(r, "queue")).toBeUndefined();
  });
});

describe("doctor with CHROMA_URL: the shared Chroma server", () => {
  it("reports the heartbeat and version of a server that answers, and one line for one that does not", async () => {
    const server = await startTestChroma();
    try {
      const up = await doctorWith({ CHROMA_URL: `${server.url}/` });
      expect(checkOf(up, "chroma")).toMatchObject({
        ok: true,
        detail: expect.stringMatching(/^Chroma \d+\.\d+\.\d+ at http:\/\/127\.0\.0\.1:\d+ \(CHROMA_URL\): heartbeat ok$/),
      });
    } finally {
      await server.release();
    }
    const port = await freePort();
    const down = await doctorWith({ CHROMA_URL: `http://127.0.0.1:${port}` });
    const chroma = checkOf(down, "chroma")!;
    expect(chroma.ok).toBe(false);
    expect(chroma.detail).toBe(`no Chroma server answers at http://127.0.0.1:${port} (ECONNREFUSED)`);
  }, 120_000);
});
