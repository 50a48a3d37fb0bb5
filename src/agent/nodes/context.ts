import { createHash } from "node:crypto";
import { buildPrompt, type PreviousPrompt } from "../../context/builder.js";
import { prefixReuse } from "../../context/reuse.js";
import type { ChatMessage } from "../../models/port.js";
import type { LedgerEvent, RecallRecord } from "../../state.js";
import { lexicalEventSearcher, type EventMatch, type EventSearcher } from "../../context/recall.js";
import type { Ledger } from "../../ledger/port.js";
import type { CodeSearcher, SearchHit } from "../../retrieval/port.js";
import { SOURCES_WITHOUT_VECTORS } from "../../retrieval/retriever-types.js";
import type { LangGraphRunnableConfig } from "@langchain/langgraph";
import type { Runtime } from "../../runtime.js";
import type { TaskStateValue } from "../../state.js";
import { toolSpecs } from "../tools/index.js";
import { restoreProcesses } from "./restore-processes.js";
import { branchWriter, threadIdOf, type NodeDeps, type NodeFn } from "./deps.js";

/** A small promise cache: the last 16 answers by key; a failed answer is forgotten. */
function memo<T>(cache: Map<string, Promise<T>>, key: string, compute: () => Promise<T>): Promise<T> {
  let hit = cache.get(key);
  if (!hit) {
    hit = compute();
    hit.catch(() => cache.delete(key));
    if (cache.size >= 16) cache.delete(cache.keys().next().value as string);
    cache.set(key, hit);
  }
  return hit;
}

/**
 * Code search results depend only on the query and the files; the files are named by the workspace
 * revision. Consecutive steps that change no file and ask the same thing (reading, thinking) reuse
 * the last answer instead of searching again.
 */
function cachedSearcher(inner: CodeSearcher, revision: string | null, cache: Map<string, Promise<SearchHit[]>>, variant: string): CodeSearcher {
  return {
    search: (query, k) =>
      revision ? memo(cache, `${variant}\u0000${revision}\u0000${k}\u0000${query}`, () => inner.search(query, k)) : inner.search(query, k),
  };
}

/**
 * The code searcher of a step's prompt. The first prompt (step 0) searches the n-gram index and
 * history only: the vector store (an embedded Chroma server starts in a second or more, and a new
 * collection's first write allocates its index) is made ready while the model answers, and every
 * later prompt fuses its vectors. Fixed by the state, so a replay, a resumed run or a fork of the
 * first step builds the same prompt whatever the vector store had done by then.
 */
function codeSearcherFor(rt: Runtime, state: TaskStateValue): { searcher: CodeSearcher; variant: string } {
  const retriever = rt.retriever;
  if (state.step > 0 || !retriever) return { searcher: rt.searcher, variant: "all" };
  return {
    searcher: { search: async (query, k) => (await retriever.searchAll(query, { k, scope: "code", sources: SOURCES_WITHOUT_VECTORS })) as SearchHit[] },
    variant: "lexical",
  };
}

/**
 * History recall changes slowly: only events leaving the recent window become new candidates. A
 * query is searched once per RECALL_REFRESH_STEPS-step window; the later prompts of the window that
 * ask the same thing reuse the hits the previous prompt recorded with it (context_built.recall).
 * They are read from the ledger, not from this process's memory, so a run resumed or forked
 * mid-window in a new process recalls exactly what the original run did, and two runs sharing a
 * graph never see each other's answers.
 */
const RECALL_REFRESH_STEPS = 5;

/** A history searcher for one prompt build; `record` is the search the build used, to store with it. */
export interface RecordingEventSearcher extends EventSearcher {
  readonly record: RecallRecord | undefined;
}

type PreviousBuild = LedgerEvent<"context_built"> | undefined;

