import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deleteRunRecords } from "../../src/ledger/delete-run.js";
import { createChromaIndex } from "../../src/retrieval/chroma-index.js";
import { externalChroma, type ChromaServer } from "../../src/retrieval/chroma-server.js";
import { createEmbedder } from "../../src/retrieval/embedders/factory.js";
import { createRetriever, type EventHit, type Retriever } from "../../src/retrieval/hybrid.js";
import type { VectorIndex } from "../../src/retrieval/vector-index.js";
import { cleanupTemp } from "../helpers/workspace.js";
import { startTestChroma } from "./helpers/chroma.js";
import { twoTariffRuns } from "./helpers/tariff-runs.js";

// Event vectors are written in the background. The write used to hold the retriever's lock, so the
// next search (a step's context) waited for it: a fresh Chroma collection's first write takes about
// 0.1 s, a slow store longer. The lock now covers index.db only. Here the real store's event writes
// are held at a gate while searches run, and a run is deleted while its vectors are in flight.

let chroma: ChromaServer & { stateDir: string };
const open: Array<{ close(): Promise<void> }> = [];

beforeAll(async () => {
  chroma = await startTestChroma();
}, 120_000);

afterAll(async () => {
  for (const c of open.splice(0).reverse()) await c.close();
  await chroma?.release();
  cleanupTemp();
});

/** The real Chroma store, whose event writes wait until `open()`; `held` resolves at the first one held. */
async function gatedStore(namespace: string): Promise<{ store: VectorIndex; inner: VectorIndex; held: Promise<void>; open(): void }> {
  const inner = await createChromaIndex({ server: await externalChroma(chroma.url), embedder: await createEmbedder("hashed"), namespace });
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let heldNow!: () => void;
  const held = new Promise<void>((r) => (heldNow = r));
  const store: VectorIndex = {
    description: inner.description,
    upsert: async (space, items) => {
      if (space === "events") {
        heldNow();
        await gate;
      }
      return inner.upsert(space, items);
    },
    deleteWhere: (space, field, values) => inner.deleteWhere(space, field, values),
    query: (space, vector, k, filter) => inner.query(space, vector, k, filter),
    count: (space) => inner.count(space),
    clear: (space) => inner.clear(space),
    close: () => inner.close(),
  };
  return { store, inner, held, open: release };
}

/** `p`, or a failure naming `what` if it has not settled within `ms` (it would hang for good). */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} did not finish while an event-vector write was held`)), ms))),
  ]).finally(() => clearTimeout(timer));
}

async function setUp(name: string) {
  const { ws, stateDir, db, ledger } = await twoTariffRuns({ "src/tariff.ts": "export function tariffFor(region: string) {\n  return region.length;\n}\n" });
  const gated = await gatedStore(`${name} ${ws}`);
  const r: Retriever = await createRetriever({ workspace: ws, stateDir, ledger, vectorIndex: gated.store, chromaUrl: chroma.url });
  open.push({
    close: async () => {
      gated.open();
      await r.close();
      await gated.inner.close();
      db.close();
    },
  });
  const threadsOf = async (q: string) => new Set(((await r.searchAll(q, { scope: "events", k: 10 })) as EventHit[]).map((e) => e.threadId));
  return { ws, stateDir, db, ledger, gated, r, threadsOf };
}

describe("event vectors written in the background", () => {
  it("never make a search wait: code and history searches answer while a write of event vectors is held", async () => {
    const { gated, r, threadsOf } = await setUp("held-write");
    // The first history search indexes the events; their vectors' write starts and is held.
    expect(await within(threadsOf("tariff"), 30_000, "the first history search")).toEqual(new Set(["kept", "gone"]));
    await within(gated.held, 30_000, "the event-vector write");
    // Generous bounds: these only fail when the search waits for the held write (it would forever).
    const code = await within(r.search("tariffFor region", 3), 30_000, "a code search");
    expect(code.map((h) => h.path)).toContain("src/tariff.ts");
    expect(await within(threadsOf("redis shard"), 30_000, "a history search")).toEqual(new Set(["gone"]));
    // Once the store takes the write, every event has its vector.
    gated.open();
    await r.whenIdle();
    expect(await gated.inner.count("events")).toBe(4);
  }, 120_000);

  it("leave none behind for a run deleted while its vectors were being written", async () => {
    const { stateDir, db, ledger, gated, r, threadsOf } = await setUp("deleted-mid-write");
    expect(await within(threadsOf("tariff"), 30_000, "the first history search")).toEqual(new Set(["kept", "gone"]));
    await within(gated.held, 30_000, "the event-vector write");
    // Deleted (as another machine's `ledgerloop delete` on a shared state would): the next sync
    // forgets its events and purges its vectors, before the held write, which holds them, lands.
    deleteRunRecords(db, stateDir, "gone");
    expect(await ledger.deletedThreads()).toEqual(["gone"]);
    expect(await within(threadsOf("tariff redis"), 30_000, "a history search")).toEqual(new Set(["kept"]));
    gated.open();
    await r.whenIdle();
    // The write brought the deleted run's vectors back; marking the batch found its events gone and
    // deleted them again.
    expect(await gated.inner.count("events")).toBe(2);
  }, 120_000);
});
