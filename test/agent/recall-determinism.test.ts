import http from "node:http";
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChromaServer } from "../../src/retrieval/chroma-server.js";
import type { LedgerEvent } from "../../src/state.js";
import { testAgent } from "../helpers/agent.js";
import { startTestChroma } from "../retrieval/helpers/chroma.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

// Event vectors are made in the background and lag the ledger, so which events the vector half of
// history search saw used to depend on timing: the first prompt's recalled task_spec scored with
// both halves when the background embedding won the race, and with the n-gram half only when the
// search did. A replay or a resumed run could then see another prompt than the original. Here a
// real Chroma server sits behind an HTTP proxy that forces either order, and the first prompt and
// its recorded sections must come out the same. The first prompt searches no event vectors (its
// events are the plan's); a later one searches the events before the previous prompt by vector
// too, after waiting for their vectors: that search is checked here through the retriever.

type Mode = "early" | "late";

/**
 * A proxy to `target` that, once armed, forces an order: "early" holds event vector queries until an event
 * upsert has been stored; "late" delays event upserts by 2 s.
 */
async function orderingProxy(target: string, mode: Mode): Promise<{ url: string; arm: () => void; eventUpserts: () => number; close: () => Promise<void> }> {
  const up = new URL(target);
  let stored = 0;
  let armed = false;
  // The code collection's query path, learnt before arming (the warm-up search asks only code).
  const codeQueries = new Set<string>();
  let release: () => void = () => {};
  const eventStored = new Promise<void>((r) => (release = r));
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const isEventUpsert = /\/upsert$/.test(req.url ?? "") && body.includes('"threadId"');
      const forward = () => {
        const out = http.request({ host: up.hostname, port: up.port, method: req.method, path: req.url, headers: req.headers }, (r) => {
          res.writeHead(r.statusCode ?? 502, r.headers);
          r.pipe(res);
          r.on("end", () => {
            if (isEventUpsert && (r.statusCode ?? 500) < 300) {
              stored++;
              release();
            }
          });
        });
        out.on("error", () => res.destroy());
        out.end(body);
      };
      const isQuery = /\/query$/.test(req.url ?? "");
      if (isQuery && !armed) codeQueries.add(req.url ?? "");
      if (armed && mode === "early" && isQuery && !codeQueries.has(req.url ?? "")) void eventStored.then(forward);
      else if (armed && mode === "late" && isEventUpsert) setTimeout(forward, 2_000);
      else forward();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    arm: () => void (armed = true),
    eventUpserts: () => stored,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** The first prompt and its context_built record of a one-step run, with what differs between runs replaced. */
async function firstPrompt(mode: Mode): Promise<{
  prompt: string;
  record: string;
  recalled: Array<{ score?: number; note?: string }>;
  later: Array<{ seq: number; score: number; note?: string }>;
  eventUpserts: number;
}> {
  const proxy = await orderingProxy(chroma.url, mode);
  const saved = process.env.CHROMA_URL;
  process.env.CHROMA_URL = proxy.url;
  const ws = tempWorkspace(undefined, {
    "src/invoice.ts": "export function invoiceTotal(lines: number[]): number {\n  return lines.reduce((a, b) => a + b, 0);\n}\n",
    "README.md": "# invoices\n",
  });
  const thread = `thread-${mode}`;
  const a = await testAgent(ws, { decide: [{ tool_calls: [{ name: "finish", args: { summary: "done" } }] }] }, { retrieval: "hybrid", maxSteps: 1 });
  let result;
  try {
    // The workspace's index is made first (a search waits for it): the run's events are then indexed
    // by the first context build's search, and their vectors race that search's vector query.
    await a.rt.retriever!.search("invoice", 1);
    proxy.arm();
    await a.run("fix the invoice total rounding", thread);
    const built = (await a.events(thread)).find((e): e is LedgerEvent<"context_built"> => e.type === "context_built")!;
    const blob = (await a.rt.ledger.getBlob(built.payload.promptRef))!;
    const norm = (s: string) =>
      s
        .split(ws)
        .join("<ws>")
        .split(thread)
        .join("<thread>")
        .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, "<id>");
    const { items, omitted } = built.payload;
    // What the next prompt's history search would find: the events before this prompt, by both halves.
    const events = await a.events(thread);
    const seqOf = new Map(events.map((e) => [e.id, e.seq]));
    const hits = await a.rt.retriever!.searchAll("fix the invoice total rounding", {
      k: 12,
      scope: "events",
      threadId: thread,
      branchHead: events.at(-1)!.id,
      vectorsBefore: built.seq,
    });
    const later = hits.flatMap((h) =>
      h.kind === "event" ? [{ seq: seqOf.get(h.eventId)!, score: h.score, ...(h.lexicalOnly ? { note: h.lexicalOnly } : {}) }] : [],
    );
    result = { prompt: norm(blob), record: norm(JSON.stringify({ items, omitted })), recalled: items.filter((i) => i.section === "recalled"), later };
  } finally {
    // Closing waits for the event vectors still being made (a delayed upsert among them).
    await a.close();
    if (saved === undefined) delete process.env.CHROMA_URL;
    else process.env.CHROMA_URL = saved;
    await proxy.close();
  }
  return { ...result, eventUpserts: proxy.eventUpserts() };
}

