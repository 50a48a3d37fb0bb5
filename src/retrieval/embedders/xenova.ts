import fs from "node:fs";
import path from "node:path";
import { errorMessage } from "../../errors.js";
import { importOptional, MissingPackageError } from "../../optional-packages.js";
import { EmbedderError } from "../errors.js";
import type { Embedder } from "./port.js";

/** Options of {@link createXenovaEmbedder}. */
export interface XenovaEmbedderOptions {
  /** Model name as laid out under `modelsDir`, e.g. `Xenova/all-MiniLM-L6-v2`. */
  model: string;
  /** Directory holding `<model>/config.json`, `<model>/tokenizer.json`, … (never downloaded). */
  modelsDir: string;
  /** Prefer `onnx/model_quantized.onnx` (default) over `onnx/model.onnx` when both exist. */
  quantized?: boolean;
  /** Texts per model call (default 16). */
  batchSize?: number;
  /** Characters of a text passed to the tokenizer (the model truncates tokens beyond its limit anyway). */
  maxChars?: number;
  /** Prefix for queries, for models trained with one (e.g. `"query: "` for E5). */
  queryPrefix?: string;
  /** Prefix for documents (e.g. `"passage: "` for E5). */
  documentPrefix?: string;
}

const REQUIRED = ["config.json", "tokenizer.json", "tokenizer_config.json"];

/** The files a model needs that are missing from its directory (an ONNX file counts once, either variant). */
export function missingModelFiles(dir: string): string[] {
  const missing = REQUIRED.filter((f) => !fs.existsSync(path.join(dir, f)));
  if (!fs.existsSync(path.join(dir, "onnx/model_quantized.onnx")) && !fs.existsSync(path.join(dir, "onnx/model.onnx"))) {
    missing.push("onnx/model_quantized.onnx (or onnx/model.onnx)");
  }
  return missing;
}

type FeatureExtractor = (texts: string[], opts: { pooling: "mean"; normalize: boolean }) => Promise<{ tolist(): number[][] }>;

/**
 * A sentence-embedding model run locally by @xenova/transformers (ONNX Runtime), from files already on
 * disk: remote loading is switched off, and missing files are named in the error instead of fetched.
 */
export async function createXenovaEmbedder(opts: XenovaEmbedderOptions): Promise<Embedder> {
  const modelsDir = path.resolve(opts.modelsDir);
  const dir = path.join(modelsDir, opts.model);
  // The package first: without it no model files help.
  const transformers = await importOptional(["@xenova/transformers"], `embedder xenova:${opts.model}`, () => import("@xenova/transformers")).catch(
    (err: unknown) => {
      throw err instanceof MissingPackageError ? new EmbedderError("EMBEDDER_PACKAGE_MISSING", err.message, { cause: err }) : err;
    },
  );
  const missing = missingModelFiles(dir);
  if (missing.length > 0) {
    throw new EmbedderError(
      "EMBEDDER_MODEL_MISSING",
      `embedder xenova:${opts.model} needs model files that are not in ${dir}: missing ${missing.join(", ")}. ` +
        `Copy the model (its config.json, tokenizer.json, tokenizer_config.json and onnx/ folder) there, point --models-dir ` +
        `at the directory that holds it, or use the default embedder ("hashed").`,
    );
  }
  const quantized = (opts.quantized ?? true) && fs.existsSync(path.join(dir, "onnx/model_quantized.onnx"));
  let extractor: FeatureExtractor;
  let dimensions: number;
  try {
    const { env } = transformers;
    env.allowRemoteModels = false;
    env.allowLocalModels = true;
    env.localModelPath = modelsDir + path.sep;
    // Local files are read in place; nothing is copied into a cache directory.
    env.useFSCache = false;
    env.useBrowserCache = false;
    extractor = (await transformers.pipeline("feature-extraction", opts.model, { quantized, local_files_only: true })) as unknown as FeatureExtractor;
    const probe = (await extractor(["probe"], { pooling: "mean", normalize: true })).tolist();
    dimensions = probe[0]?.length ?? 0;
  } catch (err) {
    throw new EmbedderError("EMBEDDER_FAILED", `cannot load embedder xenova:${opts.model} from ${dir}: ${errorMessage(err)}`, { cause: err });
  }
  if (!dimensions) throw new EmbedderError("EMBEDDER_FAILED", `embedder xenova:${opts.model} produced an empty vector`);

  const batchSize = opts.batchSize ?? 16;
  const maxChars = opts.maxChars ?? 4000;
  const clean = (t: string) => (t.length > maxChars ? t.slice(0, maxChars) : t);
  const run = async (texts: string[]): Promise<number[][]> => {
    const out: number[][] = [];
    for (let i = 0; i < texts.length; i += batchSize) {
      const batch = texts.slice(i, i + batchSize).map(clean);
      const vectors = (await extractor(batch, { pooling: "mean", normalize: true })).tolist();
      for (const v of vectors) out.push(v.map((x) => (Number.isFinite(x) ? x : 0)));
    }
    return out;
  };
  return {
    id: `xenova:${opts.model}${quantized ? "" : ":fp32"}`,
    dimensions,
    async embedDocuments(texts) {
      return run(texts.map((t) => (opts.documentPrefix ?? "") + t));
    },
    async embedQuery(text) {
      return (await run([(opts.queryPrefix ?? "") + text]))[0]!;
    },
    async close() {
      const disposable = extractor as unknown as { dispose?: () => Promise<void> };
      await disposable.dispose?.();
    },
  };
}
