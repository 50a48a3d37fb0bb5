import fs from "node:fs";
import path from "node:path";
import { GptEncoding } from "gpt-tokenizer/GptEncoding";
import { describe, expect, it } from "vitest";
import { loadRanks, moduleRanks, preparedRanksFile, readPreparedRanks, tokenizerVersion, type Encoding } from "../../src/context/bpe-ranks.js";
import { loadTokenCounter } from "../../src/context/tokens.js";
import { ensureBuilt } from "../helpers/build.js";
import { tempWorkspace } from "../helpers/workspace.js";
import { tokenizerCorpus } from "../helpers/token-corpus.js";

// The build writes gpt-tokenizer's ranks as JSON (scripts/bpe-ranks.mjs) because parsing JSON is
// far cheaper than compiling the 2.4 MB module they ship as. A count must not change with it.

describe("prepared byte-pair ranks", () => {
  it.each(["o200k_base", "cl100k_base"] as Encoding[])(
    "the build's %s ranks are gpt-tokenizer's, entry for entry, and count every text alike",
    async (encoding) => {
      ensureBuilt();
      const prepared = readPreparedRanks(encoding);
      expect(prepared, `the build wrote no ${preparedRanksFile(encoding)}`).toBeDefined();
      const original = await moduleRanks(encoding);
      expect(prepared!.length).toBe(original.length);
      expect(prepared).toEqual(original);
      const fromJson = GptEncoding.getEncodingApi(encoding, () => prepared!);
      const fromModule = (await import(`gpt-tokenizer/encoding/${encoding}`)) as { countTokens(t: string, o?: object): number };
      const asText = { disallowedSpecial: new Set<string>() };
      for (const text of tokenizerCorpus()) expect(fromJson.countTokens(text, asText)).toBe(fromModule.countTokens(text, asText));
    },
  );

  it("is what a counter loads once built; the counts match gpt-tokenizer's own module", async () => {
    ensureBuilt();
    expect((await loadRanks("o200k_base")).source).toBe("prepared");
    const counter = await loadTokenCounter("o200k_base");
    const reference = (await import("gpt-tokenizer/encoding/o200k_base")) as { countTokens(t: string, o?: object): number };
    for (const text of tokenizerCorpus().slice(0, 20)) expect(counter.count(text)).toBe(reference.countTokens(text, { disallowedSpecial: new Set() }));
  });

  it("is not used when it names another gpt-tokenizer version, another encoding, or cannot be read", async () => {
    const dir = tempWorkspace();
    const write = (name: string, body: string) => (fs.writeFileSync(path.join(dir, name), body), path.join(dir, name));
    const ranks = ["a", "b", [255, 254]];
    expect(readPreparedRanks("o200k_base", write("ok.json", JSON.stringify({ tokenizer: tokenizerVersion(), encoding: "o200k_base", ranks })))).toEqual(ranks);
    expect(
      readPreparedRanks("o200k_base", write("old.json", JSON.stringify({ tokenizer: "gpt-tokenizer@3.0.0", encoding: "o200k_base", ranks }))),
    ).toBeUndefined();
    expect(
      readPreparedRanks("o200k_base", write("other.json", JSON.stringify({ tokenizer: tokenizerVersion(), encoding: "cl100k_base", ranks }))),
    ).toBeUndefined();
    expect(
      readPreparedRanks("o200k_base", write("cut.json", JSON.stringify({ tokenizer: tokenizerVersion(), encoding: "o200k_base", ranks }).slice(0, 40))),
    ).toBeUndefined();
    expect(readPreparedRanks("o200k_base", path.join(dir, "missing.json"))).toBeUndefined();
  });
});
