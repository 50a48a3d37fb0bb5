import { errorMessage } from "../errors.js";
import { MissingPackageError } from "../optional-packages.js";
import type { Embedder } from "./embedders/port.js";
import type { NgramIndex } from "./ngram-index.js";
import type { RetrieverOptions, VectorStatus } from "./retriever-types.js";
import type { VectorIndex } from "./vector-index.js";

/** A failed vector store is tried again at most this often. */
const RECOVERY_INTERVAL_MS = 30_000;

export interface VectorConnectionOptions {
  workspace: string;
  stateDir: string;
  embedder: Embedder;
  /** The current index.db (it changes when the index is rebuilt): it remembers which store holds the vectors. */
  index: () => NgramIndex;
  opts: Pick<RetrieverOptions, "vectorIndex" | "chromaUrl" | "chromaStartTimeoutMs" | "vectorLine" | "vectorRetryMs" | "vectorServer">;
  /**
   * The configured embedder could not start: why, its spec, and how to start it again (it puts the
   * new embedder in place of the stand-in `embedder`); null when it started.
   */
  blocked: { reason: string; spec: string; revive: (signal: AbortSignal) => Promise<void> } | null;
  warn: (message: string) => void;
}

/**
 * The vector side's connection as a small state machine: off (disabled), ok (connected), degraded
 * (failed; n-gram search goes on, and a reconnect is tried now and then). Every use goes through
 * {@link VectorConnection.use}, so a failing store degrades the retriever instead of failing it.
 */
export class VectorConnection {
  private vectors: VectorIndex | null = null;
  private state: VectorStatus["state"] = "off";
  private lastError: string | undefined;
  private lastAttempt = 0;
  private blocked: VectorConnectionOptions["blocked"];
  private reviving: Promise<void> | null = null;
  private readonly stopReviving = new AbortController();
  /** Set when the side came back since {@link VectorConnection.takeRecovered} was last asked. */
  private recovered = false;

  constructor(private readonly o: VectorConnectionOptions) {
    this.blocked = o.blocked;
  }

  /** True when vectors can be used now. */
  get ok(): boolean {
    return this.vectors !== null && this.state === "ok";
  }

  /** Vectors are disabled by configuration (not failed). */
  get disabled(): boolean {
    return this.o.opts.vectorIndex === "off";
  }

  get error(): string | undefined {
    return this.lastError;
  }

  status(): VectorStatus {
    return {
      state: this.state,
      store: this.vectors?.description ?? null,
      embedder: this.blocked ? this.blocked.spec : this.o.embedder.id,
      dimensions: this.blocked ? null : this.o.embedder.dimensions,
      ...(this.lastError ? { error: this.lastError } : {}),
    };
  }

  /** Connects to the store (Chroma, or the given VectorIndex); on failure the side is degraded, with one warning. */
  async connect(): Promise<void> {
    this.lastAttempt = Date.now();
    if (this.disabled) {
      this.state = "off";
      return;
    }
    if (this.blocked) {
      this.degrade(new Error(this.blocked.reason));
      return;
    }
    try {
      const { embedder, opts } = this.o;
      let store: VectorIndex;
      if (opts.vectorIndex && opts.vectorIndex !== "off") store = opts.vectorIndex;
      else {
        // The Chroma modules load here, not with the retriever: a search with no server never needs
        // the client side (chroma-index, collection naming).
        const { chromaPackageDir, ensureChromaServer, externalChroma, runningChromaServer } = await import("./chroma-server.js");
        // Before any server is asked or started: without the package neither is of use.
        chromaPackageDir();
        const url = opts.chromaUrl ?? process.env.CHROMA_URL;
        if (url) {
          // A shared server: collections per repository and revision line, the same for every
          // worker's clone of the repository wherever it is (collection-naming.ts).
          const [server, { createChromaIndex }, { repositoryIdentity, sharedCollectionPrefix, DEFAULT_VECTOR_LINE }] = await Promise.all([
            externalChroma(url),
            import("./chroma-index.js"),
            import("./collection-naming.js"),
          ]);
          const repository = await repositoryIdentity(this.o.workspace);
          const line = opts.vectorLine ?? DEFAULT_VECTOR_LINE;
          store = await createChromaIndex({
            server,
            embedder,
            namespace: repository.value,
            shared: { prefix: sharedCollectionPrefix(repository, line), repository, line },
          });
        } else {
          const server =
            opts.vectorServer === "running"
              ? await runningChromaServer(this.o.stateDir)
              : await ensureChromaServer({ stateDir: this.o.stateDir, startTimeoutMs: opts.chromaStartTimeoutMs });
          if (!server) {
            // Not a failure: nothing to reconnect to, and files keep their vectors for the next index.
            this.state = "off";
            this.lastError = "no Chroma server is running for this workspace; searched the n-gram and path index only";
            return;
          }
          // Keyed by workspace and state dir: two indexes of one workspace never share a collection.
          const { createChromaIndex } = await import("./chroma-index.js");
          store = await createChromaIndex({ server, embedder, namespace: `${this.o.workspace}\0${this.o.stateDir}` });
        }
      }
      this.vectors = store;
      // The vector store is derived data too: when it is not the one index.db remembers (another
      // embedder, server or a wiped collection), every file is re-embedded.
      const key = `${store.description}|${embedder.id}|${embedder.dimensions}`;
      const count = await store.count("code");
      const ngram = this.o.index();
      if (ngram.getMeta("vector_key") !== key || (count === 0 && ngram.anyVectorClaimed())) {
        ngram.clearVectorState();
        ngram.setMeta("vector_key", key);
      }
      if (this.state === "degraded") {
        this.o.warn(`vector search is available again (${store.description}, embedder ${embedder.id})`);
        this.recovered = true;
      }
      this.state = "ok";
      this.lastError = undefined;
    } catch (err) {
      if (err instanceof MissingPackageError) this.notInstalled(err);
      else this.degrade(err);
    }
  }

