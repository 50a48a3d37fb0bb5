import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createRetriever, type Retriever } from "../../src/retrieval/hybrid.js";
import { createRedactor } from "../../src/secrets.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

const BODY = ["MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun", "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK"];
const KEY = `-----BEGIN RSA PRIVATE KEY-----\n${BODY.join("\n")}\n-----END RSA PRIVATE KEY-----\n`;

let r: Retriever | undefined;
afterEach(async () => {
  await r?.close();
  r = undefined;
  cleanupTemp();
});

describe("the search index", () => {
  it("cannot find or show a line of a private key kept in a workspace file", async () => {
    const ws = tempWorkspace(undefined, { "deploy/key.pem": KEY, "deploy/notes.md": `# deploy\n${KEY}after the key: zebra\n` });
    const redactor = createRedactor();
    r = await createRetriever({ workspace: ws, stateDir: path.join(ws, ".ledgerloop"), vectorIndex: "off", redact: (t) => redactor.redact(t) });
    await r.index();
    // The index is contentless (trigrams only), so what leaks is what a search finds and previews.
    for (const line of BODY) {
      const hits = await r.search(line.slice(4, 28), 5);
      expect(hits.map((h) => h.path)).toEqual([]);
    }
    // Line numbers after the hidden block are those of the file.
    const zebra = (await r.search("zebra", 3)).find((h) => h.path === "deploy/notes.md")!;
    expect(zebra.preview).toContain("zebra");
    expect(zebra.preview).not.toMatch(/MIIE|VTLw/);
  }, 60_000);
});
