import { describe, expect, it } from "vitest";
import {
  fuseFiles,
  isTestPath,
  lendByCoChange,
  rankCode,
  rankEvents,
  type ChunkRange,
  type CodeSourceHits,
  type RankCodeInput,
} from "../../src/retrieval/ranking.js";

// The ranking is pure: these tests hand it source hits and a table of stored chunks, no index, no files.

/** Stored chunks of a small workspace. */
const CHUNKS: Record<string, ChunkRange[]> = {
  "src/auth.ts": [
    { path: "src/auth.ts", startLine: 1, endLine: 20, symbols: ["login"] },
    { path: "src/auth.ts", startLine: 21, endLine: 40, symbols: ["logout"] },
    { path: "src/auth.ts", startLine: 41, endLine: 60, symbols: ["refresh"] },
    { path: "src/auth.ts", startLine: 61, endLine: 80, symbols: ["revoke"] },
  ],
  "src/session.ts": [{ path: "src/session.ts", startLine: 1, endLine: 30, symbols: ["Session"] }],
  "src/auth.test.ts": [{ path: "src/auth.test.ts", startLine: 1, endLine: 25, symbols: [] }],
  "src/a.ts": [{ path: "src/a.ts", startLine: 1, endLine: 10, symbols: ["alpha"] }],
  "src/b.ts": [{ path: "src/b.ts", startLine: 1, endLine: 10, symbols: ["beta"] }],
  "docs/auth.md": [{ path: "docs/auth.md", startLine: 1, endLine: 12, symbols: [] }],
  "lib/token.ts": [
    { path: "lib/token.ts", startLine: 1, endLine: 5, symbols: [] },
    { path: "lib/token.ts", startLine: 6, endLine: 15, symbols: ["Token"] },
  ],
};

const chunk = (p: string, i: number, score: number) => ({ ...CHUNKS[p]![i]!, score });
const none: CodeSourceHits = { bm25: [], paths: [], symbols: [], vectors: [], history: [] };

function rank(hits: Partial<CodeSourceHits>, extra: Partial<RankCodeInput> = {}) {
  const asked: string[] = [];
  const out = rankCode({
    ...none,
    ...hits,
    k: 10,
    historyWeight: 1,
    chunksOf: (p) => {
      asked.push(p);
      return CHUNKS[p] ?? [];
    },
    ...extra,
  });
  return { out, asked };
}

