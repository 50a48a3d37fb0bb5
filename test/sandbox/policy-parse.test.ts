import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import fc from "fast-check";
import { parse as shParse } from "sh-syntax";
import { describe, expect, it } from "vitest";
import { type ParsedCommandLine, parseCommandLine } from "../../src/sandbox/policy-parts.js";
import { REPO } from "../helpers/workspace.js";

const WS = "/work/ws";
const HOME = "/home/tester";
const parse = (cmd: string, cwd = WS): ParsedCommandLine => parseCommandLine(cmd, { cwd, home: HOME });
const programs = (cmd: string) => parse(cmd).parts.map((p) => p.program);
const rules = (cmd: string) => parse(cmd).problems.map((p) => p.rule);

describe("parseCommandLine: lists, pipelines and grouping", () => {
  it("finds every command behind ; && || | & and newlines", () => {
    expect(programs("a && b || c | d & e; f\ng")).toEqual(["a", "b", "c", "d", "e", "f", "g"]);
  });

  it("finds commands in subshells, groups, if/for/while/until/case", () => {
    expect(programs("(a; b) | { c; d; }")).toEqual(["a", "b", "c", "d"]);
    expect(programs("if a; then b; elif c; then d; else e; fi")).toEqual(["a", "b", "c", "d", "e"]);
    expect(programs("for x in 1 2; do a $x; done; while b; do c; done; until d; do e; done")).toEqual(["a", "b", "c", "d", "e"]);
    expect(programs("case $x in a|b) c;; (*) d;& e) f;;& esac")).toEqual(["c", "d", "f"]);
    expect(programs("for ((i=0; i<$(a); i++)); do b; done")).toEqual(["a", "b"]);
    expect(programs("! a | b; time -p c")).toEqual(["a", "b", "c"]);
  });

  it("treats reserved words as words outside command position", () => {
    const p = parse("echo if then done } {").parts[0]!;
    expect(p.argv).toEqual(["echo", "if", "then", "done", "}", "{"]);
  });

  it("handles comments and line continuations", () => {
    expect(parse("echo a#b # sudo id").parts[0]!.argv).toEqual(["echo", "a#b"]);
    expect(parse("ec\\\nho hi").parts[0]!.argv).toEqual(["echo", "hi"]);
  });
});

describe("parseCommandLine: quoting and expansion", () => {
  it("removes quotes the way bash does", () => {
    const p = parse(`echo "sudo" s''udo \\sudo $'\\x73\\165do' $"x" 'a b' "c\\"d" 'e\\f'`).parts[0]!;
    expect(p.argv).toEqual(["echo", "sudo", "sudo", "sudo", "sudo", "x", "a b", 'c"d', "e\\f"]);
    expect(p.words.slice(1).every((w) => w.literal)).toBe(true);
  });

  it("reads the program name after quote removal", () => {
    for (const cmd of [`"sudo" id`, `s''udo id`, `\\sudo id`, `$'\\x73udo' id`, `/usr/bin/sudo id`, `'/usr/bin/sudo' id`]) {
      expect(parse(cmd).parts[0]!.program, cmd).toBe("sudo");
    }
    expect(parse("/usr/bin/sudo id").parts[0]!.path).toBe("/usr/bin/sudo");
    expect(parse("./node_modules/.bin/vitest run").parts[0]).toMatchObject({ program: "vitest", path: `${WS}/node_modules/.bin/vitest` });
  });

  it("expands braces and tildes", () => {
    expect(parse("echo {a,b}{1..2} x{,y} {c..a}").parts[0]!.argv).toEqual(["echo", "a1", "a2", "b1", "b2", "x", "xy", "c", "b", "a"]);
    expect(parse("echo ~ ~/x a~").parts[0]!.argv).toEqual(["echo", HOME, `${HOME}/x`, "a~"]);
    expect(parse("echo '{a,b}' {a}").parts[0]!.argv).toEqual(["echo", "{a,b}", "{a}"]);
  });

  it("marks globs and expansions as not literal, keeping patterns as candidates", () => {
    const [, glob, quoted, variable] = parse(`ls src/*.ts "src/*.ts" "$X"`).parts[0]!.words;
    expect(glob).toMatchObject({ literal: false, glob: true, candidates: [{ text: "src/*.ts", glob: true }] });
    expect(quoted).toMatchObject({ literal: true, glob: false, candidates: [{ text: "src/*.ts", glob: false }] });
    expect(variable).toMatchObject({ literal: false, candidates: null });
  });

  it("follows variables assigned literal values and for-loop lists", () => {
    const rm = parse(`d=build; rm -rf "$d/out" $HOME/x "$PWD"`).parts.find((p) => p.program === "rm")!;
    expect(rm.words.slice(2).map((w) => w.candidates)).toEqual([
      [{ text: "build/out", glob: false }],
      [{ text: `${HOME}/x`, glob: false }],
      [{ text: WS, glob: false }],
    ]);
    const sed = parse(`for f in src/*.ts lib/a.ts; do sed -i s/a/b/ "$f"; done`).parts[0]!;
    expect(sed.words[3]!.candidates).toEqual([
      { text: "src/*.ts", glob: true },
      { text: "lib/a.ts", glob: false },
    ]);
    // Assigned inside the loop: unknown in the loop, since it may run many times.
    expect(parse(`x=a; for i in 1 2; do rm -rf $x; x=/; done`).parts.find((p) => p.program === "rm")!.words[2]!.candidates).toBeNull();
  });

  it("carries eval's assignments forward (x=build; eval x=/; rm -rf $x)", () => {
    const rm = parse(`x=build; eval "x=/"; rm -rf $x`).parts.find((p) => p.program === "rm")!;
    expect(rm.words[2]!.candidates).toEqual([{ text: "/", glob: false }]);
  });
});

