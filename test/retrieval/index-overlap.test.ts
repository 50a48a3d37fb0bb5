import fs from "node:fs";
import path from "node:path";
import { Database } from "../../src/sqlite/driver.js";
import { ChromaClient } from "chromadb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChromaServer } from "../../src/retrieval/chroma-server.js";
import { createRetriever, type Retriever } from "../../src/retrieval/hybrid.js";
import { SOURCES_WITHOUT_VECTORS } from "../../src/retrieval/retriever-types.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";
import { startTestChroma } from "./helpers/chroma.js";
import { filesStored, gate } from "./helpers/gate.js";

// A run's first search waited for its index, which waited for the Chroma connection before
// storing a single file. The files are now read, parsed and stored while Chroma comes up, so a
// search without vectors (a new run's first prompt) answers before the server does; the vectors
// follow once it answers. The server's start is delayed here by a gate in front of a real server:
// connections are held unanswered until the gate opens.

const FILES = 120;

/** A workspace of `n` small TypeScript modules and a README. */
function workspace(n = FILES): string {
  const files: Record<string, string> = {};
  for (let i = 0; i < n; i++) {
    files[`src/pkg${i % 7}/module${i}.ts`] =
      `export interface Row${i} { id: number; name: string }\n` +
      `export function parseRow${i}(line: string): Row${i} {\n  const [id, name] = line.split(",");\n  return { id: Number(id), name: name ?? "" };\n}\n`;
  }
  files["README.md"] = "# rows\nParsing rows.\n";
  return tempWorkspace(undefined, files);
}

/** What index.db holds, in id order (mtimes left out: copies differ there). */
function indexRows(stateDir: string): unknown {
  const db = new Database(path.join(stateDir, "index.db"), { readonly: true });
  try {
    return {
      files: db.prepare("SELECT id, path, hash, size, lang, lines, vec_hash FROM files ORDER BY id").all(),
      chunks: db.prepare("SELECT id, file_id, start_line, end_line, symbols FROM chunks ORDER BY id").all(),
      symbols: db.prepare("SELECT * FROM symbols ORDER BY id").all(),
    };
  } finally {
    db.close();
  }
}

/** The ids and metadata of a retriever's code collection on the real server, sorted by id. */
async function codeVectors(r: Retriever): Promise<unknown> {
  const store = (await r.stats()).vector.store ?? "";
  const prefix = /\(collections (ll_[0-9a-f]+_[0-9a-f]+)_\*\)$/.exec(store)?.[1];
  expect(prefix, store).toBeTruthy();
  const client = new ChromaClient({ host: new URL(chroma.url).hostname, port: Number(new URL(chroma.url).port) });
  const name = (await client.listCollections()).map((c) => c.name).find((n) => n.startsWith(prefix!) && n.endsWith("_code"));
  const got = await (await client.getCollection({ name: name! })).get({ include: ["metadatas"] as never });
  return got.ids.map((id, i) => ({ id, metadata: got.metadatas[i] })).sort((a, b) => a.id.localeCompare(b.id));
}

let chroma: ChromaServer & { stateDir: string };
const open: Retriever[] = [];

beforeAll(async () => {
  chroma = await startTestChroma();
}, 120_000);

afterAll(async () => {
  await Promise.all(open.map((r) => r.close().catch(() => {})));
  await chroma?.release();
  cleanupTemp();
});

