import { LedgerloopError } from "../errors.js";

/** The search index file is damaged; the retriever moves it aside and rebuilds it. */
export class IndexCorruptError extends LedgerloopError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("INDEX_CORRUPT", message, options);
  }
}

/** The vector store (Chroma) cannot be reached or failed; search falls back to the n-gram index. */
export class VectorStoreError extends LedgerloopError {
  constructor(code: "VECTOR_UNREACHABLE" | "VECTOR_FAILED" | "VECTOR_SERVER_START", message: string, options?: { cause?: unknown }) {
    super(code, message, options);
  }
}

/** An embedder cannot be built or used (unknown name, missing model files or package, bad output). */
export class EmbedderError extends LedgerloopError {
  constructor(
    code: "EMBEDDER_UNKNOWN" | "EMBEDDER_MODEL_MISSING" | "EMBEDDER_PACKAGE_MISSING" | "EMBEDDER_FAILED",
    message: string,
    options?: { cause?: unknown },
  ) {
    super(code, message, options);
  }
}
