import { confined } from "../workspace/confined.js";
import type { CodeSearcher, SearchHit } from "./port.js";
import { identifierParts } from "./tokens.js";
import { walkFiles } from "../workspace/files.js";

const MAX_FILE_BYTES = 1024 * 1024;
const WINDOW = 12;

/** Splits identifiers and words into lower-case terms of 2+ chars: `UserRole`, `user_role`, `userRoles.ts` → user, role(s). */
export function splitTerms(text: string): string[] {
  return identifierParts(text).filter((p) => p.length >= 2);
}

/**
 * A plain lexical searcher: scores files by query-term hits in the path and in windows of lines.
 * The hybrid retriever replaces it; it remains the fallback when no index exists.
 */
export function createLexicalSearcher(workspace: string): CodeSearcher {
  return {
    async search(query, k) {
      const terms = [...new Set(splitTerms(query))];
      if (terms.length === 0) return [];
      const { files } = await walkFiles(workspace, { limit: 20_000 });
      const hits: SearchHit[] = [];
      const ws = confined(workspace);
      for (const rel of files) {
        let buf: Buffer;
        try {
          buf = ws.readFile(rel, { maxBytes: MAX_FILE_BYTES });
        } catch {
          continue; // vanished or unreadable: not worth failing a search for
        }
        if (buf.subarray(0, 4096).includes(0)) continue;
        const pathTerms = new Set(splitTerms(rel));
        const pathScore = terms.filter((t) => [...pathTerms].some((p) => p.startsWith(t))).length * 2;
        const lines = buf.toString("utf8").split("\n");
        const lineHits = lines.map((l) => {
          const lower = l.toLowerCase();
          let n = 0;
          for (const t of terms) if (lower.includes(t)) n++;
          return n;
        });
        // Best window: most distinct term hits within WINDOW lines.
        let best = 0;
        let bestAt = 0;
        let sum = 0;
        for (let i = 0; i < lines.length; i++) {
          sum += lineHits[i]!;
          if (i >= WINDOW) sum -= lineHits[i - WINDOW]!;
          if (sum > best) {
            best = sum;
            bestAt = Math.max(0, i - WINDOW + 1);
          }
        }
        const score = best + pathScore;
        if (score === 0) continue;
        const start = bestAt;
        const end = Math.min(lines.length, start + WINDOW);
        const firstHit = lineHits.slice(start, end).findIndex((n) => n > 0);
        const previewFrom = start + Math.max(0, firstHit);
        hits.push({
          path: rel,
          startLine: start + 1,
          endLine: end,
          score,
          preview: lines
            .slice(previewFrom, Math.min(end, previewFrom + 4))
            .map((l, i) => `${previewFrom + i + 1}| ${l.slice(0, 160)}`)
            .join("\n"),
        });
      }
      hits.sort((a, b) => b.score - a.score || a.path.localeCompare(b.path));
      return hits.slice(0, k);
    },
  };
}
