import type { Ledger } from "../ledger/port.js";
import { splitTerms } from "../retrieval/lexical.js";
import type { LedgerEvent } from "../state.js";
import { describeAction } from "./render.js";

/** Searches a run's history: implemented by the hybrid retriever, with a lexical fallback here. */
export interface EventSearcher {
  searchEvents(query: string, k: number): Promise<Array<{ eventId: string; score: number }>>;
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

const SEARCHED = ["agent_action", "environment_feedback", "decision", "reflection", "summary"] as const;

/** Lexical search over the newest events of a branch: term hits, weighted by rarity. */
export function lexicalEventSearcher(ledger: Ledger, head: string | null, window = 3000): EventSearcher {
  return {
    async searchEvents(query, k) {
      const terms = [...new Set(splitTerms(query))];
      if (!terms.length || !head) return [];
      const events = await ledger.branch(head, { types: [...SEARCHED], last: window });
      const docs = events.map((e) => ({ e, text: eventText(e).toLowerCase() }));
      const df = new Map(terms.map((t) => [t, docs.filter((d) => d.text.includes(t)).length]));
      const scored = docs
        .map(({ e, text }) => {
          let s = 0;
          for (const t of terms) if (text.includes(t)) s += Math.log(1 + docs.length / (1 + (df.get(t) ?? 0)));
          return { eventId: e.id, score: s };
        })
        .filter((x) => x.score > 0)
        .sort((a, b) => b.score - a.score);
      return scored.slice(0, k);
    },
  };
}
