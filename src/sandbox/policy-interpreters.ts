/**
 * Where an interpreter's code comes from, and what the policy can say about it: a script outside the
 * workspace, shell code arriving through a pipe or computed at run time, a download run without
 * being saved, and inline code (`python3 -c`, `node -e`, awk programs, here-documents) that starts
 * programs — denied when one of its strings is a refused command line, else asked.
 */
import type { CommandPart, ShellWord } from "./command-parts.js";
import { codeStrings, inlineExecReason, shellsOut } from "./policy-inline.js";
import { isDownloader } from "./programs/registry.js";
import { interpreterCall, type InterpreterKind, interpreterKind } from "./programs/runtimes.js";
import { type Finding, finding, q, type RuleEnv } from "./programs/types.js";

export function interpreterFindings(p: CommandPart, env: RuleEnv): Finding[] {
  const out: Finding[] = [];
  const kind = interpreterKind(p.program);
  const isSource = p.program === "source" || p.program === ".";
  if (!kind && !isSource) return out;
  const call = kind ? interpreterCall(p, kind) : { inline: [], script: p.words[1] ?? null, stdin: p.words[1]?.text === "/dev/stdin", module: null };
  const name = p.program;
  const download = (upstream: string[]) => upstream.find((u) => isDownloader(u));
  // Where the code comes from.
  if (call.script && !call.stdin) {
    const dl = download(call.script.substitutions);
    if (dl) {
      out.push(
        finding(
          "deny",
          "pipe.download-to-interpreter",
          `${q(p.text)} runs code downloaded by \`${dl}\` without saving or reviewing it; download to a file in the workspace first and inspect it`,
        ),
      );
    } else if (kind === "shell" || isSource) {
      out.push(...scriptLocation(p, call.script, env));
    }
  }
  if (call.stdin || (call.script === null && call.inline.length === 0 && !call.module)) {
    const input = p.stdin;
    if (input?.kind === "pipe") {
      const dl = download(input.upstream);
      if (dl) {
        out.push(
          finding(
            "deny",
            "pipe.download-to-interpreter",
            `${q(p.text)} runs what \`${dl}\` downloads straight in \`${name}\`; download to a file in the workspace first and inspect it`,
          ),
        );
      } else if ((kind === "shell" || isSource) && input.text === null) {
        out.push(
          finding(
            "ask",
            "shell.stdin",
            `${q(p.text)} runs shell code that arrives through a pipe (from ${input.upstream.map((u) => `\`${u}\``).join(", ") || "another command"}), which the policy cannot see; run the commands directly`,
          ),
        );
      } else if (kind && kind !== "shell" && input.text) {
        out.push(...inlineFindings(p, kind, input.text, env));
      }
    } else if (input && (input.kind === "heredoc" || input.kind === "herestring")) {
      if (input.text === null && (kind === "shell" || isSource)) {
        out.push(finding("ask", "shell.stdin", `${q(p.text)} runs shell code computed at run time`));
      } else if (input.text !== null && kind && kind !== "shell") out.push(...inlineFindings(p, kind, input.text, env));
    } else if (input?.kind === "file" && (kind === "shell" || isSource)) {
      out.push(...scriptLocation(p, input.word, env));
    }
  }
  if (kind && kind !== "shell") {
    for (const c of call.inline) {
      out.push(...inlineFindings(p, kind, c.text, env));
      // Expansions inside the code (`-c "$CODE"`, `-e "x='$V'"`) can inject any code at run time.
      if (!c.literal)
        out.push(
          finding(
            "ask",
            "interp.inline-exec",
            `the inline ${kind} code of ${q(p.text)} is partly computed at run time (${q(c.raw)}), so the policy cannot check it; write the code out literally`,
          ),
        );
    }
  }
  return out;
}

function scriptLocation(p: CommandPart, script: ShellWord, env: RuleEnv): Finding[] {
  if (script.candidates && script.candidates.every((c) => !c.glob)) {
    if (script.candidates.some((c) => c.text.startsWith("/dev/fd/") || c.text === "/dev/stdin")) {
      return [
        finding("ask", "shell.stdin", `${q(p.text)} runs shell code produced by another command, which the policy cannot see; run the commands directly`),
      ];
    }
    const ok = script.candidates.every((c) => {
      const bases = c.text.startsWith("/") ? ["/"] : p.cwd;
      return !!bases && bases.every((b) => env.judge.isInside(env.judge.physical(b, c.text)));
    });
    if (ok) return [];
  }
  return [
    finding(
      "ask",
      "shell.script",
      `${q(p.text)} runs the script ${q(script.raw)} from outside the workspace (or from a path computed at run time); it needs the user's approval`,
    ),
  ];
}

export function inlineFindings(p: CommandPart, kind: InterpreterKind | "awk", code: string, env: RuleEnv): Finding[] {
  if (!shellsOut(code, kind) && !inlineExecReason(code, kind)) return [];
  for (const s of codeStrings(code)) {
    if (!s.trim() || s.length > 4000) continue;
    const denials = env.nestedDenials(s, p.cwd);
    if (denials.length) {
      return [
        finding(
          "deny",
          "interp.inline-denied",
          `the inline ${kind} code of ${q(p.text)} passes ${q(s)} to a shell, which is refused (${denials[0]!.rule}: ${denials[0]!.reason})`,
        ),
      ];
    }
  }
  // No literal names a refused command, but what the code runs may be built at run time.
  const why = inlineExecReason(code, kind);
  if (why)
    return [
      finding(
        "ask",
        "interp.inline-exec",
        `the inline ${kind} code of ${q(p.text)} ${why}; the policy cannot check which, so it needs the user's approval (run the commands directly instead)`,
      ),
    ];
  return [];
}
