import { DEFAULT_EMBEDDER } from "./embedders/factory.js";
import { chromaPackageDir, ensureChromaServer, type ChromaServer } from "./chroma-server.js";

// A fresh embedded Chroma server takes a second or more to answer, in a process of its own. A run
// that asks for it only once its runtime is built (after loading LangGraph, the tokenizer, the
// sandbox check) waits that long again before its first search. Started at the top of the command
// instead, it comes up on the other core while this process loads its modules; the retriever
// then adopts it exactly as it adopts a server another process started, so nothing it indexes or
// finds differs.

/** The run settings that decide whether the retriever will use the embedded Chroma server. */
export interface PrestartSettings {
  retrieval?: string;
  vectors?: string;
  embedder?: string;
}

/** A server being started or adopted early; release() drops this process's early hold on it. */
export interface ChromaPrestart {
  /** Resolves once the early start has settled (started, adopted, failed or skipped). */
  readonly settled: Promise<void>;
  release(): Promise<void>;
}

const NOTHING: ChromaPrestart = { settled: Promise.resolve(), release: async () => {} };

/**
 * Whether a run with these settings will ask for the workspace's embedded server: hybrid retrieval
 * with Chroma vectors, no external CHROMA_URL, and an embedder that cannot fail to start (another
 * one may leave the vector side off, and then no server should have been started for it).
 */
export function wantsEmbeddedChroma(s: PrestartSettings, env: NodeJS.ProcessEnv = process.env): boolean {
  if ((s.retrieval ?? "hybrid") !== "hybrid" || (s.vectors ?? "chroma") !== "chroma") return false;
  if (env.CHROMA_URL) return false;
  if ((s.embedder ?? DEFAULT_EMBEDDER) !== DEFAULT_EMBEDDER) return false;
  try {
    chromaPackageDir();
    return true;
  } catch {
    return false;
  }
}

/**
 * Starts or adopts the embedded Chroma server of `stateDir` in the background when the run will use
 * it. Never throws: a failure here is met again, and reported, by the retriever's own connect.
 */
export function prestartChroma(stateDir: string, settings: PrestartSettings): ChromaPrestart {
  if (!wantsEmbeddedChroma(settings)) return NOTHING;
  let released = false;
  const holding: Promise<ChromaServer | null> = ensureChromaServer({ stateDir }).catch(() => null);
  return {
    settled: holding.then(() => undefined),
    async release() {
      if (released) return;
      released = true;
      await (await holding)?.release();
    },
  };
}
