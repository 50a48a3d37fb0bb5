import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChromaServer } from "../../src/retrieval/chroma-server.js";
import type { RetrievalHit, SearchOptions } from "../../src/retrieval/hybrid.js";
import type { LedgerEvent } from "../../src/state.js";
import { testAgent, type TestAgent } from "../helpers/agent.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";
import { startTestChroma } from "../retrieval/helpers/chroma.js";
import { filesStored, gate, type Gate } from "../retrieval/helpers/gate.js";

// A run's first prompt used to wait for the whole index, vectors included: for a new run, for the
// vector store to start (an embedded Chroma server takes a second or more) and for a new
// collection's first write. The first prompt (step 0) now searches code with the n-gram index and
// history only, and every later prompt fuses vectors too. The rule is the state's (the step), not
// the store's timing, so the first prompt is the same whether the store was up or not. A real
// Chroma server sits behind a TCP gate that holds connections until it is opened.

const FILES = {
  "src/invoice.ts": "export function invoiceTotal(lines: number[]): number {\n  return lines.reduce((a, b) => a + b, 0);\n}\n",
  "src/tax.ts": "export function taxOf(total: number, rate: number): number {\n  return Math.round(total * rate * 100) / 100;\n}\n",
  "README.md": "# invoices\nTotals and taxes.\n",
};
const GOAL = "fix the rounding of the invoice total";
const TRAJECTORY = {
  decide: [{ tool_calls: [{ name: "read_file", args: { path: "src/invoice.ts" } }] }, { tool_calls: [{ name: "finish", args: { summary: "done" } }] }],
};

interface Search {
  scope: SearchOptions["scope"];
  sources: SearchOptions["sources"];
  hits: RetrievalHit[];
}

/** Records every search the agent's retriever answers. */
function recordSearches(a: TestAgent): Search[] {
  const r = a.rt.retriever!;
  const searches: Search[] = [];
  const searchAll = r.searchAll.bind(r);
  r.searchAll = async (query, opts = {}) => {
    const hits = await searchAll(query, opts);
    searches.push({ scope: opts.scope ?? "code", sources: opts.sources, hits });
    return hits;
  };
  return searches;
}

/** A decide prompt's text with what differs between two runs (workspace, thread) replaced. */
async function promptOf(a: TestAgent, built: LedgerEvent<"context_built">, ws: string, thread: string): Promise<string> {
  const blob = (await a.rt.ledger.getBlob(built.payload.promptRef))!;
  return blob.split(ws).join("<ws>").split(thread).join("<thread>");
}

async function withChromaUrl<T>(url: string, fn: () => Promise<T>): Promise<T> {
  const saved = process.env.CHROMA_URL;
  process.env.CHROMA_URL = url;
  try {
    return await fn();
  } finally {
    if (saved === undefined) delete process.env.CHROMA_URL;
    else process.env.CHROMA_URL = saved;
  }
}

let chroma: ChromaServer & { stateDir: string };
const gates: Gate[] = [];

beforeAll(async () => {
  chroma = await startTestChroma();
}, 120_000);

afterAll(async () => {
  await Promise.all(gates.map((g) => g.close()));
  await chroma?.release();
  cleanupTemp();
});

describe("a new run's first prompt", () => {
  it("is built before the vector store answers, fuses no vector, and is the prompt a run with the store up builds", async () => {
    // Heartbeats pass: the client's check of a CHROMA_URL gives up after 3 s, which a loaded machine
    // can take before the first prompt is built; everything else waits for the gate.
    const g = await gate(chroma.url, undefined, (first) => first.toString("latin1").startsWith("GET /api/v2/heartbeat "));
    gates.push(g);
    const ws = tempWorkspace(undefined, FILES);
    const closed = await withChromaUrl(g.url, async () => {
      const a = await testAgent(ws, TRAJECTORY, { retrieval: "hybrid" });
      try {
        const searches = recordSearches(a);
        // Old code: the first prompt waits for the index's vectors, so it comes only once the gate
        // opens on this timer; this code builds it first, however long that takes.
        const fallback = setTimeout(() => g.open(), 20_000);
        let builtWhileClosed: boolean | undefined;
        const watch = setInterval(() => {
          void a.rt.ledger.list("closed", { types: ["context_built"] }).then((built) => {
            if (built.length === 0 || builtWhileClosed !== undefined) return;
            builtWhileClosed = !g.opened();
            g.open();
          });
        }, 20);
        try {
          await a.run(GOAL, "closed");
        } finally {
          clearTimeout(fallback);
          clearInterval(watch);
        }
        const builds = (await a.events("closed")).filter((e): e is LedgerEvent<"context_built"> => e.type === "context_built");
        return { builtWhileClosed, searches, first: await promptOf(a, builds[0]!, ws, "closed"), builds: builds.length };
      } finally {
        await a.close();
      }
    });
    expect(closed.builtWhileClosed).toBe(true);
    expect(closed.builds).toBe(2);
    const code = closed.searches.filter((s) => s.scope === "code");
    expect(code).toHaveLength(2);
    // The first prompt's code search leaves vectors out; the second fuses them.
    expect(code[0]!.sources).not.toContain("vector");
    expect(code[0]!.hits.length).toBeGreaterThan(0);
    expect(code[0]!.hits.every((h) => h.kind === "code" && h.sources.vector === undefined)).toBe(true);
    expect(code[1]!.sources).toBeUndefined();
    expect(code[1]!.hits.some((h) => h.kind === "code" && h.sources.vector !== undefined)).toBe(true);

    // The same run against a store that was up from the start: the same first prompt.
    const ws2 = tempWorkspace(undefined, FILES);
    const open = await withChromaUrl(chroma.url, async () => {
      const a = await testAgent(ws2, TRAJECTORY, { retrieval: "hybrid" });
      try {
        // The store is up and the workspace's vectors are made before the run starts.
        await a.rt.retriever!.search("invoice", 1);
        await a.run(GOAL, "open");
        const built = (await a.events("open")).find((e): e is LedgerEvent<"context_built"> => e.type === "context_built")!;
        return promptOf(a, built, ws2, "open");
      } finally {
        await a.close();
      }
    });
    expect(open).toBe(closed.first);
  }, 120_000);

  it("of a new run (newRun): the vector store is first contacted once the workspace's files are indexed", async () => {
    const ws = tempWorkspace(undefined, FILES);
    const stateDir = path.join(ws, ".ledgerloop");
    let storedAtFirstContact = -1;
    const g = await gate(chroma.url, () => {
      if (storedAtFirstContact < 0) storedAtFirstContact = filesStored(stateDir);
    });
    gates.push(g);
    g.open();
    await withChromaUrl(g.url, async () => {
      const a = await testAgent(ws, TRAJECTORY, { retrieval: "hybrid" }, { newRun: true });
      try {
        await a.run(GOAL, "new");
        const code = (await a.rt.retriever!.searchAll("invoice total", { k: 3 })).filter((h) => h.kind === "code");
        // The vectors came all the same.
        expect(code.some((h) => h.sources.vector !== undefined)).toBe(true);
      } finally {
        await a.close();
      }
    });
    // Old code (and a runtime without newRun) connects at once, before any file is stored.
    expect(storedAtFirstContact).toBe(Object.keys(FILES).length);
    expect(g.connections()).toBeGreaterThan(0);
  }, 120_000);
});
