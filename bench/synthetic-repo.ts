// A synthetic git repository for the index-speed target of the history source (2,000 files, 5,000
// commits), built in a few seconds with `git fast-import`. Deterministic (seeded): the same options
// give the same commits and trees, so figures of different runs index the same thing.
//
// Realistic in what the indexer and the history reader spend time on: TypeScript modules of 40–160
// lines with functions, classes and doc comments, grouped in packages; commit messages in the usual
// conventional-commit style with a body now and then; commits touching one to a few files of one
// package (a module with its test, a module with its neighbours), so co-change is learnt from them;
// and now and then a bulk change (a rename or a reformat across a package) of more than 50 files.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { seededRandom as rng } from "../src/eval/seeded-random.js";

export interface SyntheticRepoOptions {
  files?: number;
  commits?: number;
  seed?: number;
}

const PACKAGES = [
  "auth",
  "router",
  "cache",
  "http",
  "parser",
  "storage",
  "queue",
  "metrics",
  "config",
  "cli",
  "render",
  "schema",
  "session",
  "upload",
  "search",
  "billing",
  "mailer",
  "i18n",
  "logging",
  "scheduler",
];
const NOUNS = [
  "token",
  "header",
  "cookie",
  "route",
  "param",
  "entry",
  "record",
  "buffer",
  "stream",
  "chunk",
  "request",
  "response",
  "payload",
  "option",
  "value",
  "key",
  "index",
  "segment",
  "handler",
  "policy",
  "limit",
  "timeout",
  "retry",
  "locale",
  "template",
  "column",
  "message",
  "job",
  "batch",
  "cursor",
];
const VERBS = [
  "parse",
  "resolve",
  "encode",
  "decode",
  "validate",
  "normalize",
  "merge",
  "split",
  "flush",
  "load",
  "store",
  "render",
  "match",
  "format",
  "compute",
  "schedule",
  "retry",
  "expire",
  "sign",
  "verify",
];
const ADJ = [
  "empty",
  "nested",
  "duplicate",
  "stale",
  "invalid",
  "missing",
  "large",
  "unicode",
  "negative",
  "concurrent",
  "expired",
  "partial",
  "malformed",
  "trailing",
  "optional",
];
const TYPES = ["fix", "fix", "fix", "feat", "feat", "perf", "refactor", "docs", "test", "chore"];

const cap = (s: string) => s[0]!.toUpperCase() + s.slice(1);
const ing = (v: string) => (v.endsWith("e") ? v.slice(0, -1) : v) + "ing";
const ed = (v: string) => (v.endsWith("e") ? v + "d" : v.endsWith("y") ? v.slice(0, -1) + "ied" : v + "ed");
const plural = (n: string) => (n.endsWith("y") ? n.slice(0, -1) + "ies" : n.endsWith("x") || n.endsWith("ch") ? n + "es" : n + "s");
const an = (w: string) => (/^[aeiou]/.test(w) ? `an ${w}` : `a ${w}`);

interface FileSpec {
  path: string;
  pkg: string;
  /** The words its code is written in (its functions are named after them). */
  nouns: string[];
  verbs: string[];
  isTest: boolean;
  revision: number;
}