describe("a full index while the Chroma server is not answering yet", () => {
  it("stores every file and answers a search without vectors before the server answers, and ends with the same index and vectors as when connected first", async () => {
    const g = await gate(chroma.url);
    try {
      const ws = workspace();
      const stateDir = tempWorkspace();
      const warnings: string[] = [];
      const r = await createRetriever({
        workspace: ws,
        stateDir,
        chromaUrl: g.url,
        history: false,
        connectInBackground: true,
        onWarning: (m) => warnings.push(m),
      });
      open.push(r);
      // Old code: the search waits for the whole index, which stores nothing before the server
      // answers, so the gate opens on this timer (inside the 3 s a heartbeat to a CHROMA_URL is given).
      const fallback = setTimeout(() => g.open(), 2_500);
      const indexing = r.index();
      const lexical = await r.searchAll("parseRow42 line split", { k: 3, sources: SOURCES_WITHOUT_VECTORS });
      const answeredClosed = !g.opened();
      const storedClosed = filesStored(stateDir);
      g.open();
      clearTimeout(fallback);
      const report = await indexing;
      expect(answeredClosed).toBe(true);
      expect(storedClosed).toBe(FILES + 1);
      expect(lexical[0]).toMatchObject({ kind: "code", path: "src/pkg0/module42.ts" });
      expect(lexical.every((h) => h.kind === "code" && h.sources.vector === undefined)).toBe(true);
      expect(warnings).toEqual([]);
      expect(report).toMatchObject({ files: FILES + 1, indexed: FILES + 1, vectorsMissing: 0 });
      expect(report.vectorized).toBeGreaterThanOrEqual(FILES + 1);
      expect((await r.stats()).vector.state).toBe("ok");
      // Once the vectors are made, a search fuses them.
      expect((await r.search("parseRow42 line split", 3))[0]?.sources.vector).toBeDefined();

      // The same workspace indexed with the connection made first (as every index did before).
      const ws2 = tempWorkspace(ws);
      const stateDir2 = tempWorkspace();
      const first = await createRetriever({ workspace: ws2, stateDir: stateDir2, chromaUrl: chroma.url, history: false });
      open.push(first);
      const report2 = await first.index();
      expect({ ...report, durationMs: 0, vectorMs: 0 }).toEqual({ ...report2, durationMs: 0, vectorMs: 0 });
      expect(await codeVectors(r)).toEqual(await codeVectors(first));
      expect((await r.search("parseRow42 line split", 3))[0]?.path).toBe("src/pkg0/module42.ts");
      expect(await r.search("parseRow42 line split", 5)).toEqual(await first.search("parseRow42 line split", 5));
      await r.close();
      await first.close();
      expect(indexRows(stateDir)).toEqual(indexRows(stateDir2));
    } finally {
      await g.close();
    }
  }, 120_000);
});

describe("a full index while the workspace's embedded Chroma server is slow to start", () => {
  it("stores the whole workspace before the server answers (no read-ahead limit), then adds the vectors", async () => {
    const ws = workspace(1100);
    const stateDir = tempWorkspace();
    // Another live process (this one) holds the start lock: the retriever's start of the embedded
    // server waits for it, as it waits for a concurrent start.
    const startLock = path.join(stateDir, "chroma.lock");
    fs.writeFileSync(startLock, String(process.pid));
    const r = await createRetriever({ workspace: ws, stateDir, history: false, connectInBackground: true, chromaStartTimeoutMs: 45_000 });
    open.push(r);
    let read = 0;
    let readAtRelease = -1;
    let storedAtRelease = -1;
    const release = () => {
      if (readAtRelease >= 0) return;
      readAtRelease = read;
      storedAtRelease = filesStored(stateDir);
      fs.rmSync(startLock, { force: true });
    };
    // Released once reading has stalled for 1.5 s (or after 30 s, whatever happened). Old code
    // stalled after reading 1,024 files, with none stored.
    let last = -1;
    let stillSince = Date.now();
    const t0 = Date.now();
    const poll = setInterval(() => {
      if (read !== last) [last, stillSince] = [read, Date.now()];
      else if ((read > 0 && Date.now() - stillSince > 1_500) || Date.now() - t0 > 30_000) release();
    }, 100);
    try {
      const report = await r.index({ onProgress: (p) => void (p.phase === "index" && read++) });
      expect(readAtRelease).toBe(1101);
      expect(storedAtRelease).toBe(1101);
      expect(report).toMatchObject({ files: 1101, indexed: 1101, vectorsMissing: 0 });
      expect(report.vectorized).toBeGreaterThanOrEqual(1101);
      expect((await r.stats()).vector).toMatchObject({ state: "ok" });
      expect(filesStored(stateDir)).toBe(1101);
    } finally {
      clearInterval(poll);
      release();
    }
  }, 120_000);
});
