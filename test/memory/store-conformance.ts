import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { BaseStore } from "@langchain/langgraph-checkpoint";

/** A fresh, empty store per test, and a way to dispose of it. */
export interface StoreFactory {
  create(): Promise<{ store: BaseStore; dispose(): Promise<void> }>;
}

/** The behaviour every BaseStore adapter of ledgerloop must have (the lessons memory relies on it). */
export function storeConformance(name: string, factory: StoreFactory): void {
  describe(`Store conformance: ${name}`, () => {
    let store: BaseStore;
    let dispose: () => Promise<void>;
    beforeEach(async () => {
      ({ store, dispose } = await factory.create());
    });
    afterEach(async () => {
      await dispose();
    });

    it("puts and gets values with their namespace, key and times; a put again updates in place", async () => {
      expect(await store.get(["a"], "k")).toBeNull();
      await store.put(["a", "b"], "k", { text: "first", n: 1, nested: { list: [1, "two", null] }, uni: "ünï ✓" });
      const one = (await store.get(["a", "b"], "k"))!;
      expect(one).toMatchObject({ namespace: ["a", "b"], key: "k", value: { text: "first", n: 1, nested: { list: [1, "two", null] }, uni: "ünï ✓" } });
      expect(one.createdAt).toBeInstanceOf(Date);
      expect(await store.get(["a"], "k")).toBeNull();
      await new Promise((r) => setTimeout(r, 5));
      await store.put(["a", "b"], "k", { text: "second" });
      const two = (await store.get(["a", "b"], "k"))!;
      expect(two.value).toEqual({ text: "second" });
      expect(two.createdAt.getTime()).toBe(one.createdAt.getTime());
      expect(two.updatedAt.getTime()).toBeGreaterThan(one.updatedAt.getTime());
    });

    it("deletes: the item is gone from get, search and the namespace list", async () => {
      await store.put(["ns"], "x", { text: "delete me please" });
      await store.put(["ns"], "y", { text: "keep" });
      await store.delete(["ns"], "x");
      expect(await store.get(["ns"], "x")).toBeNull();
      expect((await store.search(["ns"])).map((i) => i.key)).toEqual(["y"]);
      expect(await store.search(["ns"], { query: "delete" })).toEqual([]);
      await store.delete(["ns"], "y");
      expect(await store.listNamespaces()).toEqual([]);
    });

    it("searches a namespace prefix label by label", async () => {
      await store.put(["a"], "1", { t: "x" });
      await store.put(["a", "b"], "2", { t: "x" });
      await store.put(["ab"], "3", { t: "x" });
      await store.put(["c", "a"], "4", { t: "x" });
      const keys = async (p: string[]) => (await store.search(p)).map((i) => i.key).sort();
      expect(await keys(["a"])).toEqual(["1", "2"]);
      expect(await keys(["a", "b"])).toEqual(["2"]);
      expect(await keys(["ab"])).toEqual(["3"]);
      expect(await keys([])).toEqual(["1", "2", "3", "4"]);
    });

    it("finds items sharing any word with a query, stemmed, the best match first; unindexed items only by listing", async () => {
      await store.put(["l"], "tests", { text: "Run the tests before committing any change" });
      await store.put(["l"], "zod", { text: "Validate settings with zod schemas" });
      await store.put(["l"], "both", { text: "Tests for the zod schemas: run them, tests catch regressions" });
      await store.put(["l"], "hidden", { text: "tests tests tests" }, false);
      const hits = await store.search(["l"], { query: "running tests on zod schema" });
      expect(hits.map((i) => i.key)).toContain("tests");
      expect(hits.map((i) => i.key)).toContain("zod");
      expect(hits[0]!.key).toBe("both");
      expect(hits.map((i) => i.key)).not.toContain("hidden");
      expect(typeof hits[0]!.score).toBe("number");
      expect(hits[0]!.score!).toBeGreaterThan(hits[hits.length - 1]!.score!);
      expect((await store.search(["l"])).map((i) => i.key).sort()).toEqual(["both", "hidden", "tests", "zod"]);
      expect(await store.search(["l"], { query: "kubernetes" })).toEqual([]);
      // Query syntax of the engine never leaks through.
      expect(await store.search(["l"], { query: `"tests" OR NOT (zod* & !x) : ' \\` })).not.toHaveLength(0);
    });

    it("filters on value fields and pages with limit and offset", async () => {
      for (let i = 0; i < 5; i++) await store.put(["p"], `k${i}`, { kind: i % 2 ? "odd" : "even", i });
      const odd = await store.search(["p"], { filter: { kind: "odd" } });
      expect(odd.map((i) => i.value.i).sort()).toEqual([1, 3]);
      const all = new Set<string>();
      for (let off = 0; off < 5; off += 2) for (const it of await store.search(["p"], { limit: 2, offset: off })) all.add(it.key);
      expect(all.size).toBe(5);
      expect(await store.search(["p"], { limit: 2 })).toHaveLength(2);
    });

    it("lists namespaces with prefix and suffix conditions, a depth limit and paging", async () => {
      await store.put(["users", "u1", "lessons"], "k", { v: 1 });
      await store.put(["users", "u2", "lessons"], "k", { v: 1 });
      await store.put(["users", "u2", "notes"], "k", { v: 1 });
      await store.put(["teams", "t1"], "k", { v: 1 });
      expect(await store.listNamespaces()).toEqual([
        ["teams", "t1"],
        ["users", "u1", "lessons"],
        ["users", "u2", "lessons"],
        ["users", "u2", "notes"],
      ]);
      expect(await store.listNamespaces({ prefix: ["users"] })).toHaveLength(3);
      expect(await store.listNamespaces({ suffix: ["lessons"] })).toEqual([
        ["users", "u1", "lessons"],
        ["users", "u2", "lessons"],
      ]);
      expect(await store.listNamespaces({ prefix: ["users", "*", "notes"] })).toEqual([["users", "u2", "notes"]]);
      expect(await store.listNamespaces({ maxDepth: 1 })).toEqual([["teams"], ["users"]]);
      expect(await store.listNamespaces({ limit: 1, offset: 1 })).toEqual([["users", "u1", "lessons"]]);
    });

    it("redacts secrets from stored values", async () => {
      const token = "ghp_" + "b".repeat(36);
      await store.put(["s"], "k", { text: `use ${token} to push`, list: [`again ${token}`] });
      const got = (await store.get(["s"], "k"))!;
      expect(JSON.stringify(got.value)).not.toContain(token);
      expect(JSON.stringify(got.value)).toContain("[REDACTED]");
    });

    it("applies a batch of operations in order", async () => {
      const [, got, none] = await store.batch([
        { namespace: ["b"], key: "k", value: { v: 1 } },
        { namespace: ["b"], key: "k" },
        { namespace: ["b"], key: "missing" },
      ]);
      expect(got?.value).toEqual({ v: 1 });
      expect(none).toBeNull();
    });
  });
}