  /**
   * chromadb is an optional package: without it the side is off (not degraded: no reconnects), and
   * the reason stays in the status. Only a user who asked for vectors (an embedder other than the
   * default, a Chroma URL) is warned; the default install searches without them, quietly.
   */
  private notInstalled(err: MissingPackageError): void {
    this.state = "off";
    this.lastError = err.message;
    const chosen = !this.o.embedder.id.startsWith("hashed-") || Boolean(this.o.opts.chromaUrl ?? process.env.CHROMA_URL);
    if (chosen) this.o.warn(`vector search is off: ${err.message}`);
  }

  /** Marks the side failed (warning once per outage) and drops the store until a reconnect. */
  degrade(err: unknown): void {
    const msg = errorMessage(err);
    const first = this.state !== "degraded";
    this.state = "degraded";
    this.lastError = msg;
    this.lastAttempt = Date.now();
    const v = this.vectors;
    this.vectors = null;
    if (v && !this.o.opts.vectorIndex) v.close().catch(() => {});
    if (first) this.o.warn(`vector search is unavailable (${msg}); searching with the n-gram index only`);
  }

  /**
   * Tries to bring a failed vector side back, at most every `vectorRetryMs` (default
   * RECOVERY_INTERVAL_MS). An embedder that could not start is asked again in the background, so no
   * search or refresh waits on an endpoint that hangs; once it answers, the next call connects.
   */
  async maybeRecover(): Promise<void> {
    if (this.state !== "degraded" || Date.now() - this.lastAttempt < (this.o.opts.vectorRetryMs ?? RECOVERY_INTERVAL_MS)) return;
    if (this.blocked) {
      this.lastAttempt = Date.now();
      const blocked = this.blocked;
      this.reviving ??= blocked
        .revive(this.stopReviving.signal)
        .then(
          () => {
            this.blocked = null;
            this.lastAttempt = 0; // connect on the next call
          },
          (err: unknown) => {
            this.blocked = { ...blocked, reason: errorMessage(err) };
            this.lastError = this.blocked.reason;
          },
        )
        .finally(() => (this.reviving = null));
      return;
    }
    await this.connect();
  }

  /** True once after the side came back from a failure: files indexed meanwhile still lack vectors. */
  takeRecovered(): boolean {
    const r = this.recovered;
    this.recovered = false;
    return r;
  }

  /** The store in use while the side is up (a reconnect replaces it); null otherwise. */
  get store(): VectorIndex | null {
    return this.state === "ok" ? this.vectors : null;
  }

  /** Runs fn against the store when it is up; a failure degrades the side and gives undefined. */
  async use<T>(fn: (v: VectorIndex) => Promise<T>): Promise<T | undefined> {
    if (!this.vectors || this.state !== "ok") return undefined;
    try {
      return await fn(this.vectors);
    } catch (err) {
      this.degrade(err);
      return undefined;
    }
  }

  /** Closes a store this connection opened (a VectorIndex passed in belongs to the caller). */
  async close(): Promise<void> {
    // An endpoint being asked again must not hold the process: the quick check is cancelled.
    this.stopReviving.abort();
    await this.reviving;
    if (this.vectors && !this.o.opts.vectorIndex) await this.vectors.close().catch(() => {});
    this.vectors = null;
  }
}