describe("rankCode: fusion with provenance", () => {
  it("fuses lexical, symbol, vector, path and history hits on a file and keeps every source's own score", () => {
    const { out } = rank({
      bm25: [chunk("src/auth.ts", 0, 7.25), chunk("src/session.ts", 0, 3.5)],
      symbols: [{ path: "src/auth.ts", startLine: 2, score: 4.125 }],
      vectors: [
        { path: "src/auth.ts", startLine: 1, endLine: 20, score: 0.8125 },
        { path: "src/session.ts", startLine: 1, endLine: 30, score: 0.5 },
      ],
      paths: [{ path: "src/auth.ts", score: 2.5 }],
      history: [{ path: "src/auth.ts", score: 9, commits: ["fix login redirect", "auth: refresh tokens"] }],
    });
    expect(out.map((h) => `${h.path}:${h.startLine}-${h.endLine}`)).toEqual(["src/auth.ts:1-20", "src/session.ts:1-30"]);
    const [auth, session] = out;
    // Five lists rank the file first (5/61); its only chunk found is its best one (scale 1).
    expect(auth!.score).toBe(Math.round((5 / 61) * 60 * 10_000) / 10_000);
    expect(auth!.sources).toEqual({ bm25: 7.25, symbol: 4.125, vector: 0.8125, path: 2.5, history: ["fix login redirect", "auth: refresh tokens"] });
    expect(auth!.symbols).toEqual(["login"]);
    expect(session!.sources).toEqual({ bm25: 3.5, vector: 0.5 });
    expect(session!.score).toBe(Math.round((2 / 62) * 60 * 10_000) / 10_000);
  });

  it("maps a symbol to the chunk that holds its line (or the next one), and drops vectors of ranges that no longer exist", () => {
    const { out } = rank({
      symbols: [{ path: "src/auth.ts", startLine: 45, score: 3 }],
      // Indexed before an edit: lines 1-18 are no longer a chunk of src/auth.ts.
      vectors: [{ path: "src/auth.ts", startLine: 1, endLine: 18, score: 0.9 }],
    });
    expect(out).toEqual([{ path: "src/auth.ts", startLine: 41, endLine: 60, score: 0.9836, sources: { symbol: 3 }, symbols: ["refresh"] }]);
  });

  it("lets a file found only by its path or its history stand with its first chunk", () => {
    const { out } = rank({
      paths: [{ path: "lib/token.ts", score: 1.5 }],
      history: [{ path: "docs/auth.md", score: 2, commits: ["docs: explain the auth flow"] }],
    });
    expect(out).toEqual([
      // Equal fused scores (each first in its list): the path decides.
      { path: "docs/auth.md", startLine: 1, endLine: 12, score: 0.9836, sources: { history: ["docs: explain the auth flow"] }, symbols: [] },
      { path: "lib/token.ts", startLine: 1, endLine: 5, score: 0.9836, sources: { path: 1.5 }, symbols: [] },
    ]);
  });

  it("weighs the history list by historyWeight", () => {
    const hits = { paths: [{ path: "lib/token.ts", score: 1.5 }], history: [{ path: "docs/auth.md", score: 2, commits: ["c"] }] };
    expect(rank(hits, { historyWeight: 0.5 }).out.map((h) => h.path)).toEqual(["lib/token.ts", "docs/auth.md"]);
    expect(rank(hits, { historyWeight: 0.5 }).out[1]!.score).toBe(Math.round((0.5 / 61) * 60 * 10_000) / 10_000);
  });

  it("scales a file's other chunks by how they compare with its best one, and shows at most three of a file", () => {
    const { out } = rank({ bm25: [0, 1, 2, 3].map((i) => chunk("src/auth.ts", i, 10 - i)), symbols: [{ path: "src/auth.ts", startLine: 30, score: 1 }] });
    expect(out.map((h) => h.startLine)).toEqual([21, 1, 41]);
    // Chunk 21-40 is second for bm25 (1/62) and first for symbols (1/61): the file's best chunk. The
    // file is first in both lists (2/61); each chunk gets that times its share of the best chunk's score.
    const best = 1 / 62 + 1 / 61;
    const file = 1 / 61 + 1 / 61;
    const scaled = (chunkScore: number) => Math.round(file * (chunkScore / best) * 60 * 10_000) / 10_000;
    expect(out.map((h) => h.score)).toEqual([scaled(best), scaled(1 / 61), scaled(1 / 63)]);
    expect(out[0]!.sources).toEqual({ bm25: 9, symbol: 1 });
  });

  it("damps test files below the code they test", () => {
    const { out } = rank({ bm25: [chunk("src/auth.test.ts", 0, 9), chunk("src/auth.ts", 0, 8)] });
    expect(out.map((h) => h.path)).toEqual(["src/auth.ts", "src/auth.test.ts"]);
    expect(isTestPath("src/auth.test.ts") && isTestPath("tests/test_x.py") && !isTestPath("src/testing.ts")).toBe(true);
  });

  it("breaks ties by path and range, whatever the order of the lists, and returns the same output every time", () => {
    // a.ts is first for bm25, b.ts first for vectors: equal fused scores.
    const one = rank({ bm25: [chunk("src/b.ts", 0, 5)], vectors: [{ path: "src/a.ts", startLine: 1, endLine: 10, score: 0.7 }] }).out;
    const two = rank({ bm25: [chunk("src/a.ts", 0, 5)], vectors: [{ path: "src/b.ts", startLine: 1, endLine: 10, score: 0.7 }] }).out;
    expect(one.map((h) => h.path)).toEqual(["src/a.ts", "src/b.ts"]);
    expect(two.map((h) => h.path)).toEqual(["src/a.ts", "src/b.ts"]);
    expect(one[0]!.score).toBe(one[1]!.score);
    const again = rank({ bm25: [chunk("src/b.ts", 0, 5)], vectors: [{ path: "src/a.ts", startLine: 1, endLine: 10, score: 0.7 }] }).out;
    expect(again).toEqual(one);
  });

  it("keeps k results and looks up each file's chunks at most once", () => {
    const { out, asked } = rank(
      {
        symbols: [
          { path: "lib/token.ts", startLine: 7, score: 2 },
          { path: "lib/token.ts", startLine: 2, score: 1 },
        ],
        vectors: [{ path: "lib/token.ts", startLine: 6, endLine: 15, score: 0.6 }],
        paths: [
          { path: "lib/token.ts", score: 1 },
          { path: "src/session.ts", score: 0.5 },
        ],
      },
      { k: 2 },
    );
    expect(out).toHaveLength(2);
    expect(asked.sort()).toEqual(["lib/token.ts", "src/session.ts"]);
  });

  it("returns nothing for no hits", () => {
    expect(rank({}).out).toEqual([]);
  });
});

