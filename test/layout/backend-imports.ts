import path from "node:path";
import { importsOf, type SourceFile } from "./import-rings.js";

/**
 * The folders that hold the state's ports and their per-backend adapters: the persistence layer,
 * and the administration of a state, which sits above the run queue (doctor checks it, the fleet is
 * listed from it) and so cannot live in src/ledger/ without a loop among the core's folders.
 */
export const PORT_HOMES = ["src/ledger/", "src/state-admin/"];

/** An import that picks a backend outside the port homes: a PostgreSQL- or SQLite-specific adapter module, or the `pg` driver. */
export interface BackendImport {
  file: string;
  line: number;
  specifier: string;
}

/** Whether a specifier, imported from `from`, names a backend: `pg` (or a path in it), or a pg-*.ts or sqlite-*.ts of a port home. */
export function namesBackend(from: string, specifier: string): boolean {
  if (specifier === "pg" || specifier.startsWith("pg/")) return true;
  if (!specifier.startsWith(".")) return false;
  const target = path.posix.normalize(path.posix.join(path.posix.dirname(from), specifier));
  return PORT_HOMES.some((home) => target.startsWith(home) && /^(pg|sqlite)-[^/]+$/.test(target.slice(home.length)));
}

/** Every import of a backend by a file under src/ but outside the port homes (static, type-only, dynamic, `import("pg").Pool` types). */
export function backendImports(files: SourceFile[]): BackendImport[] {
  const out: BackendImport[] = [];
  for (const file of files) {
    if (!file.path.startsWith("src/") || PORT_HOMES.some((home) => file.path.startsWith(home))) continue;
    for (const { specifier, line } of importsOf(file)) if (namesBackend(file.path, specifier)) out.push({ file: file.path, line, specifier });
  }
  return out;
}

/** The allow-list entry (a file, or a folder ending in "/") that covers `file`, if any. */
export function allowedBy(file: string, allowed: readonly string[]): string | undefined {
  return allowed.find((a) => (a.endsWith("/") ? file.startsWith(a) : file === a));
}
