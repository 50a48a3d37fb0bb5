import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ChromaClient } from "chromadb";
import { createChromaIndex } from "../../src/retrieval/chroma-index.js";
import { externalChroma, type ChromaServer } from "../../src/retrieval/chroma-server.js";
import { normaliseRemoteUrl, repositoryIdentity, sharedCollectionPrefix } from "../../src/retrieval/collection-naming.js";
import { createEmbedder } from "../../src/retrieval/embedders/factory.js";
import { createRetriever, type Retriever } from "../../src/retrieval/hybrid.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";
import { startTestChroma } from "./helpers/chroma.js";
import { git, makeRepo } from "./helpers/git-repo.js";

const FILES = {
  "src/users.js": "export function listUsers(db) {\n  return db.query('SELECT * FROM users');\n}\n",
  "src/orders.js": "export function totalOrders(orders) {\n  return orders.reduce((s, o) => s + o.amount, 0);\n}\n",
  "README.md": "# shop\nUsers and orders.\n",
};

let chroma: ChromaServer & { stateDir: string };
let original: string;
let clone: string;
const open: Retriever[] = [];

beforeAll(async () => {
  chroma = await startTestChroma();
  original = path.join(tempWorkspace(), "shop");
  makeRepo(original, [
    { message: "first", files: { "README.md": FILES["README.md"] } },
    { message: "code", files: FILES },
  ]);
  // Another worker's clone of the same repository, at another path.
  const elsewhere = tempWorkspace();
  git(elsewhere, ["clone", "-q", original, "worker-copy"]);
  clone = path.join(elsewhere, "worker-copy");
}, 120_000);

afterAll(async () => {
  await Promise.all(open.map((r) => r.close().catch(() => {})));
  await chroma?.release();
  cleanupTemp();
});

async function retriever(workspace: string, vectorLine?: string): Promise<Retriever> {
  const warnings: string[] = [];
  // The state outside the workspace (a worker's own disk), the server shared.
  const r = await createRetriever({
    workspace,
    stateDir: tempWorkspace(),
    chromaUrl: chroma.url,
    history: false,
    onWarning: (m) => warnings.push(m),
    ...(vectorLine ? { vectorLine } : {}),
  });
  open.push(r);
  return r;
}

const prefixOf = (description: string | null) => /\(collections (ll_[0-9a-f]+_[0-9a-f]+)_\*\)$/.exec(description ?? "")?.[1];

