import path from "node:path";
import { importsOf, type SourceFile } from "./import-rings.js";

/** An import that picks a backend outside src/ledger/: a PostgreSQL- or SQLite-specific ledger module, or the `pg` driver. */
export interface BackendImport {
  file: string;
  line: number;
  specifier: string;
}

/** Whether a specifier, imported from `from`, names a backend: `pg` (or a path in it), or src/ledger/pg-*.ts or sqlite-*.ts. */
export function namesBackend(from: string, specifier: string): boolean {
  if (specifier === "pg" || specifier.startsWith("pg/")) return true;
  if (!specifier.startsWith(".")) return false;
  const target = path.posix.normalize(path.posix.join(path.posix.dirname(from), specifier));
  return /^src\/ledger\/(pg|sqlite)-[^/]+$/.test(target);
}

/** Every import of a backend by a file under src/ but outside src/ledger/ (static, type-only, dynamic, `import("pg").Pool` types). */
export function backendImports(files: SourceFile[]): BackendImport[] {
  const out: BackendImport[] = [];
  for (const file of files) {
    if (!file.path.startsWith("src/") || file.path.startsWith("src/ledger/")) continue;
    for (const { specifier, line } of importsOf(file)) if (namesBackend(file.path, specifier)) out.push({ file: file.path, line, specifier });
  }
  return out;
}

/** The allow-list entry (a file, or a folder ending in "/") that covers `file`, if any. */
export function allowedBy(file: string, allowed: readonly string[]): string | undefined {
  return allowed.find((a) => (a.endsWith("/") ? file.startsWith(a) : file === a));
}
