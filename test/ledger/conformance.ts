import { describe, it, expect, beforeEach, afterEach } from "vitest";
import type { Ledger } from "../../src/ledger/port.js";
import type { LedgerTransfer } from "../../src/ledger/transfer.js";
import type { LedgerEvent } from "../../src/state.js";
import { LedgerError } from "../../src/errors.js";

/** A fresh, empty ledger per test, and a way to dispose of it. */
export interface LedgerFactory {
  create(): Promise<{ ledger: Ledger; dispose(): Promise<void> }>;
}

const fb = (tool = "run_command", status: "ok" | "error" = "ok") => ({
  tool,
  status,
  output: "done",
  durationMs: 3,
});
const action = (tool: string, args: unknown, key: string) => ({
  tool,
  args,
  callId: `call-${key}`,
  step: 1,
  idempotencyKey: key,
  idempotent: false,
});

/** The behaviour every Ledger adapter must have. */
export function ledgerConformance(name: string, factory: LedgerFactory): void {
  describe(`Ledger conformance: ${name}`, () => {
    let ledger: Ledger;
    let dispose: () => Promise<void>;
    beforeEach(async () => {
      ({ ledger, dispose } = await factory.create());
    });
    afterEach(async () => {
      await dispose();
    });

    async function chain(threadId: string, n: number, parent: string | null = null): Promise<LedgerEvent[]> {
      const out: LedgerEvent[] = [];
      for (let i = 0; i < n; i++) {
        const e = await ledger.append({
          threadId,
          parentId: parent,
          type: "decision",
          payload: { text: `d${i}`, step: i },
        });
        out.push(e);
        parent = e.id;
      }
      return out;
    }

    it("assigns ids, per-thread increasing seq, timestamps and the schema version", async () => {
      const a = await chain("t1", 3);
      const b = await chain("t2", 2);
      expect(a.map((e) => e.seq)).toEqual([1, 2, 3]);
      expect(b.map((e) => e.seq)).toEqual([1, 2]);
      expect(new Set([...a, ...b].map((e) => e.id)).size).toBe(5);
      expect(a[1]!.parentId).toBe(a[0]!.id);
      expect(Number.isNaN(Date.parse(a[0]!.ts))).toBe(false);
      expect(a[0]!.schemaVersion).toBeGreaterThanOrEqual(1);
      const got = await ledger.get(a[2]!.id);
      expect(got).toEqual(a[2]);
    });

    it("validates payloads per type and names the bad field", async () => {
      await expect(ledger.append({ threadId: "t", parentId: null, type: "decision", payload: { text: 5 } as never })).rejects.toThrow(
        /invalid decision event: text/,
      );
      await expect(ledger.append({ threadId: "t", parentId: null, type: "no_such_type" as never, payload: {} as never })).rejects.toBeInstanceOf(LedgerError);
      expect(await ledger.list("t")).toEqual([]);
    });

    it("refuses a parent from another thread or one that does not exist", async () => {
      const [a] = await chain("t1", 1);
      await expect(ledger.append({ threadId: "t2", parentId: a!.id, type: "decision", payload: { text: "x", step: 0 } })).rejects.toThrow(
        /does not exist in thread t2/,
      );
      await expect(ledger.append({ threadId: "t1", parentId: "nope", type: "decision", payload: { text: "x", step: 0 } })).rejects.toThrow(/does not exist/);
    });

    it("is idempotent on (thread, key): a second append returns the first event", async () => {
      const first = await ledger.append({
        threadId: "t",
        parentId: null,
        type: "agent_action",
        payload: action("run_command", { command: "ls" }, "k1"),
        idempotencyKey: "task-1/action-0",
      });
      const again = await ledger.append({
        threadId: "t",
        parentId: null,
        type: "agent_action",
        payload: action("run_command", { command: "something else" }, "k1"),
        idempotencyKey: "task-1/action-0",
      });
      expect(again).toEqual(first);
      expect(await ledger.list("t")).toHaveLength(1);
      expect(await ledger.findByKey("t", "task-1/action-0")).toEqual(first);
      expect(await ledger.findByKey("other", "task-1/action-0")).toBeNull();
      // The same key naming another kind of event is a bug in the caller, not a retry.
      await expect(
        ledger.append({
          threadId: "t",
          parentId: null,
          type: "decision",
          payload: { text: "x", step: 0 },
          idempotencyKey: "task-1/action-0",
        }),
      ).rejects.toThrow(/already names a agent_action/);
    });

    it("redacts secrets before storing", async () => {
      const token = "ghp_" + "a".repeat(36);
      const e = await ledger.append({
        threadId: "t",
        parentId: null,
        type: "environment_feedback",
        payload: { ...fb(), output: `token=${token}`, stdout: `using ${token}` },
      });
      const stored = (await ledger.get(e.id))!;
      expect(JSON.stringify(stored)).not.toContain(token);
      expect(JSON.stringify(stored)).toContain("[REDACTED]");
    });

    it("queries by type and by seq window", async () => {
      const [d1] = await chain("t", 1);
      const a = await ledger.append({
        threadId: "t",
        parentId: d1!.id,
        type: "agent_action",
        payload: action("read_file", { path: "src/a.ts" }, "a"),
      });
      await ledger.append({
        threadId: "t",
        parentId: a.id,
        type: "environment_feedback",
        payload: fb("read_file"),
        causedBy: a.id,
      });
      expect((await ledger.list("t", { types: ["agent_action"] })).map((e) => e.id)).toEqual([a.id]);
      expect((await ledger.list("t", { afterSeq: 1 })).map((e) => e.seq)).toEqual([2, 3]);
      expect((await ledger.list("t", { last: 2 })).map((e) => e.seq)).toEqual([2, 3]);
      expect((await ledger.list("t", { limit: 2 })).map((e) => e.seq)).toEqual([1, 2]);
      expect((await ledger.list("t", { afterSeq: 1, limit: 1 })).map((e) => e.seq)).toEqual([2]);
    });

    it("links feedback to its action and returns the causal chain both ways", async () => {
      const a = await ledger.append({
        threadId: "t",
        parentId: null,
        type: "agent_action",
        payload: action("record_decision", { text: "use zod" }, "a"),
      });
      const f = await ledger.append({
        threadId: "t",
        parentId: a.id,
        type: "environment_feedback",
        payload: fb("record_decision"),
        causedBy: a.id,
      });
      const d = await ledger.append({
        threadId: "t",
        parentId: f.id,
        type: "decision",
        payload: { text: "use zod", step: 1 },
        causedBy: f.id,
      });
      await ledger.append({ threadId: "t", parentId: d.id, type: "decision", payload: { text: "unrelated", step: 2 } });
      expect((await ledger.causalChain(a.id)).map((e) => e.id)).toEqual([a.id, f.id, d.id]);
      expect((await ledger.causalChain(d.id)).map((e) => e.id)).toEqual([a.id, f.id, d.id]);
      expect((await ledger.causedBy([a.id])).map((e) => e.id)).toEqual([f.id]);
    });

    it("finds events by workspace path: actions on it, their feedback, and files changed", async () => {
      const a = await ledger.append({
        threadId: "t",
        parentId: null,
        type: "agent_action",
        payload: action("edit_file", { path: "./src/app.ts", oldText: "a", newText: "b" }, "a"),
      });
      const f = await ledger.append({
        threadId: "t",
        parentId: a.id,
        type: "environment_feedback",
        payload: fb("edit_file"),
        causedBy: a.id,
      });
      const a2 = await ledger.append({
        threadId: "t",
        parentId: f.id,
        type: "agent_action",
        payload: action("run_command", { command: "sed -i s/a/b/ src/app.ts" }, "b"),
      });
      const f2 = await ledger.append({
        threadId: "t",
        parentId: a2.id,
        type: "environment_feedback",
        payload: { ...fb(), filesChanged: { created: [], modified: ["src/app.ts"], deleted: [] } },
        causedBy: a2.id,
      });
      await ledger.append({
        threadId: "t",
        parentId: f2.id,
        type: "agent_action",
        payload: action("read_file", { path: "README.md" }, "c"),
      });
      expect((await ledger.byFile("t", "src/app.ts")).map((e) => e.id)).toEqual([a.id, f.id, f2.id]);
      expect(await ledger.byFile("other-thread", "src/app.ts")).toEqual([]);
    });

    it("gives each branch of a fork only its own history", async () => {
      const trunk = await chain("t", 3);
      const left = await chain("t", 2, trunk[1]!.id); // forks after the 2nd event
      const right = await chain("t", 2, trunk[2]!.id);
      const ids = (es: LedgerEvent[]) => es.map((e) => e.id);
      expect(ids(await ledger.branch(left[1]!.id))).toEqual([trunk[0]!.id, trunk[1]!.id, ...ids(left)]);
      expect(ids(await ledger.branch(right[1]!.id))).toEqual([...ids(trunk), ...ids(right)]);
      expect(ids(await ledger.branch(left[1]!.id, { last: 2 }))).toEqual(ids(left));
      expect(ids(await ledger.branch(right[1]!.id, { afterSeq: trunk[2]!.seq }))).toEqual(ids(right));
      expect(ids(await ledger.branch(trunk[1]!.id))).toEqual([trunk[0]!.id, trunk[1]!.id]);
      expect(await ledger.branch(null)).toEqual([]);
      expect((await ledger.list("t")).length).toBe(7);
    });

    it("tells which events lie on a branch, without and with forks", async () => {
      const trunk = await chain("t", 3);
      const all = [...trunk];
      expect(
        await ledger.onBranch(
          trunk[2]!.id,
          trunk.map((e) => e.id),
        ),
      ).toEqual(new Set(trunk.map((e) => e.id)));
      expect(
        await ledger.onBranch(
          trunk[1]!.id,
          trunk.map((e) => e.id),
        ),
      ).toEqual(new Set([trunk[0]!.id, trunk[1]!.id]));
      const side = await chain("t", 2, trunk[0]!.id); // a fork after the first event
      all.push(...side);
      const ids = all.map((e) => e.id);
      expect(await ledger.onBranch(side[1]!.id, ids)).toEqual(new Set([trunk[0]!.id, ...side.map((e) => e.id)]));
      expect(await ledger.onBranch(trunk[2]!.id, ids)).toEqual(new Set(trunk.map((e) => e.id)));
      const other = await chain("u", 1);
      expect(await ledger.onBranch(trunk[2]!.id, [other[0]!.id, "nope"])).toEqual(new Set());
    });

    it("treats a second root in a thread as a fork", async () => {
      const a = await chain("t", 2);
      const b = await chain("t", 2);
      expect((await ledger.branch(b[1]!.id)).map((e) => e.id)).toEqual(b.map((e) => e.id));
      expect((await ledger.branch(a[1]!.id)).map((e) => e.id)).toEqual(a.map((e) => e.id));
    });

    it("filters a branch view by type", async () => {
      const t = await chain("t", 2);
      const a = await ledger.append({
        threadId: "t",
        parentId: t[1]!.id,
        type: "agent_action",
        payload: action("list_files", {}, "x"),
      });
      const view = await ledger.branch(a.id, { types: ["decision"] });
      expect(view.map((e) => e.type)).toEqual(["decision", "decision"]);
    });

    it("lists threads with their goal and last status", async () => {
      const s = await ledger.append({
        threadId: "run-1",
        parentId: null,
        type: "task_spec",
        payload: { goal: "add /health", subtasks: [], source: "deterministic" },
      });
      await ledger.append({
        threadId: "run-1",
        parentId: s.id,
        type: "run_status",
        payload: { status: "finished", steps: 4 },
      });
      await chain("run-2", 1);
      const threads = await ledger.threads();
      const r1 = threads.find((t) => t.threadId === "run-1")!;
      expect(r1).toMatchObject({ events: 2, goal: "add /health", status: "finished" });
      expect(threads.map((t) => t.threadId).sort()).toEqual(["run-1", "run-2"]);
    });

    it("stores blobs by content hash, once, redacted", async () => {
      const big = "line\n".repeat(10_000);
      const ref = await ledger.putBlob(big);
      expect(await ledger.putBlob(big)).toBe(ref);
      expect(await ledger.getBlob(ref)).toBe(big);
      expect(await ledger.getBlob("0".repeat(64))).toBeNull();
      const secret = "AKIA" + "ABCDEFGHIJKLMNOP";
      const ref2 = await ledger.putBlob(`aws ${secret}`);
      expect(await ledger.getBlob(ref2)).not.toContain(secret);
    });

    it("sums what a thread's model calls cost, on every branch", async () => {
      expect(await ledger.spend("t")).toEqual({ cost: 0, tokens: 0 });
      const call = (costUsd: number | undefined, usage?: { inputTokens?: number; outputTokens?: number }) => ({
        node: "decide" as const,
        turn: 0,
        model: "m",
        content: "",
        toolCalls: [],
        ...(usage ? { usage } : {}),
        ...(costUsd !== undefined ? { costUsd } : {}),
      });
      const a = await ledger.append({ threadId: "t", parentId: null, type: "model_call", payload: call(0.25, { inputTokens: 100, outputTokens: 20 }) });
      await ledger.append({ threadId: "t", parentId: a.id, type: "model_call", payload: call(0.5, { inputTokens: 10 }) });
      await ledger.append({ threadId: "t", parentId: a.id, type: "model_call", payload: call(undefined) }); // a fork
      await ledger.append({ threadId: "u", parentId: null, type: "model_call", payload: call(9, { inputTokens: 1 }) });
      expect(await ledger.spend("t")).toEqual({ cost: 0.75, tokens: 130 });
    });

    it("keeps the config fingerprint a thread started under until it is accepted anew, and moves it with the thread", async () => {
      expect(await ledger.governingConfig("t", "sha-1")).toBe("sha-1");
      // Later callers (another machine, a changed file) get the first record back, not theirs.
      expect(await ledger.governingConfig("t", "sha-2")).toBe("sha-1");
      expect(await ledger.governingConfig("u", "absent")).toBe("absent");
      await ledger.acceptGoverningConfig("t", "sha-2");
      expect(await ledger.governingConfig("t", "sha-3")).toBe("sha-2");
      const transfer = ledger as Ledger & Partial<LedgerTransfer>;
      if (transfer.exportThread) {
        await ledger.append({ threadId: "t", parentId: null, type: "decision", payload: { text: "d", step: 0 } });
        expect((await transfer.exportThread("t")).configSha).toBe("sha-2");
        expect((await transfer.exportThread("none")).configSha).toBeNull();
      }
    });

    it("remembers which actions were started", async () => {
      expect(await ledger.actionStart("a1")).toBeNull();
      await ledger.markActionStarted({ actionId: "a1", pid: null, pgid: null, procStart: null, guard: "g1" });
      // The process is known only once it has started; the guard taken first is kept.
      await ledger.markActionStarted({ actionId: "a1", pid: 123, pgid: 123, procStart: "99", guard: null });
      expect(await ledger.actionStart("a1")).toMatchObject({ actionId: "a1", pid: 123, pgid: 123, procStart: "99", guard: "g1" });
    });
  });
}
