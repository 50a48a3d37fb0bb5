import { describe, expect, it } from "vitest";
import { createEmbedder } from "../../../src/retrieval/embedders/factory.js";
import { createHashedEmbedder, hashedFeatures } from "../../../src/retrieval/embedders/hashed.js";
import { EmbedderError } from "../../../src/retrieval/errors.js";
import { embedderConformance } from "./conformance.js";

embedderConformance("hashed (default)", async () => createHashedEmbedder());
embedderConformance("hashed:64", async () => createEmbedder("hashed:64"));

const cos = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * b[i]!, 0);

describe("hashed embedder", () => {
  it("meets identifier styles and inflections on the same features", async () => {
    const e = createHashedEmbedder();
    const [a, b, c, d] = await e.embedDocuments(["UserRole", "user_role", "user roles", "dashboard colour"]);
    expect(cos(a!, b!)).toBeGreaterThan(0.9);
    expect(cos(a!, c!)).toBeGreaterThan(0.6);
    expect(cos(a!, d!)).toBeLessThan(0.2);
  });

  it("shares character trigrams between a word and its abbreviation", () => {
    const long = hashedFeatures("authentication");
    const short = hashedFeatures("authorize");
    const shared = [...long.keys()].filter((k) => k.startsWith("g:") && short.has(k));
    expect(shared).toContain("g:^au");
  });

  it("damps keywords", () => {
    const f = hashedFeatures("return parseConfig");
    expect(f.get("w:return")!).toBeLessThan(f.get("w:pars")!);
  });

  it("names its space by its dimensions, and rejects bad names", async () => {
    expect((await createEmbedder(undefined)).id).toBe("hashed-v1-384");
    expect((await createEmbedder("hashed:128")).dimensions).toBe(128);
    await expect(createEmbedder("hashed:3")).rejects.toBeInstanceOf(EmbedderError);
    await expect(createEmbedder("frobnicate:text-embedding-3")).rejects.toThrow(/unknown embedder/);
  });
});