let chroma: ChromaServer & { stateDir: string };

beforeAll(async () => {
  chroma = await startTestChroma();
}, 120_000);

afterAll(async () => {
  await chroma?.release();
  cleanupTemp();
});

describe("the first prompt's recalled history", () => {
  it("is the same, scores included, whether the event vectors were stored before or after the search", async () => {
    const early = await firstPrompt("early");
    const late = await firstPrompt("late");
    // Both orders really happened: event vectors were stored in each run.
    expect(early.eventUpserts).toBeGreaterThan(0);
    expect(late.eventUpserts).toBeGreaterThan(0);
    // The first prompt searches no event vectors, so nothing waits for the store; the one event it
    // could recall, the goal's task_spec, has no text to show (the plan section holds it), so its
    // recalled section is empty in both orders.
    expect(early.recalled).toEqual([]);
    // A later search of the events before that prompt waits for their vectors: both halves, same scores.
    expect(early.later.length).toBeGreaterThan(0);
    expect(early.later[0]!.score).toBeGreaterThan(1);
    expect(early.later.every((h) => h.note === undefined)).toBe(true);
    expect(late.later).toEqual(early.later);
    expect(late.record).toBe(early.record);
    expect(late.prompt).toBe(early.prompt);
  }, 120_000);

  it("says so when the vector store is down: the n-gram half alone, recorded as not a full search", async () => {
    // A port nothing listens on: the connection is refused, the vector side degrades.
    const free = net.createServer();
    await new Promise<void>((r) => free.listen(0, "127.0.0.1", r));
    const port = (free.address() as net.AddressInfo).port;
    await new Promise<void>((r) => free.close(() => r()));
    const saved = process.env.CHROMA_URL;
    process.env.CHROMA_URL = `http://127.0.0.1:${port}`;
    const ws = tempWorkspace(undefined, { "src/invoice.ts": "export const total = 0;\n" });
    const a = await testAgent(ws, { decide: [{ tool_calls: [{ name: "finish", args: { summary: "done" } }] }] }, { retrieval: "hybrid", maxSteps: 1 });
    try {
      await a.run("fix the invoice total rounding", "down");
      const events = await a.events("down");
      const built = events.find((e): e is LedgerEvent<"context_built"> => e.type === "context_built")!;
      // The first prompt searched no event vectors: no note there.
      expect(built.payload.items.filter((i) => i.section === "recalled").every((i) => i.note === undefined)).toBe(true);
      const hits = await a.rt.retriever!.searchAll("fix the invoice total rounding", {
        k: 12,
        scope: "events",
        threadId: "down",
        branchHead: events.at(-1)!.id,
        vectorsBefore: built.seq,
      });
      const recalled = hits.flatMap((h) => (h.kind === "event" ? [h] : []));
      expect(recalled.length).toBeGreaterThan(0);
      expect(recalled[0]!.score).toBeLessThan(1);
      expect(recalled[0]!.lexicalOnly).toMatch(/^vectors not searched \(/);
    } finally {
      await a.close();
      if (saved === undefined) delete process.env.CHROMA_URL;
      else process.env.CHROMA_URL = saved;
    }
  }, 60_000);
});
