import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { VectorStoreError } from "../../src/retrieval/errors.js";
import type { VectorIndex } from "../../src/retrieval/vector-index.js";

const unit = (...xs: number[]) => {
  const n = Math.sqrt(xs.reduce((s, x) => s + x * x, 0));
  return xs.map((x) => x / n);
};

/** The behaviour every VectorIndex adapter must have (see src/retrieval/vector-index.ts). */
export function vectorIndexConformance(name: string, create: () => Promise<VectorIndex>): void {
  describe(`VectorIndex conformance: ${name}`, () => {
    let v: VectorIndex;
    beforeAll(async () => {
      v = await create();
    });
    afterAll(async () => {
      await v?.close();
    });
    beforeEach(async () => {
      await v.clear("code");
      await v.clear("events");
    });

    it("returns the nearest items first, with cosine similarity and metadata", async () => {
      await v.upsert("code", [
        { id: "a", vector: unit(1, 0, 0, 0), metadata: { path: "a.ts", start: 1, end: 10 } },
        { id: "b", vector: unit(1, 1, 0, 0), metadata: { path: "b.ts", start: 1, end: 10 } },
        { id: "c", vector: unit(0, 0, 1, 0), metadata: { path: "c.ts", start: 5, end: 9 } },
      ]);
      const res = await v.query("code", unit(1, 0.1, 0, 0), 2);
      expect(res.map((r) => r.id)).toEqual(["a", "b"]);
      expect(res[0]!.similarity).toBeGreaterThan(0.99);
      expect(res[0]!.metadata).toEqual({ path: "a.ts", start: 1, end: 10 });
      expect(await v.count("code")).toBe(3);
    });

    it("replaces on upsert, deletes by a metadata field, and keeps spaces apart", async () => {
      await v.upsert("code", [
        { id: "a", vector: unit(1, 0, 0, 0), metadata: { path: "a.ts" } },
        { id: "b", vector: unit(0, 1, 0, 0), metadata: { path: "b.ts" } },
      ]);
      await v.upsert("code", [{ id: "a", vector: unit(0, 0, 0, 1), metadata: { path: "a.ts" } }]);
      expect((await v.query("code", unit(0, 0, 0, 1), 1))[0]!.id).toBe("a");
      await v.upsert("events", [{ id: "e1", vector: unit(0, 1, 0, 0), metadata: { threadId: "t" } }]);
      await v.deleteWhere("code", "path", ["b.ts", "missing.ts"]);
      expect(await v.count("code")).toBe(1);
      expect(await v.count("events")).toBe(1);
      expect((await v.query("events", unit(0, 1, 0, 0), 5)).map((r) => r.id)).toEqual(["e1"]);
      await v.clear("events");
      expect(await v.count("events")).toBe(0);
    });

    it("answers a filtered query from the matching items only, so others never take the k places", async () => {
      await v.upsert("events", [
        { id: "late-near", vector: unit(1, 0, 0, 0), metadata: { threadId: "t", seq: 9 } },
        { id: "other-near", vector: unit(1, 0.01, 0, 0), metadata: { threadId: "u", seq: 1 } },
        { id: "early-far", vector: unit(0, 1, 0, 0), metadata: { threadId: "t", seq: 2 } },
        { id: "early-mid", vector: unit(1, 1, 0, 0), metadata: { threadId: "t", seq: 3 } },
      ]);
      const q = unit(1, 0, 0, 0);
      expect((await v.query("events", q, 2, { equals: { threadId: "t" }, below: { seq: 5 } })).map((r) => r.id)).toEqual(["early-mid", "early-far"]);
      expect((await v.query("events", q, 1, { below: { seq: 9 } })).map((r) => r.id)).toEqual(["other-near"]);
      expect((await v.query("events", q, 5, { equals: { threadId: "t" } })).map((r) => r.id)).toEqual(["late-near", "early-mid", "early-far"]);
      expect(await v.query("events", q, 5, { equals: { threadId: "none" } })).toEqual([]);
    });

    it("takes large batches and empty calls", async () => {
      const items = Array.from({ length: 1500 }, (_, i) => ({
        id: `x${i}`,
        vector: unit(Math.cos(i), Math.sin(i), 1, i % 7),
        metadata: { path: `f${i % 50}.ts` },
      }));
      await v.upsert("code", items);
      await v.upsert("code", []);
      await v.deleteWhere("code", "path", []);
      expect(await v.count("code")).toBe(1500);
      expect(await v.query("code", items[0]!.vector, 10)).toHaveLength(10);
    });

    it("gives the metadata of the ids it holds, per space (when the adapter offers get)", async () => {
      if (!v.get) return;
      await v.upsert("code", [
        { id: "a", vector: unit(1, 0, 0, 0), metadata: { path: "a.ts", hash: "h1" } },
        { id: "b", vector: unit(0, 1, 0, 0), metadata: { path: "b.ts", hash: "h2" } },
      ]);
      const got = await v.get("code", ["a", "b", "missing"]);
      expect([...got.keys()].sort()).toEqual(["a", "b"]);
      expect(got.get("a")).toMatchObject({ path: "a.ts", hash: "h1" });
      expect((await v.get("events", ["a"])).size).toBe(0);
      expect((await v.get("code", [])).size).toBe(0);
    });
  });
}

/** Asserts that a call fails with a VectorStoreError (any code). */
export async function expectVectorError(p: Promise<unknown>): Promise<void> {
  await expect(p).rejects.toBeInstanceOf(VectorStoreError);
}