describe("parseCommandLine: substitutions and code strings are commands too", () => {
  it("finds commands in $(), backticks, ${…}, $((…)), <(), >() and arrays", () => {
    const r = parse("echo $(a $(b) `c`) ${x:-$(d)} $(( $(e) + 1 )) <(f) >(g) && h=(1 $(i))");
    expect(r.parts.map((p) => p.program).sort()).toEqual(["", "a", "b", "c", "d", "e", "echo", "f", "g", "i"]);
    expect(r.parts.find((p) => p.program === "b")!.via).toEqual(["$()", "$()"]);
    expect(r.parts.find((p) => p.program === "f")!.via).toEqual(["<()"]);
  });

  it("parses bash -c, sh -c, eval, su -c, trap, watch and env -S strings recursively", () => {
    const r = parse(`bash -c "sh -c 'eval \\"sudo id\\"'"`);
    expect(r.parts.map((p) => [p.program, p.via.join(" > ")])).toEqual([
      ["bash", ""],
      ["sh", "bash -c"],
      ["eval", "bash -c > sh -c"],
      ["sudo", "bash -c > sh -c > eval"],
      ["id", "bash -c > sh -c > eval > sudo"],
    ]);
    expect(programs(`bash -euo pipefail -c 'a; b'`)).toEqual(["bash", "a", "b"]);
    expect(programs("trap 'a' EXIT; watch -n 1 b c; env -S 'd e'; su -c 'f' root")).toEqual(["trap", "a", "watch", "b", "env", "d", "su", "f"]);
  });

  it("reads code a shell gets on stdin from echo, printf, here-strings and here-documents", () => {
    expect(programs("echo 'a; b' | bash")).toEqual(["echo", "bash", "a", "b"]);
    expect(programs("bash <<< 'c'")).toEqual(["bash", "c"]);
    expect(programs("sh <<'EOF'\nd\nEOF")).toEqual(["sh", "d"]);
    expect(programs("cat <<EOF | sh\ne\nEOF")).toEqual(["cat", "sh", "e"]);
    const pipe = parse("curl x | tee y | sh").parts.find((p) => p.program === "sh")!;
    expect(pipe.stdin).toEqual({ kind: "pipe", upstream: ["curl", "tee"], text: null });
  });

  it("unwraps env, command, exec, nohup, nice, timeout, stdbuf, setsid, sudo, xargs, npx and find -exec", () => {
    const r = parse(
      "env -i X=1 -- a; command -p b; exec -a n c; nohup d & nice -n 5 e; timeout -s KILL 5 f; stdbuf -oL g; setsid h; sudo -u root i; xargs -0 -n1 j; npx -y k; find . -name x -exec l {} \\;",
    );
    expect(r.parts.filter((p) => p.via.length).map((p) => `${p.via.at(-1)}:${p.program}`)).toEqual([
      "env:a",
      "command:b",
      "exec:c",
      "nohup:d",
      "nice:e",
      "timeout:f",
      "stdbuf:g",
      "setsid:h",
      "sudo:i",
      "xargs:j",
      "npx:k",
      "find -exec:l",
    ]);
    expect(r.parts.find((p) => p.program === "a")!.assignments.map((a) => a.name)).toEqual(["X"]);
    expect(r.parts.find((p) => p.program === "j")!.words.at(-1)).toMatchObject({ literal: false, candidates: null });
    expect(r.parts.find((p) => p.program === "l")!.words[1]!.below).toEqual({ bases: [{ text: ".", glob: false }], names: ["x"] });
    expect(programs("command -v sudo")).toEqual(["command"]);
  });
});

