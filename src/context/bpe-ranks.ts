import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { packageRoot } from "../package-root.js";

// gpt-tokenizer ships each encoding's byte-pair ranks as a JavaScript module (o200k: 2.4 MB of
// array literals). Importing it means compiling and running that module on the main thread, about
// half a second of a run's start on our machines. The same array as JSON parses several times
// faster, so the build writes it once (scripts/bpe-ranks.mjs, into dist/tokenizer/) and a run
// reads that. The JSON names the gpt-tokenizer version it came from: a different installed version
// (an override, a newer install) is read from the module as before. The ranks are the same array
// either way, so every count is the same.

export type Encoding = "o200k_base" | "cl100k_base";
/** One rank: a token's text, or its bytes when they are not valid UTF-8. */
export type Rank = string | number[];

export interface PreparedRanks {
  tokenizer: string;
  encoding: Encoding;
  ranks: Rank[];
}

const require = createRequire(import.meta.url);

/** The installed gpt-tokenizer, as `name@version`. */
export function tokenizerVersion(): string {
  const pkg = JSON.parse(fs.readFileSync(require.resolve("gpt-tokenizer/package.json"), "utf8")) as { name: string; version: string };
  return `${pkg.name}@${pkg.version}`;
}

/** Where the build writes an encoding's ranks as JSON. */
export function preparedRanksFile(encoding: Encoding, root = packageRoot()): string {
  return path.join(root, "dist", "tokenizer", `${encoding}.json`);
}

/** The prepared ranks, when the build wrote them for the installed gpt-tokenizer; else undefined. */
export function readPreparedRanks(encoding: Encoding, file = preparedRanksFile(encoding)): Rank[] | undefined {
  let prepared: PreparedRanks;
  try {
    prepared = JSON.parse(fs.readFileSync(file, "utf8")) as PreparedRanks;
  } catch {
    return undefined; // not built (a checkout run from its sources), or unreadable: the module has them
  }
  if (prepared.tokenizer !== tokenizerVersion() || prepared.encoding !== encoding || !Array.isArray(prepared.ranks)) return undefined;
  return prepared.ranks;
}

/** The ranks from gpt-tokenizer's own module. */
export async function moduleRanks(encoding: Encoding): Promise<Rank[]> {
  const mod = (encoding === "cl100k_base"
    ? await import("gpt-tokenizer/bpeRanks/cl100k_base")
    : await import("gpt-tokenizer/bpeRanks/o200k_base")) as unknown as { default: Rank[] };
  return mod.default;
}

/** An encoding's ranks: prepared by the build when it matches the installed gpt-tokenizer, else from the module. */
export async function loadRanks(encoding: Encoding): Promise<{ ranks: Rank[]; source: "prepared" | "module" }> {
  const prepared = readPreparedRanks(encoding);
  return prepared ? { ranks: prepared, source: "prepared" } : { ranks: await moduleRanks(encoding), source: "module" };
}

/** Writes the ranks of the installed gpt-tokenizer where {@link readPreparedRanks} reads them (run by the build). */
export async function writePreparedRanks(encoding: Encoding, file = preparedRanksFile(encoding)): Promise<void> {
  const prepared: PreparedRanks = { tokenizer: tokenizerVersion(), encoding, ranks: await moduleRanks(encoding) };
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(`${file}.tmp`, JSON.stringify(prepared));
  fs.renameSync(`${file}.tmp`, file);
}
