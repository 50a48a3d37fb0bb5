import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import Database from "better-sqlite3";
import { ChromaClient } from "chromadb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChromaServer } from "../../src/retrieval/chroma-server.js";
import { createRetriever, type Retriever } from "../../src/retrieval/hybrid.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";
import { startTestChroma } from "./helpers/chroma.js";

// A run's first search waits for its index, which waited for the Chroma connection before reading a
// single file. The files are now read and parsed while Chroma comes up, and stored once it answers.
// The server's start is delayed here by a gate in front of a real server: connections are held
// unanswered until the gate opens.

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

/** A TCP proxy to `target` that holds every connection unanswered until open() is called. */
async function gate(target: string): Promise<{ url: string; open: () => void; opened: () => boolean; close: () => Promise<void> }> {
  const { hostname, port } = new URL(target);
  const held: net.Socket[] = [];
  const sockets = new Set<net.Socket>();
  let isOpen = false;
  const pipe = (client: net.Socket) => {
    const upstream = net.connect(Number(port), hostname);
    sockets.add(upstream);
    client.pipe(upstream).pipe(client);
    client.on("error", () => upstream.destroy());
    upstream.on("error", () => client.destroy());
  };
  const server = net.createServer((client) => {
    sockets.add(client);
    if (isOpen) pipe(client);
    else {
      client.pause();
      held.push(client);
    }
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    open() {
      if (isOpen) return;
      isOpen = true;
      for (const c of held.splice(0)) {
        pipe(c);
        c.resume();
      }
    },
    opened: () => isOpen,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
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

function filesStored(stateDir: string): number {
  const db = new Database(path.join(stateDir, "index.db"), { readonly: true });
  try {
    return (db.prepare("SELECT count(*) AS n FROM files").get() as { n: number }).n;
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
  it("reads and parses the files meanwhile, stores none before the server answers, and ends with the same index and vectors as when connected first", async () => {
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
      let readWhileClosed = 0;
      let storedAtOpen = -1;
      const openGate = () => {
        if (g.opened()) return;
        storedAtOpen = filesStored(stateDir);
        g.open();
      };
      // Old code: nothing is read before the server answers, so the gate opens on this timer (well
      // inside the 3 s a heartbeat to a CHROMA_URL is given) and the count below stays 0.
      const fallback = setTimeout(openGate, 2_000);
      const report = await r.index({
        onProgress: (p) => {
          if (p.phase !== "index" || g.opened()) return;
          readWhileClosed++;
          if (p.done === p.total) openGate();
        },
      });
      clearTimeout(fallback);
      expect(readWhileClosed).toBeGreaterThan(0);
      expect(storedAtOpen).toBe(0);
      expect(warnings).toEqual([]);
      expect(report).toMatchObject({ files: FILES + 1, indexed: FILES + 1, vectorsMissing: 0 });
      expect(report.vectorized).toBeGreaterThanOrEqual(FILES + 1);
      expect((await r.stats()).vector.state).toBe("ok");

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
  it("reads ahead at most 1024 files, then waits for the server; nothing is stored before it answers", async () => {
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
    // Released once reading has stalled for 1.5 s (or after 30 s, whatever happened).
    let last = -1;
    let stillSince = Date.now();
    const t0 = Date.now();
    const poll = setInterval(() => {
      if (read !== last) [last, stillSince] = [read, Date.now()];
      else if ((read > 0 && Date.now() - stillSince > 1_500) || Date.now() - t0 > 30_000) release();
    }, 100);
    try {
      const report = await r.index({ onProgress: (p) => void (p.phase === "index" && read++) });
      expect(readAtRelease).toBe(1024);
      expect(storedAtRelease).toBe(0);
      expect(report).toMatchObject({ files: 1101, indexed: 1101, vectorsMissing: 0 });
      expect((await r.stats()).vector).toMatchObject({ state: "ok" });
      expect(filesStored(stateDir)).toBe(1101);
    } finally {
      clearInterval(poll);
      release();
    }
  }, 120_000);
});
