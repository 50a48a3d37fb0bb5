import path from "node:path";
import ts from "typescript";

/**
 * The layout's rings, innermost first. A module may import from its own ring and the rings inside
 * it, never from an outer one:
 *
 *   core (src/*)  ←  src/agent/tools/  ←  src/agent/nodes/  ←  src/agent/ (the graph)
 *     ←  src/runs/ (the application layer) and src/inspect/ (the queries that return data)
 *     ←  src/eval/ (`ledgerloop eval`: runs tasks through runs/, scores them)
 *     ←  entry points (src/cli/, src/web/, src/api/, src/mcp-server/, src/index.ts)
 *
 * runs and inspect share a level and stay independent: neither imports the other, so what both
 * need (opening a state, say) sits in the core. Inside one ring anything goes; the core's own
 * folders are checked for cycles separately.
 */
export const RINGS = ["core", "tools", "nodes", "agent", "runs", "inspect", "eval", "entry"] as const;
export type Ring = (typeof RINGS)[number];

/** Each ring's level: a ring may import from lower levels only, and from itself. */
const LEVEL: Record<Ring, number> = { core: 0, tools: 1, nodes: 2, agent: 3, runs: 4, inspect: 4, eval: 5, entry: 6 };

/** Files of the outer ring. */
const ENTRY = [/^src\/cli\//, /^src\/web\//, /^src\/api\//, /^src\/mcp-server\//, /^src\/index\.ts$/];

/** The ring of a repository-relative path (forward slashes), or null for a file outside the rings (tests, packages). */
export function ringOf(rel: string): Ring | null {
  if (ENTRY.some((re) => re.test(rel))) return "entry";
  if (rel.startsWith("src/runs/")) return "runs";
  if (rel.startsWith("src/eval/")) return "eval";
  if (rel.startsWith("src/inspect/")) return "inspect";
  if (rel.startsWith("src/agent/tools/")) return "tools";
  if (rel.startsWith("src/agent/nodes/")) return "nodes";
  if (rel.startsWith("src/agent/")) return "agent";
  if (rel.startsWith("src/")) return "core";
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

/** Imports that point outwards, against the rings, or sideways into a sibling ring. Package imports are not the layout's business. */
export function importViolations(files: SourceFile[]): Violation[] {
  const out: Violation[] = [];
  for (const file of files) {
    const from = ringOf(file.path);
    if (!from) continue;
    for (const { specifier, line } of importsOf(file)) {
      if (!specifier.startsWith(".")) continue;
      const target = path.posix.normalize(path.posix.join(path.posix.dirname(file.path), specifier));
      const to = ringOf(target);
      if (to && to !== from && LEVEL[to] >= LEVEL[from]) out.push({ file: file.path, line, specifier, from, to });
    }
  }
  return out;
}

/** One line per violation, for a failure message a reader can act on. */
export function describeViolation(v: Violation): string {
  return `${v.file}:${v.line} imports "${v.specifier}" (${v.from} → ${v.to}): the ${v.from} ring may not import from the ${v.to} ring`;
}

/** The file a relative specifier names among `known` paths (`x.js` is `x.ts` in the sources), or null. */
function targetOf(from: string, specifier: string, known: Set<string>): string | null {
  const base = path.posix.normalize(path.posix.join(path.posix.dirname(from), specifier));
  const stem = base.replace(/\.(js|mjs|ts|mts)$/, "");
  for (const c of [base, `${stem}.ts`, `${stem}.mts`, `${stem}.js`, `${stem}.mjs`, `${base}/index.ts`]) if (known.has(c)) return c;
  return null;
}

/** Each file's relative imports, as the files they name (unknown targets and self-imports left out). */
function fileEdges(files: SourceFile[]): Map<string, string[]> {
  const known = new Set(files.map((f) => f.path));
  const edges = new Map<string, string[]>();
  for (const f of files) {
    const to = importsOf(f)
      .filter((i) => i.specifier.startsWith("."))
      .map((i) => targetOf(f.path, i.specifier, known))
      .filter((t): t is string => t !== null && t !== f.path);
    edges.set(f.path, [...new Set(to)]);
  }
  return edges;
}

/** Every group of files that import each other in a loop (strongly connected, 2+ files), each sorted. */
export function importCycles(files: SourceFile[]): string[][] {
  return loopsOf(fileEdges(files));
}

/** The unit of the core a file belongs to: its folder right under src/ (`src/ledger/`), or itself when it sits in src/. */
export function coreUnitOf(rel: string): string {
  const parts = rel.split("/");
  return parts.length > 2 ? `${parts[0]}/${parts[1]}/` : rel;
}

/**
 * Every group of the core's units (folders under src/, and its loose files) that import each other
 * in a loop, each sorted: no file cycle needs to exist for two folders to depend on each other.
 */
export function coreFolderCycles(files: SourceFile[]): string[][] {
  const edges = new Map<string, Set<string>>();
  for (const [from, targets] of fileEdges(files)) {
    if (ringOf(from) !== "core") continue;
    const u = coreUnitOf(from);
    const set = edges.get(u) ?? new Set<string>();
    edges.set(u, set);
    for (const t of targets) if (ringOf(t) === "core" && coreUnitOf(t) !== u) set.add(coreUnitOf(t));
  }
  return loopsOf(new Map([...edges].map(([u, s]) => [u, [...s]])));
}

/** The strongly connected groups (2+ nodes) of a graph, each sorted. */
function loopsOf(edges: Map<string, string[]>): string[][] {
  // Tarjan's algorithm, iteratively (the code base is deep enough to matter for recursion).
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const out: string[][] = [];
  for (const start of edges.keys()) {
    if (idx.has(start)) continue;
    const work: Array<{ v: string; i: number }> = [{ v: start, i: 0 }];
    idx.set(start, index);
    low.set(start, index++);
    stack.push(start);
    onStack.add(start);
    while (work.length) {
      const top = work.at(-1)!;
      const next = edges.get(top.v)?.[top.i++];
      if (next !== undefined) {
        if (!idx.has(next)) {
          idx.set(next, index);
          low.set(next, index++);
          stack.push(next);
          onStack.add(next);
          work.push({ v: next, i: 0 });
        } else if (onStack.has(next)) low.set(top.v, Math.min(low.get(top.v)!, idx.get(next)!));
        continue;
      }
      work.pop();
      if (work.length) low.set(work.at(-1)!.v, Math.min(low.get(work.at(-1)!.v)!, low.get(top.v)!));
      if (low.get(top.v) === idx.get(top.v)) {
        const group: string[] = [];
        let w: string;
        do {
          w = stack.pop()!;
          onStack.delete(w);
          group.push(w);
        } while (w !== top.v);
        if (group.length > 1) out.push(group.sort());
      }
    }
  }
  return out;
}
