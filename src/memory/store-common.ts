import type { ListNamespacesOperation } from "@langchain/langgraph";

// What both BaseStore adapters (SQLite, PostgreSQL) share around their own SQL: how a namespace is
// stored, what text of a value is searched, and how namespaces are listed.

/** Separates the labels of a stored namespace (a control character no label contains). */
export const SEP = "\u001f";
/** A namespace as stored: its labels joined by SEP. */
export const nsKey = (ns: string[]) => ns.join(SEP);
/** A stored namespace as its labels. */
export const nsOf = (s: string) => (s === "" ? [] : s.split(SEP));

/** All string leaves of a value, for full-text search. */
export function textOf(value: unknown): string {
  if (typeof value === "string") return value;
  if (Array.isArray(value)) return value.map(textOf).join(" ");
  if (value && typeof value === "object") return Object.values(value).map(textOf).join(" ");
  return "";
}

/** The words of a free-text query (any of them matches), at most 32. */
export function queryWords(text: string): string[] {
  return [...new Set(text.toLowerCase().match(/[a-z0-9_]{2,}/g) ?? [])].slice(0, 32);
}

/** Whether a value has every field of the filter (compared as JSON). */
export function matches(value: Record<string, unknown>, filter?: Record<string, unknown>): boolean {
  if (!filter) return true;
  return Object.entries(filter).every(([k, v]) => JSON.stringify(value[k]) === JSON.stringify(v));
}

/** The answer to a list-namespaces operation, from every stored namespace in order. */
export function listNamespaces(all: string[][], op: ListNamespacesOperation): string[][] {
  const ok = (ns: string[]) =>
    (op.matchConditions ?? []).every((c) => {
      const path = c.path;
      const part = c.matchType === "prefix" ? ns.slice(0, path.length) : ns.slice(ns.length - path.length);
      return part.length === path.length && path.every((p, i) => p === "*" || p === part[i]);
    });
  const seen = new Set<string>();
  const out: string[][] = [];
  for (const ns of all.filter(ok)) {
    const cut = op.maxDepth !== undefined ? ns.slice(0, op.maxDepth) : ns;
    const k = nsKey(cut);
    if (!seen.has(k)) {
      seen.add(k);
      out.push(cut);
    }
  }
  return out.slice(op.offset, op.offset + op.limit);
}