/** One module's text at a revision: functions and a class named after its words. */
function moduleText(f: FileSpec, r: () => number): string {
  const lines: string[] = [
    `// ${f.pkg}: ${f.verbs[0]} and ${f.verbs[1]} ${plural(f.nouns[0]!)}`,
    `import { ${f.nouns[1]}Defaults } from "../shared/defaults.js";`,
    "",
  ];
  const fns = 4 + Math.floor(r() * 8);
  for (let i = 0; i < fns; i++) {
    const verb = f.verbs[i % f.verbs.length]!;
    const noun = f.nouns[(i + 1) % f.nouns.length]!;
    const adj = ADJ[Math.floor(r() * ADJ.length)]!;
    const name = `${verb}${cap(noun)}${i > 2 ? cap(adj) : ""}`;
    lines.push(
      `/** ${cap(verb)}s ${an(noun)}; ${an(adj)} ${noun} is returned unchanged. */`,
      `export function ${name}(${noun}: string, opts: { ${adj}?: boolean } = {}): string {`,
      `  if (!${noun} || opts.${adj}) return ${noun};`,
      `  const parts = ${noun}.split(${JSON.stringify(i % 2 ? "," : "/")}).map((p) => p.trim());`,
      ...Array.from(
        { length: 2 + Math.floor(r() * 10) },
        (_, j) => `  if (parts.length > ${j + 2}) parts[${j}] = ${f.nouns[1]}Defaults.${f.nouns[0]} + parts[${j}];`,
      ),
      `  return parts.join(${JSON.stringify(i % 2 ? "," : "/")});`,
      `}`,
      "",
    );
  }
  const noun = f.nouns[0]!;
  lines.push(
    `export class ${cap(noun)}${cap(f.verbs[0]!)}er {`,
    `  private readonly seen = new Map<string, number>();`,
    `  ${f.verbs[1]}(${noun}: string): number {`,
    `    const n = (this.seen.get(${noun}) ?? 0) + 1;`,
    `    this.seen.set(${noun}, n);`,
    `    return n;`,
    `  }`,
    `}`,
    "",
    `export const ${f.pkg.toUpperCase()}_${noun.toUpperCase()}_REVISION = ${f.revision};`,
  );
  if (f.isTest) {
    lines.unshift(`import { describe, expect, it } from "vitest";`);
    lines.push(
      "",
      `describe("${f.verbs[0]} ${noun}", () => {`,
      `  it("keeps an empty ${noun}", () => expect(${f.verbs[0]}${cap(f.nouns[1]!)}("")).toBe(""));`,
      `});`,
    );
  }
  return lines.join("\n") + "\n";
}

/**
 * Writes the repository into `dir` (a new git repository, the last commit checked out) and returns
 * its numbers. Commits are made newest last, a day to an hour apart, by `git fast-import`.
 */
