import { identifierParts, stem, STOPWORDS } from "../tokens.js";
import type { Embedder } from "./port.js";

/** Options of {@link createHashedEmbedder}. */
export interface HashedEmbedderOptions {
  /** Vector length (default 384). More dimensions mean fewer hash collisions and a bigger index. */
  dimensions?: number;
}

// Language keywords and ubiquitous names: present in nearly every chunk, so they say little about it.
const COMMON = new Set(
  (
    "function return const let var if else for while do switch case break continue import export from default " +
    "class extends implements interface type enum new this self super true false null undefined none void " +
    "async await yield try catch finally throw raise def pass lambda with as in is not and or elif except " +
    "public private protected static readonly abstract string number boolean any unknown object str int float " +
    "bool dict list tuple set get value values key keys item items data result results args kwargs options opts " +
    "err error index name test it describe expect assert"
  ).split(" "),
);

const WORD = /[A-Za-z_$][A-Za-z0-9_$]*|[0-9]+/g;
const MAX_CHARS = 200_000;

/**
 * The default embedder: no model, no download, fully offline and deterministic. A text becomes a
 * bag of weighted features — identifier parts (stemmed, so `parsing` meets `parser`), whole compound
 * identifiers, and character trigrams of each part (so `auth` is near `authentication` and typos
 * still overlap) — each with a sub-linear term frequency, language keywords and stop words damped;
 * the features are hashed with a sign bit into a dense vector and L2-normalised. Cosine similarity of
 * two such vectors approximates weighted overlap of their vocabulary: it is lexical, not semantic
 * (`remove` is not near `delete`), but tolerant of identifier style, inflection and partial words.
 */
export function createHashedEmbedder(opts: HashedEmbedderOptions = {}): Embedder {
  const dimensions = opts.dimensions ?? 384;
  if (!Number.isInteger(dimensions) || dimensions < 16) throw new RangeError(`dimensions must be an integer >= 16, got ${dimensions}`);
  const embed = (text: string) => hashedVector(text, dimensions);
  return {
    id: `hashed-v1-${dimensions}`,
    dimensions,
    async embedDocuments(texts) {
      return texts.map(embed);
    },
    async embedQuery(text) {
      return embed(text);
    },
  };
}

/** The feature bag of a text, weights before hashing (exported for tests and diagnostics). */
export function hashedFeatures(text: string): Map<string, number> {
  const tf = new Map<string, number>();
  const add = (f: string, w: number) => tf.set(f, (tf.get(f) ?? 0) + w);
  for (const m of text.slice(0, MAX_CHARS).matchAll(WORD)) {
    const word = m[0];
    if (word.length > 64) continue;
    const parts = identifierParts(word);
    if (parts.length === 0) continue;
    if (parts.length > 1) add(`i:${parts.join("")}`, 1);
    for (const p of parts) {
      if (p.length < 2 || /^[0-9]+$/.test(p)) continue;
      const damp = STOPWORDS.has(p) || COMMON.has(p) ? 0.15 : 1;
      add(`w:${stem(p)}`, damp);
      if (p.length >= 4 && damp === 1) {
        const padded = `^${p}$`;
        const n = padded.length - 2;
        // A part's trigrams together weigh about as much as the part itself, whatever its length.
        for (let i = 0; i < n; i++) add(`g:${padded.slice(i, i + 3)}`, 1 / Math.sqrt(n));
      }
    }
  }
  const weights = new Map<string, number>();
  for (const [f, count] of tf) {
    const kind = f[0];
    const base = kind === "w" ? 1 : kind === "i" ? 0.8 : 0.35;
    weights.set(f, base * (1 + Math.log(1 + count)));
  }
  return weights;
}

function hashedVector(text: string, dimensions: number): number[] {
  const v = new Float64Array(dimensions);
  for (const [f, w] of hashedFeatures(text)) {
    const h = fnv1a(f);
    // One bit picks the sign, so collisions cancel out on average instead of piling up.
    v[h % dimensions]! += h & 0x80000000 ? -w : w;
  }
  let norm = 0;
  for (let i = 0; i < dimensions; i++) norm += v[i]! * v[i]!;
  norm = Math.sqrt(norm);
  const out = new Array<number>(dimensions);
  // Rounded to 6 decimals: the vectors travel to Chroma as JSON, and 17-digit floats triple its size.
  for (let i = 0; i < dimensions; i++) out[i] = norm === 0 ? 0 : Math.round((v[i]! / norm) * 1e6) / 1e6;
  return out;
}

/** 32-bit FNV-1a over UTF-16 code units. */
function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}
