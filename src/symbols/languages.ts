import { createRequire } from "node:module";
import path from "node:path";
import type { Language, Parser } from "web-tree-sitter";

/** Languages we have a tree-sitter grammar for. */
export type LanguageId = "typescript" | "tsx" | "python";

const BY_EXTENSION: Record<string, LanguageId> = {
  ".ts": "typescript",
  ".mts": "typescript",
  ".cts": "typescript",
  // The TSX grammar is a superset of JavaScript with JSX, so it serves plain JS too.
  ".tsx": "tsx",
  ".js": "tsx",
  ".jsx": "tsx",
  ".mjs": "tsx",
  ".cjs": "tsx",
  ".py": "python",
  ".pyi": "python",
};

const GRAMMAR: Record<LanguageId, { pkg: string; file: string }> = {
  typescript: { pkg: "tree-sitter-typescript", file: "tree-sitter-typescript.wasm" },
  tsx: { pkg: "tree-sitter-typescript", file: "tree-sitter-tsx.wasm" },
  python: { pkg: "tree-sitter-python", file: "tree-sitter-python.wasm" },
};

/** The grammar for a file path, or null when none applies (the file is still indexed, by lines). */
export function languageOf(file: string): LanguageId | null {
  // `.d.ts` is TypeScript too; path.extname gives ".ts" for it already.
  return BY_EXTENSION[path.extname(file).toLowerCase()] ?? null;
}

const require = createRequire(import.meta.url);
// The runtime (155 KB of JavaScript) loads with the first parse: a search whose files did not
// change parses nothing and should not pay for it.
let runtime: Promise<typeof import("web-tree-sitter")> | undefined;
const languages = new Map<LanguageId, Promise<Language>>();
const parsers = new Map<LanguageId, Parser>();

/** Path of the grammar's own .wasm file, shipped inside its npm package. */
export function grammarPath(id: LanguageId): string {
  const { pkg, file } = GRAMMAR[id];
  return path.join(path.dirname(require.resolve(`${pkg}/package.json`)), file);
}

/**
 * A parser for the language, loading the tree-sitter runtime and the grammar the first time only;
 * later calls in the same process reuse them.
 */
export async function parserFor(id: LanguageId): Promise<Parser> {
  const cached = parsers.get(id);
  if (cached) return cached;
  runtime ??= import("web-tree-sitter").then(async (ts) => (await ts.Parser.init(), ts));
  const { Language, Parser } = await runtime;
  let lang = languages.get(id);
  if (!lang) {
    lang = Language.load(grammarPath(id));
    languages.set(id, lang);
    // A failed load must not poison the cache for the rest of the process.
    lang.catch(() => languages.delete(id));
  }
  const language = await lang;
  let parser = parsers.get(id);
  if (!parser) {
    parser = new Parser();
    parser.setLanguage(language);
    parsers.set(id, parser);
  }
  return parser;
}
