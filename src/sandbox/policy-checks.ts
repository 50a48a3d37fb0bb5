import type { CommandPart, Redirection, ShellWord } from "./policy-parts.js";
import type { PathClass, WriteKind } from "./policy-paths.js";
import { writeTargets } from "./programs/registry.js";
import { finding as fd, q, type Finding, type RuleEnv } from "./programs/types.js";

// The checks the command policy (policy.ts) makes of every command, whatever the program: the
// environment variables it sets, the paths it writes or deletes (its own and its redirections'),
// and the credentials it reads.

/** What the checks need of the evaluator: the path judge, and whether the network is allowed. */
export type CheckContext = Pick<RuleEnv, "judge" | "allowNetwork">;

/** Environment variables that make programs load or run other code. */
const ENV_DENY =
  /^(LD_[A-Z_]+|BASH_ENV|ENV|CDPATH|SHELLOPTS|BASHOPTS|PS4|PROMPT_COMMAND|BASH_FUNC_.*|BASH_LOADABLES_PATH|GIT_CONFIG.*|GIT_EXEC_PATH|GIT_SSH|GIT_SSH_COMMAND|GIT_EXTERNAL_DIFF|GIT_PROXY_COMMAND|GIT_ASKPASS|SSH_ASKPASS|GIT_TEMPLATE_DIR|GIT_DIR|GIT_WORK_TREE|GIT_INDEX_FILE|GIT_OBJECT_DIRECTORY|GIT_ALTERNATE_OBJECT_DIRECTORIES|GIT_NAMESPACE|PERL5OPT|PERL5LIB|PERLLIB|RUBYOPT|PYTHONSTARTUP|PYTHONINSPECT|LESSOPEN|LESSCLOSE|MANPAGER|BROWSER|DYLD_[A-Z_]+)$/;
const ENV_ASK =
  /^(PATH|PAGER|GIT_PAGER|EDITOR|VISUAL|GIT_EDITOR|GIT_SEQUENCE_EDITOR|npm_config_(script_shell|userconfig|globalconfig|prefix|git|node_options)|NPM_CONFIG_(SCRIPT_SHELL|USERCONFIG|GLOBALCONFIG|PREFIX|GIT|NODE_OPTIONS))$/;

/** Findings for environment variables a part sets or exports that change what programs load or run. */
export function envFindings(p: CommandPart): Finding[] {
  const out: Finding[] = [];
  const names: string[] = p.assignments.map((a) => a.name);
  // Names set or exported by builtins: `export LD_PRELOAD`, `read LD_PRELOAD`, `printf -v PS4 …`.
  if (["export", "declare", "typeset", "local", "readonly", "read", "mapfile", "readarray", "getopts", "printf"].includes(p.program)) {
    for (const w of p.words.slice(1)) {
      const m = /^([A-Za-z_][A-Za-z0-9_]*)(\+?=|$)/.exec(w.text);
      if (m) names.push(m[1]!);
    }
    if (["declare", "typeset", "local"].includes(p.program) && p.argv.some((a) => /^-[a-zA-Z]*n/.test(a))) {
      out.push(
        fd("ask", "env.path", `${q(p.text)} declares a name reference, through which later assignments change other variables; assign variables directly`),
      );
    }
  }
  for (const n of names) {
    if (ENV_DENY.test(n)) {
      const what =
        n === "CDPATH" ? "sends `cd` to directories outside the workspace" : "makes programs load or run other code (libraries, hooks, pagers, ssh commands)";
      out.push(fd("deny", "env.sensitive", `setting ${n} ${what}; run the command without it`));
    } else if (ENV_ASK.test(n)) {
      out.push(fd("ask", "env.path", `setting ${n} changes which program a name runs; call programs by their path or name instead, or ask the user`));
    }
  }
  return out;
}