describe("rankCode: history options (re-weighting, strength, re-ranking, co-change)", () => {
  const history = [
    { path: "docs/auth.md", score: 8, commits: ["docs: auth flow"] },
    { path: "src/session.ts", score: 2, commits: ["session: expiry"] },
  ];

  it("multiplies a history vote by (score / best)^historyScoreExponent, so a weak match moves less than its rank says", () => {
    const flat = fuseFiles([], history, 1, undefined, 0);
    expect(flat.map((f) => [f.key, f.score])).toEqual([
      ["docs/auth.md", 1 / 61],
      ["src/session.ts", 1 / 62],
    ]);
    const byStrength = fuseFiles([], history, 1, undefined, 0.5);
    // (2/8)^0.5 = 0.5
    expect(byStrength.map((f) => [f.key, f.score])).toEqual([
      ["docs/auth.md", 1 / 61],
      ["src/session.ts", 0.5 / 62],
    ]);
    expect(byStrength[0]!.sources).toEqual({ history: 8 });
  });

  it("as a re-ranker (historyRerankTop) gives votes only to the other sources' best files, and ranks among those", () => {
    const lists = [
      {
        source: "bm25" as const,
        items: [
          { key: "src/session.ts", score: 3 },
          { key: "src/a.ts", score: 1 },
        ],
      },
    ];
    const out = fuseFiles(lists, history, 1, 1, 0);
    // docs/auth.md is not a candidate: no vote; session.ts is then the first history file (1/61).
    expect(out.map((f) => [f.key, f.score])).toEqual([
      ["src/session.ts", 1 / 61 + 1 / 61],
      ["src/a.ts", 1 / 62],
    ]);
  });

  it("weights the other sources' lists by `weights`", () => {
    const hits = { bm25: [chunk("src/a.ts", 0, 5)], paths: [{ path: "src/b.ts", score: 1 }] };
    expect(rank(hits).out.map((h) => h.path)).toEqual(["src/a.ts", "src/b.ts"]); // a tie, broken by path
    expect(rank(hits, { weights: { bm25: 0.5 } }).out.map((h) => h.path)).toEqual(["src/b.ts", "src/a.ts"]);
    expect(rank(hits, { weights: { path: 2 } }).out[0]!.score).toBe(Math.round((2 / 61) * 60 * 10_000) / 10_000);
  });

  it("lends a share of the best files' fused scores to their co-change neighbours, from the scores before lending", () => {
    const fused = [
      { key: "src/auth.ts", score: 0.03, sources: {} },
      { key: "src/a.ts", score: 0.02, sources: {} },
      { key: "src/b.ts", score: 0.01, sources: {} },
    ];
    const asked: string[] = [];
    const neighbours = (p: string) => {
      asked.push(p);
      return p === "src/auth.ts"
        ? [
            { path: "src/session.ts", share: 0.5 },
            { path: "src/b.ts", share: 1 },
          ]
        : p === "src/a.ts"
          ? [{ path: "src/session.ts", share: 0.25 }]
          : [];
    };
    const lenders = lendByCoChange(fused, neighbours, 2, 0.2);
    expect(asked).toEqual(["src/auth.ts", "src/a.ts"]); // only the top 2 lend
    const score = Object.fromEntries(fused.map((f) => [f.key, f.score]));
    expect(score["src/session.ts"]).toBeCloseTo(0.2 * 0.03 * 0.5 + 0.2 * 0.02 * 0.25, 12);
    expect(score["src/b.ts"]).toBeCloseTo(0.01 + 0.2 * 0.03, 12);
    expect(fused.map((f) => f.key)).toEqual(["src/auth.ts", "src/a.ts", "src/b.ts", "src/session.ts"]);
    expect(lenders.get("src/session.ts")).toEqual(["src/auth.ts", "src/a.ts"]);
  });

  it("brings in a neighbour found by no source, standing with its first chunk and saying what it changes with", () => {
    const { out } = rank(
      { bm25: [chunk("src/auth.ts", 0, 9)] },
      { cochange: (p) => (p === "src/auth.ts" ? [{ path: "src/session.ts", share: 1 }] : []), cochangeTop: 3, cochangeShare: 0.5 },
    );
    expect(out.map((h) => h.path)).toEqual(["src/auth.ts", "src/session.ts"]);
    expect(out[1]!.sources).toEqual({ history: ["changes with src/auth.ts"] });
    expect(out[1]!.score).toBe(Math.round(0.5 * (1 / 61) * 60 * 10_000) / 10_000);
    // Without cochangeTop nothing is lent.
    expect(rank({ bm25: [chunk("src/auth.ts", 0, 9)] }, { cochange: () => [{ path: "src/session.ts", share: 1 }], cochangeShare: 0.5 }).out).toHaveLength(1);
  });
});