function recordingEventSearcher(
  ledger: Ledger,
  head: string | null,
  step: number,
  redact: (text: string) => string,
  search: (query: string, k: number, previous: PreviousBuild) => Promise<EventMatch[]>,
): RecordingEventSearcher {
  let record: RecallRecord | undefined;
  let previous: Promise<PreviousBuild> | undefined;
  return {
    get record() {
      return record;
    },
    async searchEvents(query, k) {
      const window = Math.floor(step / RECALL_REFRESH_STEPS);
      // Of the redacted query: a hash of a query quoting a short secret would let whoever reads the
      // ledger test guesses of it. Redaction is the same at every step, so equal queries still match.
      const queryHash = createHash("sha256").update(redact(query)).digest("hex");
      previous ??= head ? ledger.branch(head, { types: ["context_built"], last: 1 }).then((e) => e[0] as PreviousBuild) : Promise.resolve(undefined);
      const prev = await previous;
      const rec = prev?.payload.recall;
      const hits = rec && rec.window === window && rec.k === k && rec.queryHash === queryHash ? rec.hits : await search(query, k, prev);
      record = { window, k, queryHash, hits };
      return hits;
    },
  };
}

/** The caches of one graph's context builds (code search answers). */
export interface PromptCaches {
  search: Map<string, Promise<SearchHit[]>>;
}

/**
 * The seq below which history search may use event vectors: the previous prompt's context_built on
 * this branch (the events before it were indexed at that build and embedded in the background
 * since). The first prompt uses none (0): its few events are the plan's, already in the prompt's
 * fixed part, and waiting for their vectors would put the vector store's start before the first
 * decide. Fixed by the state, so a replay, a resumed run or a time-travel fork recalls the same
 * events with the same scores as the original, whatever the background embedding had done by then.
 */
function vectorCutoff(head: string | null, previous: PreviousBuild): number | undefined {
  if (!head) return undefined;
  return previous ? previous.seq : 0;
}

/** This build's history searcher: through the index when there is one, else a lexical scan of the branch. */
function eventSearcherFor(rt: Runtime, state: TaskStateValue, config: LangGraphRunnableConfig): RecordingEventSearcher {
  const head = state.ledgerHead;
  const lexical = lexicalEventSearcher(rt.ledger, head);
  return recordingEventSearcher(
    rt.ledger,
    head,
    state.step,
    (t) => rt.redactor.redact(t),
    async (query, k, previous) => {
      if (!rt.retriever) return lexical.searchEvents(query, k);
      // branchHead keeps a fork from seeing its siblings' events.
      const hits = await rt.retriever.searchAll(query, {
        k,
        scope: "events",
        threadId: threadIdOf(config),
        branchHead: head ?? undefined,
        vectorsBefore: vectorCutoff(head, previous),
      });
      return hits.flatMap((h) => (h.kind === "event" ? [{ eventId: h.eventId, score: h.score, ...(h.lexicalOnly ? { note: h.lexicalOnly } : {}) }] : []));
    },
  );
}

/** The one-time notes a runtime's context node showed, with the step they were shown at. */
const shownNotes = new WeakMap<Runtime, { step: number; text: string }>();

/**
 * Everything a decide prompt is built from except the budget and the previous prompt: the one
 * definition the context node and decide's context-length retry share, so a retry prompt has the
 * same layout, code search, history recall and lessons as the prompt it replaces.
 */
export function promptSources(
  rt: Runtime,
  state: TaskStateValue,
  config: LangGraphRunnableConfig,
  caches: PromptCaches = { search: new Map() },
): Omit<Parameters<typeof buildPrompt>[0], "budgetTokens" | "previous"> & { eventSearcher: RecordingEventSearcher } {
  const code = codeSearcherFor(rt, state);
  return {
    layout: rt.settings.promptLayout,
    ledger: rt.ledger,
    state,
    maxSteps: rt.settings.maxSteps,
    repeatLimit: rt.settings.repeatLimit,
    // Without taking the one-time notes (restarts): the context node's prompt shows those.
    processes: rt.processes?.describe(3, false) ?? null,
    // The notes this step's prompt showed (rt.notices): a context-length retry must not lose them.
    notices: shownNotes.get(rt)?.step === state.step ? shownNotes.get(rt)!.text : null,
    recentTurns: rt.settings.recentTurns,
    tools: toolSpecs(),
    counter: rt.counter,
    workspace: rt.workspace,
    searcher: cachedSearcher(code.searcher, state.workspaceRev, caches.search, code.variant),
    eventSearcher: eventSearcherFor(rt, state, config),
    store: (config.store as typeof rt.store | undefined) ?? rt.store,
  };
}

