import path from "node:path";
import ts from "typescript";

/**
 * The layout's rings, innermost first. A module may import from its own ring and the rings inside
 * it, never from an outer one:
 *
 *   core (src/*)  ←  tools/  ←  nodes/  ←  graphs/  ←  entry points (src/cli/, src/web/, src/api/, src/mcp-server/, src/index.ts)
 *
 * The entry points live under src/ but form the outer ring: they run graphs (the CLI drives the
 * graph, the package API re-exports it). Inside one ring anything goes.
 */
export const RINGS = ["core", "tools", "nodes", "graphs", "entry"] as const;
export type Ring = (typeof RINGS)[number];

/** Files of the outer ring that live under src/. */
const ENTRY = [/^src\/cli\//, /^src\/web\//, /^src\/api\//, /^src\/mcp-server\//, /^src\/index\.ts$/];

/** The ring of a repository-relative path (forward slashes), or null for a file outside the rings (tests, packages). */
export function ringOf(rel: string): Ring | null {
  if (ENTRY.some((re) => re.test(rel))) return "entry";
  if (rel.startsWith("src/")) return "core";
  if (rel.startsWith("tools/")) return "tools";
  if (rel.startsWith("nodes/")) return "nodes";
  if (rel.startsWith("graphs/")) return "graphs";
  return null;
}

export interface SourceFile {
  /** Repository-relative path with forward slashes, e.g. `src/runtime.ts`. */
  path: string;
  text: string;
}

export interface Violation {
  file: string;
  line: number;
  specifier: string;
  from: Ring;
  to: Ring;
}

/**
 * Every module specifier a file names: static imports (type-only ones too), `export … from`,
 * dynamic `import()` and `require()`, as TypeScript's own pre-processor finds them.
 */
export function importsOf(file: SourceFile): Array<{ specifier: string; line: number }> {
  const info = ts.preProcessFile(file.text, true, true);
  const lineOf = (pos: number) => file.text.slice(0, pos).split("\n").length;
  return info.importedFiles.map((f) => ({ specifier: f.fileName, line: lineOf(f.pos) }));
}

/** Imports that point outwards, against the rings. Package imports are not the layout's business. */
export function importViolations(files: SourceFile[]): Violation[] {
  const out: Violation[] = [];
  for (const file of files) {
    const from = ringOf(file.path);
    if (!from) continue;
    for (const { specifier, line } of importsOf(file)) {
      if (!specifier.startsWith(".")) continue;
      const target = path.posix.normalize(path.posix.join(path.posix.dirname(file.path), specifier));
      const to = ringOf(target);
      if (to && RINGS.indexOf(to) > RINGS.indexOf(from)) out.push({ file: file.path, line, specifier, from, to });
    }
  }
  return out;
}

/** One line per violation, for a failure message a reader can act on. */
export function describeViolation(v: Violation): string {
  return `${v.file}:${v.line} imports "${v.specifier}" (${v.from} → ${v.to}): the ${v.from} ring may not import from the ${v.to} ring`;
}
