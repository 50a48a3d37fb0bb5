/**
 * Option parsing for program specs, from one table per program (getopt style): which short letters
 * and long names take a value. `getopt` reads GNU-style command lines (options may follow operands,
 * long options may be abbreviated); `leadingOptions` reads a wrapper's options up to the command it
 * runs (`timeout -s KILL 5 cmd`, `sudo -u x cmd`), where the first operand ends them.
 */
import type { ShellWord } from "../command-parts.js";

/** Options that take a value: short letters (`"uC"`) and long names without dashes (`["user"]`). */
export interface OptionTable {
  short?: string;
  long?: string[];
  /** `-5` is an option (nice's old adjustment form), not an operand. */
  numeric?: boolean;
}

export interface Opts {
  short: Set<string>;
  long: string[];
  values: Map<string, ShellWord[]>;
  operands: ShellWord[];
}

/** Parses options of a command: `withArg.short` letters and `withArg.long` names take a value. */
export function getopt(words: ShellWord[], start: number, withArg: OptionTable = {}): Opts {
  const o: Opts = { short: new Set(), long: [], values: new Map(), operands: [] };
  const put = (k: string, v: ShellWord | undefined) => {
    if (!v) return;
    o.values.set(k, [...(o.values.get(k) ?? []), v]);
  };
  let i = start;
  for (; i < words.length; i++) {
    const w = words[i]!;
    const t = w.text;
    if (!w.literal || !t.startsWith("-") || t === "-") {
      o.operands.push(w);
      continue;
    }
    if (t === "--") {
      o.operands.push(...words.slice(i + 1));
      break;
    }
    if (t.startsWith("--")) {
      const eq = t.indexOf("=");
      const name = eq < 0 ? t.slice(2) : t.slice(2, eq);
      o.long.push(name);
      const full = withArg.long?.find((l) => l.startsWith(name) && name.length >= 2);
      if (eq >= 0) put(full ?? name, { ...w, raw: t.slice(eq + 1), text: t.slice(eq + 1), candidates: [{ text: t.slice(eq + 1), glob: false }] });
      else if (full) put(full, words[++i]);
      continue;
    }
    for (let k = 1; k < t.length; k++) {
      const c = t[k]!;
      o.short.add(c);
      if (withArg.short?.includes(c)) {
        const rest = t.slice(k + 1);
        if (rest) put(c, { ...w, raw: rest, text: rest, candidates: [{ text: rest, glob: false }] });
        else put(c, words[++i]);
        break;
      }
    }
  }
  return o;
}

/** True when a long option given on the command line is `name` or an abbreviation of it. */
export function hasLong(o: Opts, ...names: string[]): boolean {
  return o.long.some((l) => names.some((n) => n === l || (l.length >= 3 && n.startsWith(l))));
}

export const val = (o: Opts, ...keys: string[]): ShellWord[] => keys.flatMap((k) => o.values.get(k) ?? []);

/** First non-option word at or after `start`, skipping values of `withArg` options; null if none. */
export function subcommand(words: ShellWord[], start: number, withArg: string[] = []): { word: ShellWord; index: number } | null {
  for (let i = start; i < words.length; i++) {
    const w = words[i]!;
    const t = w.text;
    if (!w.literal) return { word: w, index: i };
    if (t === "--") return words[i + 1] ? { word: words[i + 1]!, index: i + 1 } : null;
    if (t.startsWith("-")) {
      if (withArg.includes(t)) i++;
      continue;
    }
    return { word: w, index: i };
  }
  return null;
}

/**
 * Skips a wrapper's leading options: returns the index of its first operand (after `--`), or -1
 * when an option word is not literal. A value is taken from the next word only for a lone letter
 * (`-u root`) or a long name without `=`; a cluster (`-oL`, `-n10`) carries its value.
 */
export function leadingOptions(words: ShellWord[], start: number, table: OptionTable): number {
  let i = start;
  while (i < words.length) {
    const w = words[i]!;
    if (!w.literal) return -1;
    const t = w.text;
    if (t === "--") return i + 1;
    if (!t.startsWith("-") || t === "-") return i;
    if (table.numeric && /^-\d+$/.test(t)) {
      i++;
      continue;
    }
    if (t.startsWith("--")) {
      const name = t.split("=")[0]!.slice(2);
      i += table.long?.includes(name) && !t.includes("=") ? 2 : 1;
      continue;
    }
    i += t.length === 2 && table.short?.includes(t[1]!) ? 2 : 1;
  }
  return i;
}

/**
 * Files named by output options (`-o FILE`, `--outDir DIR`): every option of `table` is one. Also
 * vitest's `--outputFile.json=FILE` form, looked for in every such program's words.
 */
export function outputWrites(p: { words: ShellWord[] }, table: OptionTable): Array<{ word: ShellWord; kind: Record<string, never>; rm: boolean }> {
  const o = getopt(p.words, 1, table);
  const out: ShellWord[] = [];
  for (const k of [...(table.short ?? ""), ...(table.long ?? [])]) out.push(...val(o, k));
  for (const x of p.words)
    if (x.literal && /^--outputFile\.[a-z-]+=/.test(x.text))
      out.push({ ...x, text: x.text.replace(/^[^=]*=/, ""), candidates: [{ text: x.text.replace(/^[^=]*=/, ""), glob: false }] });
  return out.map((word) => ({ word, kind: {}, rm: false }));
}

/** The option word is one of the table's that take a value as the next word (`-n`, `--interval`). */
export function takesValue(t: string, table: OptionTable): boolean {
  return (t.length === 2 && t[0] === "-" && !!table.short?.includes(t[1]!)) || (t.startsWith("--") && !!table.long?.includes(t.slice(2)));
}
