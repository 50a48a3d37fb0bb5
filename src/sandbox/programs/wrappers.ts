/**
 * Wrappers: programs that run another command given in their arguments (`env X=1 cmd`,
 * `timeout 5 cmd`, `nice -n 5 cmd`, `watch 'cmd'`, `flock f -c 'cmd'`). Each is allowed itself; what
 * it runs is a part of its own, judged like any other.
 */
import type { Assignment } from "../command-parts.js";
import { literalWord } from "../command-parts.js";
import { runCode, runFrom } from "./follow.js";
import { leadingOptions, type OptionTable, outputWrites, takesValue } from "./options.js";
import { allowed, type FollowApi, type ProgramSpec } from "./types.js";

const lit = (api: FollowApi, i: number) => (api.words[i]?.literal ? api.words[i]!.text : null);

/** A wrapper whose options end at the command it runs. */
function simpleWrapper(name: string, options: OptionTable, operandsBefore = 0): ProgramSpec {
  return {
    names: [name],
    options,
    decide: (p) => allowed(p),
    runs(api) {
      const i = leadingOptions(api.words, 1, options);
      runFrom(api, i < 0 ? -1 : i + operandsBefore, name);
    },
  };
}

/** env's options with a value; -C (a directory) and -S (code) are read below, -u/--unset by the table. */
const ENV: OptionTable = { short: "uCS", long: ["unset", "chdir", "split-string"] };

const env: ProgramSpec = {
  names: ["env"],
  options: ENV,
  decide: (p) => allowed(p),
  runs(api) {
    const { words } = api;
    const n = words.length;
    let i = 1;
    let cwd: string[] | null | undefined;
    const assigns: Assignment[] = [];
    for (; i < n; i++) {
      const t = lit(api, i);
      if (t === null) return runFrom(api, -1, "env");
      if (t === "--") continue;
      if (t === "-" || t === "-i" || t === "-0" || t === "-v" || /^--(ignore-environment|null|debug)$/.test(t)) continue;
      if (takesValue(t, { short: "u", long: ["unset"] })) {
        i++;
        continue;
      }
      if (t.startsWith("-u") || t.startsWith("--unset=")) continue;
      if (t === "-C" || t === "--chdir" || t.startsWith("--chdir=") || (t.startsWith("-C") && t.length > 2)) {
        const dirWord = t === "-C" || t === "--chdir" ? words[++i] : literalWord(t.startsWith("-C") ? t.slice(2) : t.slice(8));
        cwd = dirWord ? api.resolveDirs(dirWord) : null;
        continue;
      }
      if (t === "-S" || t === "--split-string" || t.startsWith("--split-string=") || (t.startsWith("-S") && t.length > 2)) {
        const s = t === "-S" || t === "--split-string" ? words[i + 1] : literalWord(t.startsWith("-S") ? t.slice(2) : t.slice(15));
        return runCode(api, s, "env -S");
      }
      if (t.startsWith("-")) return runFrom(api, -1, "env");
      const m = /^([A-Za-z_][A-Za-z0-9_]*)=/.exec(t);
      if (m) {
        const a = { name: m[1]!, value: literalWord(t.slice(m[0].length)), text: t };
        assigns.push(a);
        api.noteLatent(a, "`env`");
        continue;
      }
      break;
    }
    // `env $X` could be an assignment or a program: not literal is not knowable.
    for (let k = 1; k < i; k++) if (!words[k]!.literal) return runFrom(api, -1, "env");
    if (i < n && !words[i]!.literal) return runFrom(api, -1, "env");
    return runFrom(api, i, "env", { assigns, cwd });
  },
};

const WATCH: OptionTable = { short: "nq", long: ["interval", "equexit"] };
const FLOCK: OptionTable = { short: "wE", long: ["timeout", "conflict-exit-code"] };

const watch: ProgramSpec = {
  names: ["watch"],
  options: WATCH,
  decide: (p) => allowed(p),
  runs(api) {
    const n = api.words.length;
    let i = 1;
    let execForm = false;
    for (; i < n; i++) {
      const t = lit(api, i);
      if (t === null) return runFrom(api, -1, "watch");
      if (t === "-x" || t === "--exec") {
        execForm = true;
        continue;
      }
      if (takesValue(t, WATCH)) {
        i++;
        continue;
      }
      if (!t.startsWith("-")) break;
    }
    if (execForm) return runFrom(api, i, "watch");
    const rest = api.words.slice(i);
    if (rest.length === 0) return;
    return runCode(api, { ...literalWord(rest.map((w) => w.text).join(" ")), literal: rest.every((w) => w.literal) }, "watch");
  },
};

const flock: ProgramSpec = {
  names: ["flock"],
  options: FLOCK,
  decide: (p) => allowed(p),
  runs(api) {
    const n = api.words.length;
    let i = 1;
    for (; i < n; i++) {
      const t = lit(api, i);
      if (t === null) return runFrom(api, -1, "flock");
      if (takesValue(t, FLOCK)) {
        i++;
        continue;
      }
      if (!t.startsWith("-")) break;
    }
    // words[i] is the lock file or directory.
    const after = lit(api, i + 1);
    if (after === "-c" || after === "--command") return runCode(api, api.words[i + 2], "flock -c");
    return runFrom(api, i + 1, "flock");
  },
};

const TIME_OPTIONS: OptionTable = { short: "fo", long: ["format", "output"] };

const time: ProgramSpec = {
  ...simpleWrapper("time", TIME_OPTIONS),
  writes: (p) => outputWrites(p, { short: "o", long: ["output"] }),
};

export const WRAPPER_SPECS: ProgramSpec[] = [
  env,
  watch,
  flock,
  time,
  simpleWrapper("nohup", {}),
  simpleWrapper("nice", { short: "n", long: ["adjustment"], numeric: true }),
  // timeout DURATION COMMAND: the first operand is the duration.
  simpleWrapper("timeout", { short: "sk", long: ["signal", "kill-after"] }, 1),
  simpleWrapper("stdbuf", { short: "ioe", long: ["input", "output", "error"] }),
  simpleWrapper("ionice", { short: "cn", long: ["class", "classdata"] }),
  simpleWrapper("setsid", {}),
];
