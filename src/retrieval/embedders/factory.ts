import path from "node:path";
import { EmbedderError } from "../errors.js";
import { createHashedEmbedder } from "./hashed.js";
import type { Embedder } from "./port.js";

/** The embedder used when none is named. */
export const DEFAULT_EMBEDDER = "hashed";

/**
 * Builds an embedder from its name: `hashed` (default, offline, no model), `hashed:<dimensions>`, or
 * `xenova:<model>` for a model whose files are under `modelsDir` (default `<stateDir>/models`, or
 * `$LEDGERLOOP_MODELS_DIR`), or `openai:<model>` served at `/v1/embeddings` of
 * `$LEDGERLOOP_EMBEDDINGS_BASE_URL` (else `$OPENAI_BASE_URL`).
 */
export async function createEmbedder(spec: string | undefined, opts: { modelsDir?: string; stateDir?: string; signal?: AbortSignal } = {}): Promise<Embedder> {
  const name = (spec ?? DEFAULT_EMBEDDER).trim();
  if (name === "hashed" || name.startsWith("hashed:")) {
    const dims = name === "hashed" ? undefined : Number(name.slice("hashed:".length));
    if (dims !== undefined && (!Number.isInteger(dims) || dims < 16 || dims > 4096)) {
      throw new EmbedderError("EMBEDDER_UNKNOWN", `embedder "${name}": dimensions must be an integer from 16 to 4096`);
    }
    return createHashedEmbedder(dims === undefined ? {} : { dimensions: dims });
  }
  if (name.startsWith("xenova:")) {
    const model = name.slice("xenova:".length);
    if (!model) throw new EmbedderError("EMBEDDER_UNKNOWN", `embedder "${name}" names no model (xenova:<model>, e.g. xenova:Xenova/all-MiniLM-L6-v2)`);
    const modelsDir = opts.modelsDir ?? process.env.LEDGERLOOP_MODELS_DIR ?? (opts.stateDir ? path.join(opts.stateDir, "models") : path.resolve("models"));
    // Loaded only when chosen: a search with the default embedder never reads it.
    const { createXenovaEmbedder } = await import("./xenova.js");
    return createXenovaEmbedder({ model, modelsDir });
  }
  if (name.startsWith("openai:")) {
    const model = name.slice("openai:".length);
    if (!model)
      throw new EmbedderError(
        "EMBEDDER_UNKNOWN",
        `embedder "${name}" names no model (openai:<model>, e.g. openai:text-embedding-3-small or openai:nomic-embed-text)`,
      );
    // Loaded when chosen: @langchain/openai and the openai client are most of a search's start-up.
    const { createOpenAIEmbedder } = await import("./openai.js");
    return createOpenAIEmbedder({ model, ...(opts.signal ? { signal: opts.signal } : {}) });
  }
  throw new EmbedderError(
    "EMBEDDER_UNKNOWN",
    `unknown embedder "${name}"; use "hashed" (default), "hashed:<dimensions>", "xenova:<model>" or "openai:<model>"`,
  );
}

/**
 * Before an embedder that could not start is built again: resolves when it may work now, throws why
 * not. Quick and cancellable for an endpoint (`openai:`); the other kinds are local and just built.
 */
export async function embedderMayStart(spec: string, signal: AbortSignal): Promise<void> {
  const name = spec.trim();
  if (name.startsWith("openai:")) await (await import("./openai.js")).embeddingsEndpointAnswers(name.slice("openai:".length), signal);
}
