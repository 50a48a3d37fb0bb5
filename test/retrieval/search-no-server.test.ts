import fs from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { searchWorkspace } from "../../src/inspect/search.js";
import { chromaProcessesOn } from "../../src/retrieval/chroma-server.js";
import { openRetriever } from "../../src/retrieval/open-retriever.js";
import { isMissing } from "../../src/optional-packages.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

// `ledgerloop search` answers from the n-gram and path index: it takes vectors from a Chroma
// server that already runs, and never starts one (that cost more than the search itself).
let chromaInstalled = true;
try {
  await import("chromadb");
} catch (err) {
  chromaInstalled = !isMissing(err, ["chromadb"]);
}

afterAll(() => cleanupTemp());

function workspace(): string {
  const files: Record<string, string> = {};
  for (let i = 0; i < 30; i++) {
    files[`src/mod${i}.ts`] = `export function parseRecord${i}(line: string) {\n  return line.split(",");\n}\nexport const retryBudget${i} = ${i};\n`;
  }
  return tempWorkspace(undefined, files);
}

describe.skipIf(!chromaInstalled)("search without a running Chroma server (chromadb installed)", () => {
  it("answers from the index files, starts no server, and takes vectors from one that runs", async () => {
    const ws = workspace();
    const dataDir = path.join(ws, ".ledgerloop", "chroma");
    // `ledgerloop index` (vectors included): it starts the server and stops it when done.
    const indexed = await openRetriever({ workspace: ws }, () => {});
    await indexed.retriever.index();
    expect((await indexed.retriever.stats()).vector.state).toBe("ok");
    await indexed.close();
    expect(chromaProcessesOn(dataDir)).toEqual([]);

    const alone = await searchWorkspace("parseRecord retry budget", { workspace: ws });
    expect(alone.results.length).toBeGreaterThan(0);
    expect(alone.results.some((r) => r.kind === "code" && r.path.startsWith("src/mod"))).toBe(true);
    // No vector side: nothing was started to answer it, and nothing is left running.
    for (const r of alone.results) expect(Object.keys(r.sources)).not.toContain("vector");
    expect(chromaProcessesOn(dataDir)).toEqual([]);
    expect(fs.existsSync(path.join(ws, ".ledgerloop", "chroma.server.json"))).toBe(false);

    // With the workspace's server up (a run holds it), the same search uses its vectors and leaves it running.
    const holder = await openRetriever({ workspace: ws }, () => {});
    await holder.retriever.index();
    const running = chromaProcessesOn(dataDir);
    expect(running).toHaveLength(1);
    try {
      const withVectors = await searchWorkspace("parseRecord retry budget", { workspace: ws });
      expect(withVectors.results.some((r) => Object.keys(r.sources).includes("vector"))).toBe(true);
      expect(chromaProcessesOn(dataDir)).toEqual(running);
    } finally {
      await holder.close();
    }
  }, 180_000);
});
