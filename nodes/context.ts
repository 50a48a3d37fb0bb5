import { buildPrompt } from "../src/context/builder.js";
import { toolSpecs } from "../tools/index.js";
import { branchWriter, threadIdOf, type NodeDeps, type NodeFn } from "./deps.js";

/** Builds this step's prompt under the token budget and records what went in (and what did not). */
export function createContextNode(deps: NodeDeps): NodeFn {
  return async (state, config) => {
    const rt = await deps.resolve(config);
    const w = branchWriter(rt, state, config, "context");
    const { event } = await w.once("context", "context_built", async () => {
      const built = await buildPrompt({
        ledger: rt.ledger,
        state,
        maxSteps: rt.settings.maxSteps,
        budgetTokens: rt.settings.budgetTokens,
        recentTurns: rt.settings.recentTurns,
        tools: toolSpecs(),
        counter: rt.counter,
        workspace: rt.workspace,
        searcher: rt.searcher,
        eventSearcher: rt.retriever
          ? {
              // History search through the index; branchHead keeps a fork from seeing its siblings' events.
              searchEvents: async (query: string, k: number) =>
                (await rt.retriever!.searchAll(query, { k, scope: "events", threadId: threadIdOf(config), branchHead: state.ledgerHead ?? undefined }))
                  .filter((h) => h.kind === "event")
                  .map((h) => ({ eventId: (h as { eventId: string }).eventId, score: h.score })),
            }
          : undefined,
        store: (config.store as typeof rt.store | undefined) ?? rt.store,
      });
      const promptRef = await rt.ledger.putBlob(JSON.stringify(built.messages));
      return {
        step: state.step + 1,
        promptRef,
        tokens: built.tokens,
        budget: rt.settings.budgetTokens,
        items: built.items,
        omitted: built.omitted,
      };
    });
    return { contextId: event.id, ledgerHead: w.head };
  };
}