describe("parseCommandLine: redirections", () => {
  it("records targets, whether they write, and here-document bodies", () => {
    const r = parse("cmd 2>&1 >/dev/null 3>>log <in &>all 4<>rw >&out <<<'s'");
    expect(r.redirects.map((x) => [x.op, x.fd, x.target.text, x.write, x.read])).toEqual([
      [">&", 2, "1", false, false],
      [">", null, "/dev/null", true, false],
      [">>", 3, "log", true, false],
      ["<", null, "in", false, true],
      ["&>", null, "all", true, false],
      ["<>", 4, "rw", true, true],
      [">&", null, "out", true, false],
      ["<<<", null, "s", false, false],
    ]);
    expect(r.redirects.every((x) => x.part === 0)).toBe(true);
  });

  it("reads here-documents (quoted, unquoted, <<-) after the line that opens them", () => {
    const r = parse("cat <<EOF > out; cat <<-'X'\nhello $(id)\nEOF\n\tbody $(nope)\n\tX\necho after");
    expect(r.parts.map((p) => p.program)).toEqual(["id", "cat", "cat", "echo"]);
    expect(r.redirects.filter((x) => x.heredoc !== null).map((x) => x.heredoc)).toEqual(["hello $(id)\n", "body $(nope)\n"]);
    expect(r.redirects.find((x) => x.op === ">")!.target.text).toBe("out");
  });

  it("keeps redirections of compound commands and of bare assignments", () => {
    const r = parse("{ a; } > x; X=1 >> y; > z");
    expect(r.redirects.map((x) => [x.target.text, x.part === null ? "compound" : r.parts[x.part]!.program])).toEqual([
      ["x", "compound"],
      ["y", ""],
      ["z", ""],
    ]);
  });
});

describe("parseCommandLine: working directory", () => {
  it("follows cd through && and ; (where cd may have failed)", () => {
    const r = parse("cd src && ls; cd /tmp; pwd; (cd /x); cat");
    expect(r.parts.map((p) => [p.program, p.cwd])).toEqual([
      ["cd", [WS]],
      ["ls", [`${WS}/src`]],
      ["cd", [WS, `${WS}/src`]],
      ["pwd", [WS, `${WS}/src`, "/tmp"]],
      ["cd", [WS, `${WS}/src`, "/tmp"]],
      ["cat", [WS, `${WS}/src`, "/tmp"]],
    ]);
    expect(parse("cd $X; ls").parts[1]!.cwd).toBeNull();
    expect(parse("cd; ls").parts[1]!.cwd).toEqual([WS, HOME]);
    expect(parse("env -C /opt a").parts[1]!.cwd).toEqual(["/opt"]);
  });
});