/** Findings for the paths a part writes or deletes (cp/mv/ln sources included, at where they land). */
export function writeFindings(env: CheckContext, p: CommandPart): Finding[] {
  const out: Finding[] = [];
  for (const t of writeTargets(p)) {
    const cwd = p.cwd;
    const cls = env.judge.classifyWord(t.word, cwd, t.kind);
    const bad = pathFinding(env, p.text, t.word, cls, t.kind, !!t.rm);
    if (bad) {
      out.push(bad);
      continue;
    }
    if (t.sources) {
      // cp/mv/ln into a directory: each source lands at dest/basename(source).
      for (const s of t.sources) {
        const landing = landingWord(t.word, s);
        if (!landing) {
          if (isWorkspaceRoot(env, t.word, cwd)) {
            out.push(
              fd(
                "ask",
                "write.unknown-target",
                `${q(p.text)} copies a path computed at run time (${q(s.raw)}) into the workspace root, where it could replace .git/; write the source path literally`,
              ),
            );
          }
          continue;
        }
        const c2 = env.judge.classifyWord(landing, cwd, { recursive: t.recursiveInto });
        const bad2 = pathFinding(env, p.text, landing, c2, {}, false);
        if (bad2) out.push(bad2);
      }
    }
  }
  return out;
}

/** Whether the word can name the workspace root itself (or is not known). */
export function isWorkspaceRoot(env: CheckContext, w: ShellWord, cwds: string[] | null): boolean {
  if (!w.candidates) return true;
  return w.candidates.some((c) => {
    const bases = c.text.startsWith("/") ? ["/"] : cwds;
    return !bases || bases.some((b) => env.judge.physical(b, c.text) === env.judge.workspace);
  });
}

