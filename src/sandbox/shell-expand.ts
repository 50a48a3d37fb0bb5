/**
 * Word expansion as bash does it before a command runs, statically: brace expansion, tilde,
 * parameters with known values, and globs kept as patterns (picomatch syntax) for the policy.
 */
import type { PathCandidate, ShellWord } from "./command-parts.js";
import type { Tok } from "./shell-parse.js";
import { MAX_CANDIDATES, type State } from "./walk-state.js";

const isCh = (t: Tok | undefined, c: string): boolean => !!t && t.k === "ch" && !t.q && t.c === c;
const hasGlobChars = (s: string) => /[*?[]/.test(s);
/** Characters picomatch reads as syntax, escaped where the shell took them literally. */
const escapePm = (c: string) => ("\\*?[](){}!+@|".includes(c) ? `\\${c}` : c);
const escapePmText = (s: string) => [...s].map(escapePm).join("");

/** Brace expansion over word tokens (`{a,b}`, `{1..3}`); null past `limit` results. */
export function braceExpand(toks: Tok[], limit = 256): Tok[][] | null {
  for (let i = 0; i < toks.length; i++) {
    if (!isCh(toks[i], "{")) continue;
    let depth = 0;
    let close = -1;
    const commas: number[] = [];
    for (let j = i; j < toks.length; j++) {
      const t = toks[j];
      if (isCh(t, "{")) depth++;
      else if (isCh(t, "}")) {
        if (--depth === 0) {
          close = j;
          break;
        }
      } else if (isCh(t, ",") && depth === 1) commas.push(j);
    }
    if (close < 0) continue;
    let alts: Tok[][] | null = null;
    if (commas.length) {
      alts = [];
      let from = i + 1;
      for (const c of [...commas, close]) {
        alts.push(toks.slice(from, c));
        from = c + 1;
      }
    } else {
      const inner = toks.slice(i + 1, close);
      if (inner.every((t) => t.k === "ch" && !t.q)) {
        const s = inner.map((t) => (t as { c: string }).c).join("");
        const num = /^(-?\d+)\.\.(-?\d+)(?:\.\.(-?\d+))?$/.exec(s);
        const chr = /^([a-zA-Z])\.\.([a-zA-Z])(?:\.\.(-?\d+))?$/.exec(s);
        const seq = (a: number, b: number, step: number, fmt: (n: number) => string): Tok[][] | null => {
          const st = Math.abs(step) || 1;
          if (Math.abs(b - a) / st > limit) return null;
          const out: Tok[][] = [];
          for (let n = a; a <= b ? n <= b : n >= b; n += a <= b ? st : -st) {
            out.push([...fmt(n)].map((c) => ({ k: "ch" as const, c, q: true })));
          }
          return out;
        };
        if (num) alts = seq(Number(num[1]), Number(num[2]), Number(num[3] ?? 1), String);
        else if (chr) alts = seq(chr[1]!.charCodeAt(0), chr[2]!.charCodeAt(0), Number(chr[3] ?? 1), (n) => String.fromCharCode(n));
        if (num || chr) {
          if (!alts) return null;
        }
      }
    }
    if (!alts) continue;
    const prefix = toks.slice(0, i);
    const suffix = toks.slice(close + 1);
    const out: Tok[][] = [];
    for (const a of alts) {
      const sub = braceExpand([...prefix, ...a, ...suffix], limit);
      if (!sub) return null;
      out.push(...sub);
      if (out.length > limit) return null;
    }
    return out;
  }
  return [toks];
}

/** A word's value after tilde, parameter and glob handling: its text, whether literal, and the values it can take. */
export function wordOf(toks: Tok[], raw: string, st: State, home: string | null): ShellWord {
  let text = "";
  let literal = true;
  type C = { plain: string; pat: string; glob: boolean };
  let cands: C[] | null = [{ plain: "", pat: "", glob: false }];
  const add = (pieces: C[] | null) => {
    if (!cands || !pieces) {
      cands = null;
      return;
    }
    const next: C[] = [];
    for (const c of cands) for (const p of pieces) next.push({ plain: c.plain + p.plain, pat: c.pat + p.pat, glob: c.glob || p.glob });
    cands = next.length > MAX_CANDIDATES ? null : next;
  };
  let i = 0;
  // Tilde expansion: `~` or `~/…` at the start of the word, unquoted.
  if (isCh(toks[0], "~")) {
    let j = 1;
    let user = "";
    while (j < toks.length && toks[j]!.k === "ch" && !(toks[j] as { q: boolean }).q && (toks[j] as { c: string }).c !== "/") {
      user += (toks[j] as { c: string }).c;
      j++;
    }
    if (j === toks.length || isCh(toks[j], "/")) {
      if (user === "" && home) {
        text += home;
        add([{ plain: home, pat: escapePmText(home), glob: false }]);
      } else {
        text += `~${user}`;
        literal = false;
        add(null);
      }
      i = j;
    }
  }
  // An unquoted `[` is a glob only when a `]` follows.
  const closers = toks.map((t, k) => (isCh(t, "]") ? k : -1)).filter((k) => k >= 0);
  let ownGlob = false;
  let bracket = -1;
  for (; i < toks.length; i++) {
    const t = toks[i]!;
    if (t.k === "ch") {
      text += t.c;
      let syntax = false;
      if (!t.q && bracket >= 0) {
        // Inside `[…]`: `!`/`^` right after the bracket negate, `]` closes.
        syntax = t.c === "]" ? i > bracket + 1 : (t.c === "!" || t.c === "^") && i === bracket + 1;
        if (t.c === "]" && syntax) bracket = -1;
      } else if (!t.q && (t.c === "*" || t.c === "?")) syntax = true;
      else if (!t.q && t.c === "[" && closers.some((k) => k > i + 1)) {
        syntax = true;
        bracket = i;
      }
      add([{ plain: t.c, pat: syntax ? t.c : escapePm(t.c), glob: syntax }]);
      if (syntax) ownGlob = true;
    } else if (t.k === "param") {
      text += t.raw;
      literal = false;
      const values = lookup(t, st, home);
      if (!values || (!t.q && values.some((v) => /\s/.test(v.text) && !v.glob))) add(null);
      else {
        add(
          values.map((v) => {
            const glob = v.glob || (!t.q && hasGlobChars(v.text));
            return { plain: v.text, pat: v.glob || glob ? v.text : escapePmText(v.text), glob };
          }),
        );
      }
    } else if (t.k === "proc") {
      text += t.raw;
      literal = false;
      add([{ plain: "/dev/fd/63", pat: "/dev/fd/63", glob: false }]);
    } else {
      text += t.raw;
      literal = false;
      add(null);
    }
  }
  const finalCands = cands as C[] | null;
  const candidates = finalCands ? finalCands.map((c) => (c.glob ? { text: c.pat, glob: true } : { text: c.plain, glob: false })) : null;
  const glob = ownGlob || !!candidates?.some((c) => c.glob);
  return { raw, text, literal: literal && !ownGlob, glob, candidates, substitutions: [] };
}

function lookup(t: Extract<Tok, { k: "param" }>, st: State, home: string | null): PathCandidate[] | null {
  if (t.op !== "") return null;
  const known = st.vars.get(t.name);
  if (known) return known;
  if (t.name === "HOME" && home) return [{ text: home, glob: false }];
  if (t.name === "PWD" && st.cwds) return st.cwds.map((text) => ({ text, glob: false }));
  return null;
}