describe("rankEvents", () => {
  it("fuses lexical and vector hits of the events `keep` accepts, with their scores", () => {
    const out = rankEvents(
      {
        bm25: [
          { eventId: "e2", threadId: "t1", seq: 2, score: 4 },
          { eventId: "e9", threadId: "t2", seq: 9, score: 8 },
          { eventId: "e1", threadId: "t1", seq: 1, score: 2 },
        ],
        vectors: [
          { eventId: "e1", threadId: "t1", seq: 1, score: 0.75 },
          { eventId: "e3", threadId: "t1", seq: 3, score: 0.5 },
        ],
      },
      10,
      (id, thread) => thread === "t1" && id !== "e3",
    );
    // e9 is of another thread and e3 is off the branch; e1 is second then first, e2 first only.
    expect(out).toEqual([
      { eventId: "e1", score: Math.round((1 / 62 + 1 / 61) * 60 * 10_000) / 10_000, sources: { bm25: 2, vector: 0.75 } },
      { eventId: "e2", score: 0.9836, sources: { bm25: 4 } },
    ]);
    expect(rankEvents({ bm25: [], vectors: [] }, 5, () => true)).toEqual([]);
  });

  it("orders equal scores by seq, whatever the ids and the order the sources returned them in", () => {
    // Two events each first in one source and second in the other fuse to the same score; two more
    // tie inside a source. Ids are random in a real run: here the older event has the larger id.
    const hits = (ids: [string, string, string, string]) => ({
      bm25: [
        { eventId: ids[0], threadId: "t", seq: 7, score: 3 },
        { eventId: ids[1], threadId: "t", seq: 19, score: 2 },
        { eventId: ids[3], threadId: "t", seq: 30, score: 1 },
        { eventId: ids[2], threadId: "t", seq: 25, score: 1 },
      ],
      vectors: [
        { eventId: ids[1], threadId: "t", seq: 19, score: 0.9 },
        { eventId: ids[0], threadId: "t", seq: 7, score: 0.8 },
      ],
    });
    const seqs = (ids: [string, string, string, string], reverse: boolean) => {
      const h = hits(ids);
      if (reverse) h.bm25.reverse();
      const bySeq = new Map(h.bm25.map((e) => [e.eventId, e.seq]));
      return rankEvents(h, 10, () => true).map((r) => bySeq.get(r.eventId));
    };
    expect(seqs(["z7", "a19", "m25", "b30"], false)).toEqual([7, 19, 25, 30]);
    expect(seqs(["a7", "z19", "b25", "a30"], true)).toEqual([7, 19, 25, 30]);
  });
});