/** Findings for one redirection: the path it writes, or the credentials or socket it reads. */
export function redirectFindings(env: CheckContext, r: Redirection, text: string): Finding[] {
  if (!r.write) {
    if (r.read && r.target.candidates) {
      const s = secretOf(env, r.target, r.cwd);
      if (s) return [fd("ask", "read.secrets", `${q(text)} reads ${s}, which holds credentials; it needs the user's approval`)];
    }
    if (r.read && /^\/dev\/(tcp|udp)\//.test(r.target.text)) return [devTcp(env, text)];
    return [];
  }
  const cls = env.judge.classifyWord(r.target, r.cwd, {});
  const bad = pathFinding(env, text, r.target, cls, {}, false);
  return bad ? [bad] : [];
}

function devTcp(env: CheckContext, text: string): Finding {
  return env.allowNetwork
    ? fd("allow", "net.dev-tcp", `${q(text)} opens a network connection; the network is allowed`)
    : fd("ask", "net.dev-tcp", `${q(text)} opens a network connection through /dev/tcp, which needs the user's approval`);
}

/** Maps a path classification to a finding (null when fine). */
function pathFinding(env: CheckContext, text: string, word: ShellWord, cls: PathClass, kind: WriteKind, rm: boolean): Finding | null {
  const verb = rm ? "deletes" : "writes to";
  const shown = word.below ? `what it finds below ${cls.path}` : word.raw === cls.path ? q(word.raw) : `${q(word.raw)} (${cls.path})`;
  switch (cls.kind) {
    case "ok":
      return null;
    case "outside":
      return rm
        ? fd("deny", "rm.outside", `${q(text)} ${verb} ${shown}, outside the workspace; remove only paths inside it`)
        : fd("deny", "write.outside", `${q(text)} ${verb} ${shown}, outside the workspace; write only inside the workspace (or below /tmp)`);
    case "protected":
      return fd(
        "deny",
        rm ? "rm.protected" : "write.protected",
        `${q(text)} ${verb} ${shown}: ${cls.what} may not be changed by commands${rm ? "; delete only the files you mean, by name" : "; commit through the git_commit tool, and leave the state and config alone"}`,
      );
    case "device":
      return fd("deny", "write.device", `${q(text)} ${verb} the device or kernel file ${cls.path}; write only to files in the workspace`);
    case "network":
      return devTcp(env, text);
    case "maybe":
      return fd("ask", "write.ambiguous", `${q(text)} ${verb} paths matched at run time: ${cls.why}; it needs the user's approval`);
    case "unknown":
      if (rm && kind.recursive) {
        return fd(
          "deny",
          "rm.unknown-target",
          `${q(text)} deletes recursively a path computed at run time (${cls.why}); if it is empty or wrong this deletes outside the workspace. Write the paths literally`,
        );
      }
      return fd(
        "ask",
        "write.unknown-target",
        `${q(text)} ${verb} a path computed at run time (${cls.why}), which cannot be checked; write the path literally, or it needs the user's approval`,
      );
  }
}

/** The credentials a word may name (a description of them), or null. */
function secretOf(env: CheckContext, w: ShellWord, cwds: string[] | null): string | null {
  if (/\/proc\/[^/\s]+\/environ/.test(w.text)) return "a process's environment";
  const texts: string[] = [];
  const braces = w.candidates ? null : braceFallback(w.text, env.judge.home);
  if (braces)
    for (const b of braces.startsWith("/") ? ["/"] : (cwds ?? [])) {
      const s = env.judge.secretGlob(b, braces);
      if (s) return s;
    }
  for (const c of w.candidates ?? []) {
    if (c.glob) {
      // Judged by what the pattern can match, not skipped: `~/.aw?/credentials` is ~/.aws/credentials.
      for (const b of c.text.startsWith("/") ? ["/"] : (cwds ?? [])) {
        const s = env.judge.secretGlob(b, c.text);
        if (s) return s;
      }
      continue;
    }
    texts.push(c.text);
    const eq = c.text.indexOf("=");
    if (eq > 0) texts.push(c.text.slice(eq + 1).replace(/^~(?=\/|$)/, env.judge.home));
  }
  for (const t of texts) {
    const bases = t.startsWith("/") ? ["/"] : cwds;
    for (const b of bases ?? []) {
      const s = env.judge.secretRead(env.judge.physical(b, t));
      if (s) return s;
    }
  }
  return null;
}

/** A finding when one of a part's arguments names credentials. */
export function readFindings(env: CheckContext, p: CommandPart): Finding[] {
  for (const w of p.words.slice(1)) {
    const s = secretOf(env, w, p.cwd);
    if (s) return [fd("ask", "read.secrets", `${q(p.text)} reads ${s}, which holds credentials; it needs the user's approval`)];
  }
  return [];
}

/** `dest/basename(source)` as a word, or null when the source is not known. */
function landingWord(dest: ShellWord, source: ShellWord): ShellWord | null {
  if (!dest.candidates || !source.candidates) return null;
  const cands = [];
  for (const d of dest.candidates) {
    for (const s of source.candidates) {
      const base = s.text.replace(/\/+$/, "").split("/").pop() ?? "";
      if (!base || base === "." || base === "..") continue;
      cands.push({ text: `${d.text.replace(/\/+$/, "")}/${base}`, glob: d.glob || s.glob });
    }
  }
  if (cands.length > 64) return null;
  const base = (source.text.replace(/\/+$/, "").split("/").pop() ?? source.text) || source.text;
  const join = (d: string) => `${d.replace(/\/+$/, "")}/${base}`;
  return {
    raw: join(dest.raw),
    text: join(dest.text),
    literal: dest.literal && source.literal,
    glob: dest.glob || source.glob,
    candidates: cands,
    substitutions: [],
  };
}

/**
 * A word whose brace expansion was too large to list, as a glob that matches at least everything the
 * expansion can produce (each `{…}` group becomes `*`, or `*` / `**` / `*` when it holds a `/`); null
 * when the word has no braces or holds run-time expansions.
 */
function braceFallback(text: string, home: string): string | null {
  if (!/\{[^}]*(,|\.\.)[^}]*\}/.test(text) || /[$`]/.test(text)) return null;
  let out = text.replace(/^~(?=\/|$)/, home);
  for (let prev = ""; prev !== out;) {
    prev = out;
    out = out.replace(/\{([^{}]*)\}/g, (_m, inner: string) => (inner.includes("/") ? "*/**/*" : "*"));
  }
  return out;
}
