import type { CodeSymbol } from "../symbols/extract.js";

/** A range of a file that is indexed and returned as one unit; lines are 1-based and inclusive. */
export interface Chunk {
  startLine: number;
  endLine: number;
  /** Names of the symbols that start inside the chunk, outermost first. */
  symbols: string[];
}

/** Chunk sizes in lines: pieces are merged up to `target`, and nothing grows past `max`. */
export interface ChunkOptions {
  target?: number;
  max?: number;
}

const TARGET = 60;
const MAX = 80;

interface Segment {
  start: number;
  end: number;
}

/**
 * Cuts a file into chunks of about 40–80 lines that follow its declarations: a function or class
 * stays whole when it fits, a big class is cut between its methods, small neighbours are merged, and
 * files without symbols are cut at blank lines.
 */
export function chunkLines(lines: string[], symbols: CodeSymbol[], opts: ChunkOptions = {}): Chunk[] {
  const target = opts.target ?? TARGET;
  const max = Math.max(opts.max ?? MAX, target);
  const n = lines.length;
  if (n === 0) return [];
  const blank = (i: number) => (lines[i - 1] ?? "").trim() === "";

  // 1. Segments: each top-level declaration (with the comments right above it) and the gaps between.
  const tops = topLevel(symbols);
  const segments: Segment[] = [];
  let cursor = 1;
  for (const s of tops) {
    let start = Math.max(s.startLine, cursor);
    while (start > cursor && isCommentLine(lines[start - 2] ?? "")) start--;
    if (start > cursor) segments.push({ start: cursor, end: start - 1 });
    const end = Math.min(Math.max(s.endLine, start), n);
    segments.push(...splitSegment({ start, end }, s.startLine, symbols, max, target, blank, lines));
    cursor = end + 1;
  }
  if (cursor <= n) segments.push(...splitByLines({ start: cursor, end: n }, max, target, blank));

  // 2. Gaps may be huge too (a long script body); cut those as plain lines.
  const bounded = segments.flatMap((seg) => (seg.end - seg.start + 1 > max ? splitByLines(seg, max, target, blank) : [seg]));

  // 3. Merge neighbours up to the target size; blank-only pieces ride along with the next one.
  const merged: Segment[] = [];
  for (const seg of bounded) {
    const last = merged[merged.length - 1];
    if (last && (last.end - last.start + 1 < target / 2 || seg.end - seg.start + 1 < target / 4) && seg.end - last.start + 1 <= max) {
      last.end = seg.end;
    } else merged.push({ ...seg });
  }
  // A trailing sliver is better attached to its predecessor when that still fits.
  if (merged.length >= 2) {
    const last = merged[merged.length - 1]!;
    const prev = merged[merged.length - 2]!;
    if (last.end - last.start + 1 < target / 4 && last.end - prev.start + 1 <= max) {
      prev.end = last.end;
      merged.pop();
    }
  }

  return merged
    .map((seg) => trimBlank(seg, blank))
    .filter((seg) => seg.start <= seg.end)
    .map((seg) => ({
      startLine: seg.start,
      endLine: seg.end,
      symbols: symbols.filter((s) => s.startLine >= seg.start && s.startLine <= seg.end).map((s) => s.name),
    }));
}

/** Symbols not nested in another symbol, in line order. */
function topLevel(symbols: CodeSymbol[]): CodeSymbol[] {
  const sorted = [...symbols].sort((a, b) => a.startLine - b.startLine || b.endLine - a.endLine);
  const out: CodeSymbol[] = [];
  let coveredTo = 0;
  for (const s of sorted) {
    if (s.startLine <= coveredTo) continue;
    out.push(s);
    coveredTo = s.endLine;
  }
  return out;
}

/** A declaration longer than `max` is cut between its members, or by lines when it has none. */
function splitSegment(
  seg: Segment,
  /** First line of the declaration itself (the segment may start earlier, at its comments). */
  ownStart: number,
  symbols: CodeSymbol[],
  max: number,
  target: number,
  blank: (i: number) => boolean,
  lines: string[],
): Segment[] {
  if (seg.end - seg.start + 1 <= max) return [seg];
  const inner = topLevel(symbols.filter((s) => s.startLine > ownStart && s.endLine <= seg.end));
  if (inner.length === 0) return splitByLines(seg, max, target, blank);
  const out: Segment[] = [];
  let cursor = seg.start;
  for (const s of inner) {
    let start = Math.max(s.startLine, cursor);
    // A member's doc comment and decorators go with it, not with the member before.
    while (start > cursor && isCommentLine(lines[start - 2] ?? "")) start--;
    if (start > cursor) out.push({ start: cursor, end: start - 1 });
    out.push(...splitSegment({ start, end: s.endLine }, s.startLine, symbols, max, target, blank, lines));
    cursor = s.endLine + 1;
  }
  if (cursor <= seg.end) out.push({ start: cursor, end: seg.end });
  return out;
}

/** Cuts a range into pieces of about `target` lines, preferring to cut after a blank line. */
function splitByLines(seg: Segment, max: number, target: number, blank: (i: number) => boolean): Segment[] {
  const out: Segment[] = [];
  let start = seg.start;
  while (seg.end - start + 1 > max) {
    let cut = start + target - 1;
    // Look for a blank line between 2/3 of the target and the maximum.
    for (let i = start + Math.floor((target * 2) / 3); i <= start + max - 1; i++) {
      if (blank(i)) {
        cut = i;
        break;
      }
    }
    out.push({ start, end: cut });
    start = cut + 1;
  }
  if (start <= seg.end) out.push({ start, end: seg.end });
  return out;
}

function trimBlank(seg: Segment, blank: (i: number) => boolean): Segment {
  let { start, end } = seg;
  while (start < end && blank(start)) start++;
  while (end > start && blank(end)) end--;
  return { start, end };
}

function isCommentLine(line: string): boolean {
  const t = line.trim();
  return t.startsWith("//") || t.startsWith("/*") || t.startsWith("*") || t.startsWith("#") || t.startsWith("@");
}