describe("collection names on a shared Chroma: per repository and revision line", () => {
  it("two clones of one git repository at different paths get the same repository identity; other repositories and lines do not", async () => {
    const a = await repositoryIdentity(original);
    const b = await repositoryIdentity(clone);
    expect(a.kind).toBe("git-roots");
    expect(b).toEqual(a);
    expect(a.value).toBe(git(original, ["rev-list", "--max-parents=0", "HEAD"]).trim());
    expect(sharedCollectionPrefix(a)).toBe(sharedCollectionPrefix(b));
    expect(sharedCollectionPrefix(a)).toMatch(/^ll_[0-9a-f]{16}_[0-9a-f]{12}$/);
    expect(sharedCollectionPrefix(a, "fork-1")).not.toBe(sharedCollectionPrefix(a));

    // A workspace in a subdirectory of the repository sees other relative paths: its own identity.
    expect((await repositoryIdentity(path.join(original, "src"))).value).toBe(`${a.value}:src`);
    // Another repository; a shallow clone (whose oldest commit depends on the depth) goes by its origin.
    const other = path.join(tempWorkspace(), "other");
    makeRepo(other, [{ message: "x", files: { "a.txt": "a\n" } }]);
    expect(sharedCollectionPrefix(await repositoryIdentity(other))).not.toBe(sharedCollectionPrefix(a));
    const shallowDir = tempWorkspace();
    git(shallowDir, ["clone", "-q", "--depth", "1", `file://${original}`, "shallow"]);
    expect(await repositoryIdentity(path.join(shallowDir, "shallow"))).toEqual({ kind: "origin", value: normaliseRemoteUrl(`file://${original}`) });
    // Not a git repository: the workspace path.
    const plain = tempWorkspace(undefined, { "a.txt": "a\n" });
    expect(await repositoryIdentity(plain)).toEqual({ kind: "path", value: plain });
  });

  it("normalises remote URLs so that every way of cloning names one repository, without credentials", () => {
    const same = [
      "git@github.com:Acme/Shop.git",
      "ssh://git@github.com/acme/shop",
      "https://github.com/acme/shop.git",
      "https://user:token@github.com/acme/shop/",
      "git://github.com/acme/shop.git",
    ];
    expect(new Set(same.map(normaliseRemoteUrl))).toEqual(new Set(["github.com/acme/shop"]));
    expect(normaliseRemoteUrl("https://git.example.com:8443/a/b.git")).toBe("git.example.com:8443/a/b");
    expect(normaliseRemoteUrl("https://user:token@github.com/acme/shop")).not.toContain("token");
  });

  it("workers on two clones share one set of vectors; another line gets its own collections and never sees them", async () => {
    const a = await retriever(original);
    expect((await a.index()).vectorized).toBeGreaterThanOrEqual(3);
    const sa = await a.stats();
    expect(sa.vector.state).toBe("ok");
    const prefix = prefixOf(sa.vector.store);
    expect(prefix).toBe(sharedCollectionPrefix(await repositoryIdentity(clone)));

    // The clone's worker opens the same collections and finds the vectors the first worker stored,
    // before it embedded anything itself.
    const embedder = await createEmbedder("hashed");
    const fromClone = await createChromaIndex({
      server: await externalChroma(chroma.url),
      embedder,
      namespace: "unused",
      shared: { prefix: prefix!, repository: await repositoryIdentity(clone), line: "main" },
    });
    const stored = await fromClone.count("code");
    expect(stored).toBeGreaterThanOrEqual(3);
    const hits = await fromClone.query("code", await embedder.embedQuery("totalOrders reduce amount"), 3);
    expect(hits.map((h) => h.metadata.path)).toContain("src/orders.js");
    await fromClone.close();

    // The clone's own retriever on the same line writes into the same collections: the same chunk
    // ids (relative paths), so no duplicates.
    const b = await retriever(clone);
    const first = await a.index();
    expect(first.vectorized).toBe(0);
    const report = await b.index();
    // Nothing embedded again: every file's chunks were in the collection with the file's hash.
    expect(report.indexed).toBe(3);
    expect(report.vectorized).toBe(0);
    expect(report.vectorsMissing).toBe(0);
    expect(prefixOf((await b.stats()).vector.store)).toBe(prefix);
    const client = new ChromaClient({ host: new URL(chroma.url).hostname, port: Number(new URL(chroma.url).port) });
    const names = async () => (await client.listCollections()).map((c) => c.name).filter((n) => n.startsWith("ll_"));
    const codeOfLine = (p: string) => names().then((ns) => ns.filter((n) => n.startsWith(`${p}_`) && n.endsWith("_code")));
    const [shared] = await codeOfLine(prefix!);
    expect(await codeOfLine(prefix!)).toHaveLength(1);
    expect(await (await client.getCollection({ name: shared! })).count()).toBe(stored);
    const found = await b.search("totalOrders", 3);
    expect(JSON.stringify(found)).toContain("src/orders.js");

    // A fork edits a file on its own line: its vectors go to other collections; main's are unchanged.
    fs.writeFileSync(path.join(clone, "src/orders.js"), "export function totalOrders(orders) {\n  return orders.length;\n}\nexport const forkOnly = 1;\n");
    const fork = await retriever(clone, "fork-1");
    await fork.index();
    const forkPrefix = prefixOf((await fork.stats()).vector.store);
    expect(forkPrefix).toBe(sharedCollectionPrefix(await repositoryIdentity(clone), "fork-1"));
    expect(forkPrefix).not.toBe(prefix);
    const [forkCode] = await codeOfLine(forkPrefix!);
    expect(await (await client.getCollection({ name: forkCode! })).count()).toBeGreaterThanOrEqual(3);
    expect(await (await client.getCollection({ name: shared! })).count()).toBe(stored);
    const meta = (await client.getCollection({ name: forkCode! })).metadata as Record<string, unknown>;
    expect(meta).toMatchObject({
      embedder: embedder.id,
      dimensions: embedder.dimensions,
      line: "fork-1",
      repository: expect.stringMatching(/^git-roots:[0-9a-f]{40}$/),
    });
  }, 180_000);
});
