// @ts-check
// Formatting of times, durations, token counts and one-line previews.

/** @param {number} n */
const pad = (n) => String(n).padStart(2, "0");

/** @param {string | number} ts */
export function clock(ts) {
  const d = new Date(ts);
  return Number.isNaN(d.getTime()) ? "" : `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** @param {string} ts */
export function dateTime(ts) {
  const d = new Date(ts);
  return Number.isNaN(d.getTime()) ? "" : `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${clock(ts)}`;
}

/** @param {string} ts */
export function ago(ts) {
  const ms = Date.now() - new Date(ts).getTime();
  if (!Number.isFinite(ms)) return "";
  if (ms < 5000) return "just now";
  if (ms < 60000) return `${Math.round(ms / 1000)} s ago`;
  if (ms < 3600000) return `${Math.round(ms / 60000)} min ago`;
  if (ms < 86400000) return `${Math.round(ms / 3600000)} h ago`;
  return `${Math.round(ms / 86400000)} d ago`;
}

/** @param {number | null | undefined} ms */
export function duration(ms) {
  if (ms === null || ms === undefined) return "";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)} s`;
  return `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
}

/** @param {number | null | undefined} b */
export function bytes(b) {
  if (b === null || b === undefined) return "";
  if (b < 1024) return `${b} B`;
  if (b < 1024 * 1024) return `${(b / 1024).toFixed(b < 10 * 1024 ? 1 : 0)} KiB`;
  if (b < 1024 ** 3) return `${(b / 1024 ** 2).toFixed(b < 10 * 1024 ** 2 ? 1 : 0)} MiB`;
  return `${(b / 1024 ** 3).toFixed(2)} GiB`;
}

/** @param {number | null | undefined} n */
export function tokens(n) {
  if (n === null || n === undefined) return "";
  return n >= 10000 ? `${(n / 1000).toFixed(1)}k` : n >= 1000 ? `${(n / 1000).toFixed(2)}k` : String(n);
}

/**
 * Tokens and USD of model calls, "1.20k tok · $0.0031" ("" when nothing was reported).
 * @param {{ tokens: number; costUsd: number } | null | undefined} s
 */
export function spend(s) {
  if (!s || (!s.tokens && !s.costUsd)) return "";
  return `${tokens(s.tokens)} tok${s.costUsd ? ` · $${s.costUsd.toFixed(4)}` : ""}`;
}

/**
 * @param {unknown} s
 * @param {number} [max]
 */
export function oneLine(s, max = 160) {
  const t = String(s ?? "")
    .replace(/\s+/g, " ")
    .trim();
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
}

/** @param {string | null} m */
export function modelName(m) {
  if (!m) return "";
  // A scripted model's spec is a file path: its name is enough in a header.
  if (m.startsWith("scripted:")) return `scripted:${m.slice(9).split("/").pop()}`;
  return m;
}

/**
 * @param {number} n
 * @param {string} one
 * @param {string} [many]
 */
export const plural = (n, one, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
