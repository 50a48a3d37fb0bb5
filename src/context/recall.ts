import type { Ledger } from "../ledger/port.js";
import { splitTerms } from "../retrieval/lexical.js";
import type { LedgerEvent } from "../state.js";
import { describeAction } from "./render.js";

/** An event found by history search; `note` says when the search was not a full one (recorded with the prompt). */
export interface EventMatch {
  eventId: string;
  score: number;
  note?: string;
}

/** Searches a run's history: implemented by the hybrid retriever, with a lexical fallback here. */
export interface EventSearcher {
  searchEvents(query: string, k: number): Promise<EventMatch[]>;
}

/** The searchable text of an event. */
export function eventText(e: LedgerEvent): string {
  switch (e.type) {
    case "agent_action":
      return describeAction(e.payload.tool, e.payload.args) + " " + JSON.stringify(e.payload.args ?? "").slice(0, 400);
    case "environment_feedback":
      return `${e.payload.tool} ${e.payload.status} ${e.payload.errorClass ?? ""} ${e.payload.output.slice(0, 3000)}`;
    case "decision":
      return e.payload.text;
    case "reflection":
      return e.payload.lessons.join("\n");
    case "summary":
      return e.payload.text;
    default:
      return "";
  }
}

const SEARCHED = ["environment_feedback", "decision", "reflection", "summary"] as const;

// Events never change, so their terms are computed once per process.
const TERMS = new Map<string, Set<string>>();
const TERMS_LIMIT = 50_000;
function termsOf(e: LedgerEvent): Set<string> {
  let t = TERMS.get(e.id);
  if (t === undefined) {
    t = new Set(splitTerms(eventText(e)));
    if (TERMS.size >= TERMS_LIMIT) TERMS.delete(TERMS.keys().next().value as string);
    TERMS.set(e.id, t);
  }
  return t;
}

/**
 * Lexical search over the newest events of a branch (feedback, decisions, reflections,
 * summaries): query terms matched by term (identifier-split), weighted by rarity. The fallback
 * when no index of the history exists, so it only looks at a window of recent history.
 */
export function lexicalEventSearcher(ledger: Ledger, head: string | null, window = 600): EventSearcher {
  return {
    async searchEvents(query, k) {
      const terms = [...new Set(splitTerms(query))];
      if (!terms.length || !head) return [];
      const events = await ledger.branch(head, { types: [...SEARCHED], last: window });
      const docs = events.map((e) => ({ e, terms: termsOf(e) }));
      const idf = new Map(terms.map((t) => [t, Math.log(1 + docs.length / (1 + docs.filter((d) => d.terms.has(t)).length))]));
      const scored: Array<{ eventId: string; score: number }> = [];
      for (const { e, terms: have } of docs) {
        let score = 0;
        for (const t of terms) if (have.has(t)) score += idf.get(t)!;
        if (score > 0) scored.push({ eventId: e.id, score });
      }
      return scored.sort((a, b) => b.score - a.score).slice(0, k);
    },
  };
}
