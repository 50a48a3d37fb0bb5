import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { emptyCheckpoint, uuid6, type BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import type { RunRegistryPort } from "../../src/ledger/runs.js";
import type { RunSettings } from "../../src/settings.js";

/** A fresh registry per test, with the checkpoint saver of the same database. */
export interface RunsFactory {
  create(): Promise<{ runs: RunRegistryPort; checkpointer: BaseCheckpointSaver; dispose(): Promise<void> }>;
}

const settings = (extra: Record<string, unknown> = {}) =>
  ({ workspace: "/w", model: "scripted:demo", maxSteps: 7, stateDir: "/w/.ledgerloop", ...extra }) as unknown as RunSettings;
const runner = { pid: 4242, host: "worker-1", procStart: "123", at: "2026-01-01T00:00:00.000Z" };

/** The behaviour every run registry adapter must have. */
export function runsConformance(name: string, factory: RunsFactory): void {
  describe(`Run registry conformance: ${name}`, () => {
    let runs: RunRegistryPort;
    let checkpointer: BaseCheckpointSaver;
    let dispose: () => Promise<void>;
    beforeEach(async () => {
      ({ runs, checkpointer, dispose } = await factory.create());
    });
    afterEach(async () => {
      await dispose();
    });

    it("registers a run once, with its settings but never the state directory", async () => {
      expect(await runs.get("t1")).toBeNull();
      expect(await runs.register("t1", "add /health", settings(), { origin: "cli", checkpoints: "state-db", runner })).toBe(true);
      expect(await runs.register("t1", "another goal", settings({ maxSteps: 99 }), { origin: "script" })).toBe(false);
      const r = (await runs.get("t1"))!;
      expect(r).toMatchObject({ threadId: "t1", goal: "add /health", origin: "cli", checkpoints: "state-db", runner });
      expect(r.settings).toMatchObject({ workspace: "/w", model: "scripted:demo", maxSteps: 7 });
      expect(r.settings).not.toHaveProperty("stateDir");
      expect(Number.isNaN(Date.parse(r.createdAt))).toBe(false);
    });

    it("keeps a run's trace ids once: the first writer wins, an unregistered run keeps none", async () => {
      const first = { traceId: "a".repeat(32), spanId: "b".repeat(16) };
      expect(await runs.recordTrace("t1", first)).toBeNull();
      await runs.register("t1", "g", settings());
      expect(await runs.recordTrace("t1", first)).toEqual(first);
      // A second process (a resume, another worker) gets the stored trace, not its own.
      expect(await runs.recordTrace("t1", { traceId: "c".repeat(32), spanId: "d".repeat(16) })).toEqual(first);
      expect((await runs.get("t1"))!.trace).toEqual(first);
    });

    it("records the process now running a run, and only for a registered run", async () => {
      await runs.register("t1", "g", settings());
      expect((await runs.get("t1"))!.runner).toBeNull();
      expect(await runs.recordRunner("t1", runner)).toBe(true);
      expect((await runs.get("t1"))!.runner).toEqual(runner);
      expect(await runs.recordRunner("nope", runner)).toBe(false);
    });

    it("lists every run, oldest first; unknown origins read as null", async () => {
      await runs.register("a", "first", settings());
      await new Promise((r) => setTimeout(r, 3));
      await runs.register("b", "second", settings(), { origin: "server" });
      const all = await runs.list();
      expect(all.map((r) => [r.threadId, r.goal, r.origin])).toEqual([
        ["a", "first", null],
        ["b", "second", "server"],
      ]);
    });

    it("knows whether a thread has checkpoints in the same database", async () => {
      await runs.register("t1", "g", settings());
      expect(await runs.hasCheckpoints("t1")).toBe(false);
      await checkpointer.put(
        { configurable: { thread_id: "t1", checkpoint_ns: "" } },
        { ...emptyCheckpoint(), id: uuid6(1) },
        { source: "input", step: -1, parents: {} },
        {},
      );
      expect(await runs.hasCheckpoints("t1")).toBe(true);
      expect(await runs.hasCheckpoints("t2")).toBe(false);
    });
  });
}