describe("parseCommandLine: what it cannot follow is a problem, never a pass", () => {
  it.each([
    ["$CMD args", "parse.dynamic-program"],
    ['"$x" y', "parse.dynamic-program"],
    ["$(echo ls) -la", "parse.dynamic-program"],
    ["l? -la", "parse.dynamic-program"],
    ["env $X id", "parse.dynamic-program"],
    ["timeout $T sudo id", "parse.dynamic-program"],
    ['bash -c "$code"', "parse.dynamic-code"],
    ["eval $x", "parse.dynamic-code"],
    ["f() { ls; }", "parse.unsupported"],
    ["function f { ls; }", "parse.unsupported"],
    ["coproc ls", "parse.unsupported"],
    ["echo ${x@P}", "parse.unsupported"],
    ["echo $[1+2]", "parse.unsupported"],
    ["IFS=: ; ls", "parse.ifs"],
    ['echo "unterminated', "parse.error"],
    ["echo 'unterminated", "parse.error"],
    ["echo $(unterminated", "parse.error"],
    ["echo `unterminated", "parse.error"],
    ["ls &&", "parse.error"],
    ["ls | | wc", "parse.error"],
    ["(ls", "parse.error"],
    ["echo )", "parse.error"],
    ["if true; then ls", "parse.error"],
    ["case x in a) ls", "parse.error"],
    ["{ ls }", "parse.error"],
    ["echo @(a|b)", "parse.error"],
    ["cat <", "parse.error"],
    ["find . -exec rm {}", "parse.error"],
    ["bash -c 'echo \"'", "parse.error"],
  ])("%s → %s", (cmd, rule) => {
    expect(rules(cmd)).toContain(rule);
  });

  it("gives up on code nested too deep", () => {
    let cmd = "sudo id";
    for (let i = 0; i < 12; i++) cmd = `bash -c ${JSON.stringify(cmd).replace(/\$/g, "\\$")}`;
    expect(rules(cmd)).toContain("parse.too-complex");
  });

  it("collects code stored in variables for later checks", () => {
    expect(parse(`x='a[$(sudo id)]'; echo $((x))`).latent).toEqual([{ text: "a[$(sudo id)]", where: "an assignment to x" }]);
    expect(parse(`read v <<< '$(rm -rf /)'`).latent.map((l) => l.text)).toEqual(["$(rm -rf /)\n"]);
  });

  it("never throws, whatever the input", () => {
    const alphabet = fc.constantFrom(..."ab $()`'\"\\;&|<>{}[]*?~=#!\n\t-/.0123456789cdefx@%^+,".split(""));
    fc.assert(
      fc.property(
        fc.array(alphabet, { maxLength: 60 }).map((a) => a.join("")),
        (s) => {
          const r = parseCommandLine(s, { cwd: WS, home: HOME });
          expect(Array.isArray(r.parts)).toBe(true);
        },
      ),
      { numRuns: 3000 },
    );
  });
});

describe("oracles for what is valid bash: bash -n, and sh-syntax (mvdan/sh)", () => {
  const corpus = fs
    .readFileSync(path.join(REPO, "test/fixtures/policy-corpus.txt"), "utf8")
    .split("\n")
    .map((l) => /^(?:allow|deny|ask)\s+\S+\s+(.*)$/.exec(l)?.[1])
    .filter((c): c is string => !!c && c !== "<<<")
    .map((c) => c.replace(/\\n/g, "\n"));
  const extra = [
    "ls &&",
    "(ls",
    "echo )",
    "if true; then ls",
    "{ ls }",
    "case x in a) ls",
    "echo 'x",
    "a | | b",
    "for x in; do :; done",
    "[[ a =~ ^(b|c)$ ]] && d",
    "x=(1 2) y[0]=3 z+=4 cmd",
    "cat <<-E\n\tx\n\tE",
    "echo $(( (1+2) * 3 ))",
    "echo $( (ls) )",
    "a=$(case x in x) echo;; esac)",
  ];
  const ourSyntaxError = (cmd: string) =>
    parseCommandLine(cmd, { cwd: WS, home: HOME }).problems.some((p) => p.rule === "parse.error" && p.reason.startsWith("bash syntax error:"));

  it("agrees with bash -n (parse only, nothing runs) on which lines are syntax errors", () => {
    // bash accepts extglob syntax only with `shopt -s extglob`, which the policy refuses to follow.
    const disagreements: string[] = [];
    for (const cmd of [...corpus, ...extra]) {
      const bash = spawnSync("bash", ["-n", "-c", cmd], { encoding: "utf8" }).status !== 0;
      if (ourSyntaxError(cmd) !== bash) disagreements.push(`${JSON.stringify(cmd)}: ours ${!bash}, bash ${bash}`);
    }
    expect(disagreements).toEqual([]);
  });

  it("agrees with sh-syntax, except where mvdan/sh differs from bash", async () => {
    // mvdan/sh always parses extglob; it rejects a here-document ended by end of input and
    // array assignments before a command, both of which bash accepts.
    const DIVERGES = new Set(["echo @(a|b)", "cat <<'EOF' > src/notes.md", "x=(1 2) y[0]=3 z+=4 cmd"]);
    const disagreements: string[] = [];
    for (const cmd of [...corpus, ...extra]) {
      let theirs = false;
      try {
        await shParse(cmd);
      } catch {
        theirs = true;
      }
      if (ourSyntaxError(cmd) !== theirs && !DIVERGES.has(cmd)) disagreements.push(`${JSON.stringify(cmd)}: ours ${ourSyntaxError(cmd)}, sh-syntax ${theirs}`);
    }
    expect(disagreements).toEqual([]);
  }, 60_000);
});
