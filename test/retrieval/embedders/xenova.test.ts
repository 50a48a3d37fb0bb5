import fs from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createEmbedder } from "../../../src/retrieval/embedders/factory.js";
import { createXenovaEmbedder } from "../../../src/retrieval/embedders/xenova.js";
import { EmbedderError } from "../../../src/retrieval/errors.js";
import { cleanupTemp, tempWorkspace } from "../../helpers/workspace.js";
import { writeTinyModel } from "../helpers/tiny-model.js";
import { embedderConformance } from "./conformance.js";

const modelsDir = tempWorkspace();
writeTinyModel(modelsDir);
afterAll(cleanupTemp);

embedderConformance("xenova (tiny local ONNX model)", () => createXenovaEmbedder({ model: "test/tiny-embed", modelsDir }));

describe("xenova embedder", () => {
  it("names every missing file, and never downloads", async () => {
    const empty = tempWorkspace();
    const err = await createEmbedder("xenova:Xenova/all-MiniLM-L6-v2", { modelsDir: empty }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EmbedderError);
    expect((err as EmbedderError).code).toBe("EMBEDDER_MODEL_MISSING");
    const msg = (err as Error).message;
    for (const f of ["config.json", "tokenizer.json", "tokenizer_config.json", "onnx/model_quantized.onnx"]) expect(msg).toContain(f);
    expect(msg).toContain(path.join(empty, "Xenova/all-MiniLM-L6-v2"));
  });

  it("names only what is missing when a model is partly there", async () => {
    const dir = tempWorkspace();
    writeTinyModel(dir, "x/partial");
    fs.rmSync(path.join(dir, "x/partial/tokenizer.json"));
    const err = await createXenovaEmbedder({ model: "x/partial", modelsDir: dir }).catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/missing tokenizer\.json\./);
  });

  it("reports its id and the model's dimension", async () => {
    const e = await createEmbedder("xenova:test/tiny-embed", { modelsDir });
    expect(e.id).toBe("xenova:test/tiny-embed:fp32");
    expect(e.dimensions).toBe(32);
    await e.close?.();
  });
});