export function makeSyntheticRepo(dir: string, opts: SyntheticRepoOptions = {}): { files: number; commits: number; bulkCommits: number } {
  const nFiles = opts.files ?? 2000;
  const nCommits = opts.commits ?? 5000;
  const r = rng(opts.seed ?? 14);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const files: FileSpec[] = [];
  for (let i = 0; i < nFiles; i++) {
    const pkg = PACKAGES[Math.floor(i / 5) % PACKAGES.length]!;
    const nouns = [pick(NOUNS), pick(NOUNS), pick(NOUNS)];
    const verbs = [pick(VERBS), pick(VERBS), pick(VERBS)];
    const isTest = i % 5 === 4; // every fifth module is the test of the one before it
    const base = isTest ? files[i - 1]! : null;
    const name = base
      ? base.path.replace(/^packages\/([^/]+)\/src\//, "packages/$1/test/").replace(/\.ts$/, ".test.ts")
      : `packages/${pkg}/src/${verbs[0]}-${nouns[0]}-${i}.ts`;
    files.push({ path: name, pkg: base?.pkg ?? pkg, nouns: base?.nouns ?? nouns, verbs: base?.verbs ?? verbs, isTest, revision: 0 });
  }
  const byPkg = new Map<string, number[]>();
  files.forEach((f, i) => byPkg.set(f.pkg, [...(byPkg.get(f.pkg) ?? []), i]));
  const pkgNames = [...byPkg.keys()];

  fs.mkdirSync(dir, { recursive: true });
  const env = {
    ...process.env,
    GIT_CONFIG_NOSYSTEM: "1",
    HOME: "/nonexistent",
    GIT_AUTHOR_NAME: "b",
    GIT_AUTHOR_EMAIL: "b@example.com",
    GIT_COMMITTER_NAME: "b",
    GIT_COMMITTER_EMAIL: "b@example.com",
  };
  const git = (args: string[], input?: Buffer) => execFileSync("git", args, { cwd: dir, env, maxBuffer: 1 << 30, ...(input ? { input } : {}) });
  git(["init", "-q", "-b", "main"]);

  const out: string[] = [];
  let ts = 1_600_000_000;
  let mark = 0;
  let bulk = 0;
  const commit = (message: string, touched: number[]) => {
    ts += 3600 + Math.floor(r() * 86400);
    out.push("commit refs/heads/main", `mark :${++mark}`, `committer b <b@example.com> ${ts} +0000`, `data ${Buffer.byteLength(message)}`, message);
    for (const i of touched) {
      const f = files[i]!;
      const text = moduleText(f, rng((opts.seed ?? 14) * 7919 + i * 31 + f.revision));
      out.push(`M 100644 inline ${f.path}`, `data ${Buffer.byteLength(text)}`, text);
      f.revision++;
    }
    out.push("");
  };
  // The tree grows over the first commits (a package at a time), then the history changes it.
  const initial = Math.min(PACKAGES.length, nCommits);
  for (let c = 0; c < initial; c++)
    commit(
      `feat(${PACKAGES[c]}): add the ${PACKAGES[c]} package`,
      files.map((_, i) => i).filter((i) => i % initial === c),
    );
  for (let c = initial; c < nCommits; c++) {
    const pkg = pick(pkgNames);
    const members = byPkg.get(pkg)!;
    const type = pick(TYPES);
    const lead = pick(members);
    const f = files[lead]!;
    const noun = pick(f.nouns);
    const verb = pick(f.verbs);
    const adj = pick(ADJ);
    let touched: number[];
    let subject: string;
    if (r() < 0.01) {
      // A bulk change: every module of the package (more than 50 files: it votes for nothing).
      touched = members;
      subject = `refactor(${pkg}): rename ${noun} helpers across the package`;
      bulk++;
    } else {
      touched = [lead];
      // A module changes with its test, and now and then with one or two neighbours of its package.
      const test = f.isTest ? lead - 1 : lead + 1;
      if (files[test] && files[test]!.pkg === pkg && r() < 0.5) touched.push(test);
      const extra = r() < 0.3 ? 1 + Math.floor(r() * 2) : 0;
      for (let k = 0; k < extra; k++) touched.push(members[(members.indexOf(lead) + 2 + k * 3) % members.length]!);
      touched = [...new Set(touched)];
      subject =
        type === "fix"
          ? `fix(${pkg}): handle ${adj} ${noun} in ${verb}${cap(noun)}`
          : type === "feat"
            ? `feat(${pkg}): ${verb} ${plural(noun)} with ${an(adj)} ${pick(NOUNS)}`
            : type === "perf"
              ? `perf(${pkg}): avoid ${ing(verb)} the ${noun} twice`
              : type === "refactor"
                ? `refactor(${pkg}): move ${noun} ${verb} into its own function`
                : type === "docs"
                  ? `docs(${pkg}): explain how ${plural(noun)} are ${ed(verb)}`
                  : type === "test"
                    ? `test(${pkg}): cover ${adj} ${plural(noun)}`
                    : `chore(${pkg}): tidy ${noun} ${verb} code`;
    }
    const body =
      r() < 0.3
        ? `\n\n${cap(an(adj))} ${noun} reached ${verb}${cap(noun)} and was ${ed(pick(VERBS))} as if it were ${an(pick(NOUNS))}.\nCloses #${1000 + c}.`
        : "";
    commit(subject + body + "\n", touched);
  }
  git(["fast-import", "--quiet"], Buffer.from(out.join("\n") + "\n"));
  git(["checkout", "-q", "-f", "main"]);
  return { files: nFiles, commits: nCommits, bulkCommits: bulk };
}

/** This process's CPU seconds plus those of its finished children (git log, git rev-parse), from /proc. */
export function cpuSecondsWithChildren(): number {
  try {
    // Fields 14-17 of /proc/self/stat (after the parenthesised name): utime stime cutime cstime, in clock ticks.
    const stat = fs.readFileSync("/proc/self/stat", "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
    return ticks / 100;
  } catch {
    const c = process.cpuUsage();
    return (c.user + c.system) / 1e6;
  }
}

if (process.argv[1] && path.resolve(process.argv[1]).endsWith("synthetic-repo.ts")) {
  const dir = process.argv[2];
  if (!dir) throw new Error("usage: tsx bench/synthetic-repo.ts <dir> [files] [commits]");
  const t = performance.now();
  const made = makeSyntheticRepo(dir, { files: Number(process.argv[3] ?? 2000), commits: Number(process.argv[4] ?? 5000) });
  console.log(`${JSON.stringify(made)} in ${((performance.now() - t) / 1000).toFixed(1)} s`);
}
