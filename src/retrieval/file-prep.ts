// Reading one workspace file for the index: size and binary checks, change detection by size/mtime
// then content hash, decoding, secret redaction that keeps line numbers, symbols and chunks.
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { errorMessage } from "../errors.js";
import { confined } from "../workspace/confined.js";
import type { CodeSymbol } from "../symbols/extract.js";
import type { ChunkInput, FileRecord, FileStamp, SymbolInput } from "./ngram-index.js";
import { MAX_FILE_BYTES, type IndexReport, type SkipCounts } from "./retriever-types.js";

const BINARY_SNIFF_BYTES = 8192;

/** A file read and parsed, ready to be stored. */
export interface PreparedFile {
  rel: string;
  hash: string;
  size: number;
  mtimeMs: number;
  lang: string | null;
  lines: string[];
  chunks: ChunkInput[];
  symbols: SymbolInput[];
}

export interface PrepareContext {
  workspace: string;
  redact?: (text: string) => string;
  warnOnce: (key: string, message: string) => void;
  /** Records that a file's size/mtime changed while its content did not. */
  touch: (rel: string, size: number, mtimeMs: number) => void;
}

/**
 * Secrets in workspace files (a token in .env) must not end up in the index or in a preview. A
 * redaction that spans lines (a PEM block) would shift line numbers, so it is then done per line.
 */
export function redactKeepingLines(text: string, redact: ((text: string) => string) | undefined): string {
  if (!redact) return text;
  const whole = redact(text);
  if (whole === text || whole.split("\n").length === text.split("\n").length) return whole;
  return text
    .split("\n")
    .map((l) => redact(l))
    .join("\n");
}

/** UTF-8, or Latin-1 when the bytes are not valid UTF-8 (every byte maps to a character, so ASCII words stay searchable); no BOM. */
function decode(buf: Buffer): { text: string; valid: boolean } {
  let text: string;
  let valid = true;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(buf);
  } catch {
    text = buf.toString("latin1");
    valid = false;
  }
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  return { text, valid };
}

function splitLines(text: string): string[] {
  return text.split("\n").map((l) => (l.endsWith("\r") ? l.slice(0, -1) : l));
}

function sha256(buf: Buffer): string {
  return createHash("sha256").update(buf).digest("hex");
}

let parsingModules: Promise<[typeof import("../symbols/extract.js"), typeof import("../symbols/languages.js"), typeof import("./chunker.js")]> | undefined;

/** The symbol extractor and chunker, imported on first use: a search over an unchanged workspace never parses. */
function parsing() {
  parsingModules ??= Promise.all([import("../symbols/extract.js"), import("../symbols/languages.js"), import("./chunker.js")]);
  return parsingModules;
}

/**
 * Reads and parses one file when it changed. Returns the prepared file, null when there is nothing
 * to store (unchanged, or skipped and never indexed), or "remove" when a stored file must go.
 */
export async function prepareFile(
  ctx: PrepareContext,
  rel: string,
  stored: FileRecord | undefined,
  report: IndexReport,
): Promise<PreparedFile | null | "remove"> {
  // The common case on a search is a file that did not change: a plain lstat of a regular file tells
  // (~25x cheaper than the confined stat, which opens every path component). It only decides that
  // nothing is read; whatever is read goes through the confined reader below.
  if (stored && unchangedRegularFile(path.join(ctx.workspace, rel), stored)) {
    report.unchanged++;
    return null;
  }
  // Through the confined reader: a file swapped for a link to a host file is never indexed.
  const ws = confined(ctx.workspace);
  let st: fs.Stats;
  try {
    st = ws.stat(rel);
  } catch (err) {
    return skip(stored, report, (err as NodeJS.ErrnoException).code === "ENOENT" ? "vanished" : "unreadable");
  }
  if (!st.isFile()) return skip(stored, report, "vanished");
  if (st.size > MAX_FILE_BYTES) return skip(stored, report, "huge");
  if (stored && stored.size === st.size && stored.mtimeMs === st.mtimeMs) {
    report.unchanged++;
    return null;
  }
  let buf: Buffer;
  try {
    buf = ws.readFile(rel, { maxBytes: MAX_FILE_BYTES });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "FILE_TOO_LARGE") return skip(stored, report, "huge");
    return skip(stored, report, code === "ENOENT" ? "vanished" : "unreadable");
  }
  if (buf.length > MAX_FILE_BYTES) return skip(stored, report, "huge");
  if (buf.subarray(0, BINARY_SNIFF_BYTES).includes(0)) return skip(stored, report, "binary");
  const hash = sha256(buf);
  if (stored && stored.hash === hash) {
    ctx.touch(rel, st.size, st.mtimeMs);
    report.unchanged++;
    return null;
  }
  const decoded = decode(buf);
  if (!decoded.valid) {
    report.invalidUtf8.count++;
    if (report.invalidUtf8.paths.length < 10) report.invalidUtf8.paths.push(rel);
  }
  const text = redactKeepingLines(decoded.text, ctx.redact);
  const lines = splitLines(text);
  if (lines.length > 1 && lines[lines.length - 1] === "") lines.pop();
  const [{ extractSymbols }, { languageOf }, { chunkLines }] = await parsing();
  let symbols: CodeSymbol[] = [];
  try {
    symbols = await extractSymbols(text, rel);
  } catch (err) {
    // A grammar that chokes on one file must not stop the index: the file is chunked by lines.
    ctx.warnOnce(`parse:${languageOf(rel)}`, `symbols of ${rel} could not be extracted (${errorMessage(err)}); indexing it by lines`);
  }
  let ranges;
  try {
    ranges = chunkLines(lines, symbols);
  } catch (err) {
    ctx.warnOnce(`chunk:${rel}`, `chunking ${rel} along its symbols failed (${errorMessage(err)}); chunking it by lines`);
    ranges = chunkLines(lines, []);
  }
  const chunks = ranges.map((c) => ({ ...c, text: lines.slice(c.startLine - 1, c.endLine).join("\n") }));
  return {
    rel,
    hash,
    size: st.size,
    mtimeMs: st.mtimeMs,
    lang: languageOf(rel),
    lines,
    chunks,
    symbols: symbols.map((s) => ({ name: s.name, kind: s.kind, container: s.container, startLine: s.startLine, endLine: s.endLine })),
  };
}

/** True when `abs` is a regular file (not a link) with the size and mtime the index recorded for it. */
export function unchangedRegularFile(abs: string, stored: FileStamp): boolean {
  const st = fs.lstatSync(abs, { throwIfNoEntry: false });
  return st !== undefined && st.isFile() && st.size === stored.size && st.mtimeMs === stored.mtimeMs;
}

function skip(stored: FileRecord | undefined, report: IndexReport, why: keyof SkipCounts): null | "remove" {
  report.skipped[why]++;
  return stored ? "remove" : null;
}

/**
 * A file's lines when its content still has this hash; null when it changed or is gone. Redacted
 * (line numbers kept) when given a redactor: these lines are what an embeddings endpoint receives.
 */
export function readLinesIfHash(workspace: string, rel: string, hash: string, redact?: (text: string) => string): string[] | null {
  let buf: Buffer;
  try {
    buf = confined(workspace).readFile(rel);
  } catch {
    return null;
  }
  if (sha256(buf) !== hash) return null;
  return splitLines(redactKeepingLines(decode(buf).text, redact));
}