/** Builds this step's prompt under the token budget and records what went in (and what did not). */
export function createContextNode(deps: NodeDeps): NodeFn {
  const caches: PromptCaches = { search: new Map() };
  return async (state, config) => {
    const rt = await deps.resolve(config);
    // The first count of a run: waiting here (not in count(), which blocks the thread) leaves the
    // thread to the index and the Chroma server while the tokenizer loads on its worker.
    await rt.counterReady;
    const w = branchWriter(rt, state, config, "context");
    // Background processes the ledger says were running come back before the model is asked.
    if (!(await w.find("context"))) await restoreProcesses(rt, state, w);
    const { event } = await w.once("context", "context_built", async () => {
      // The previous decide prompt on this branch: extended when it can be, and measured against.
      const prevEvent = (await rt.ledger.branch(state.ledgerHead, { types: ["context_built"], last: 1 }))[0] as LedgerEvent<"context_built"> | undefined;
      const prevBlob = prevEvent ? await rt.ledger.getBlob(prevEvent.payload.promptRef) : null;
      const previous: PreviousPrompt | null =
        prevEvent && prevBlob ? { messages: JSON.parse(prevBlob) as ChatMessage[], items: prevEvent.payload.items, layout: prevEvent.payload.layout } : null;
      // A context-length refusal lowered the budget (decide's compactForRetry): it stays lowered.
      const budgetTokens = Math.min(rt.settings.budgetTokens, prevEvent?.payload.layout?.budget ?? Infinity);
      // The background processes as of now; this prompt is the one that tells the model of restarts,
      // and of the worker's notes (taken here: the recorded prompt is what shows them; put back if
      // it could not be recorded, so a re-run shows them).
      const notes = rt.notices?.splice(0) ?? [];
      let built, promptRef;
      const sources = promptSources(rt, state, config, caches);
      try {
        built = await buildPrompt({
          ...sources,
          previous,
          budgetTokens,
          processes: rt.processes?.describe() ?? null,
          notices: notes.join("\n\n") || null,
        });
        promptRef = await rt.ledger.putBlob(JSON.stringify(rt.redactor.redactDeep(built.messages)));
        if (notes.length) shownNotes.set(rt, { step: state.step, text: notes.join("\n\n") });
      } catch (err) {
        rt.notices?.unshift(...notes);
        throw err;
      }
      const reuse = prefixReuse(previous?.messages ?? null, built.messages, rt.counter);
      rt.progress?.({
        node: "context",
        step: state.step + 1,
        text: `${built.tokens}/${budgetTokens} tokens, ${Math.round(reuse.ratio * 100)}% reused${built.layout.built === "compaction" ? ` (compaction: ${built.layout.reason})` : ""}`,
      });
      return {
        layout: built.layout,
        prefixReuse: { reusedTokens: reuse.reusedTokens, tokens: reuse.tokens, ratio: Math.round(reuse.ratio * 10_000) / 10_000 },
        step: state.step + 1,
        promptRef,
        tokens: built.tokens,
        budget: budgetTokens,
        items: built.items,
        omitted: built.omitted,
        ...(sources.eventSearcher.record ? { recall: sources.eventSearcher.record } : {}),
      };
    });
    return { contextId: event.id, ledgerHead: w.head };
  };
}
