import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cleanupTemp } from "../../helpers/workspace.js";
import { decide, problems, programsWorkspace, reached } from "./helpers.js";

let ws: string;
beforeAll(() => {
  ws = programsWorkspace();
});
afterAll(() => cleanupTemp());

describe("shells", () => {
  it("walk the code of -c (past other options), of stdin, and of a script this line wrote", () => {
    expect(reached("bash -euo pipefail -c 'ls; id'")).toEqual(["ls (bash -c)", "id (bash -c)"]);
    expect(reached("sh -s <<'EOF'\nwhoami\nEOF")).toEqual(["whoami (stdin of sh)"]);
    expect(reached("echo 'sudo id' | bash")).toEqual(["bash ()", "sudo (stdin of bash)", "id (stdin of bash → sudo)"]);
    expect(reached("echo 'id' > s.sh; sh s.sh")).toEqual(["sh ()", "id (script s.sh)"]);
    expect(problems('bash -c "$CODE"')).toEqual(["parse.dynamic-code"]);
    expect(problems("bash -c")).toEqual(["parse.error"]);
  });

  it("refuses what reaches a refused command, and asks for scripts outside the workspace", () => {
    expect(decide(ws, "bash -c 'sudo id'")).toEqual(["deny", "priv.escalation"]);
    expect(decide(ws, "bash /tmp/x.sh")).toEqual(["ask", "shell.script"]);
    expect(decide(ws, "bash scripts/build.sh")).toEqual(["allow", "program.allowed"]);
  });
});

describe("builtins", () => {
  it("run what command, builtin, exec and trap are given", () => {
    expect(reached("command -p ls")).toEqual(["ls (command)"]);
    expect(reached("command -v ls")).toEqual([]);
    expect(reached("exec -a name ls")).toEqual(["ls (exec)"]);
    expect(reached("builtin echo x")).toEqual(["echo (builtin)"]);
    expect(reached("trap 'rm -f x' EXIT")).toEqual(["rm (trap)"]);
    expect(reached("trap -l")).toEqual([]);
  });

  it("refuse the ones that change how later commands are read or signal everything", () => {
    expect(decide(ws, "shopt -s expand_aliases")).toEqual(["deny", "shell.shopt"]);
    expect(decide(ws, "shopt -s globstar")).toEqual(["allow", "program.allowed"]);
    expect(decide(ws, "hash -p /bin/sh ls")).toEqual(["deny", "shell.hash"]);
    expect(decide(ws, "alias ls='rm -rf'")).toEqual(["ask", "shell.alias"]);
    expect(decide(ws, "kill -9 -1")).toEqual(["deny", "kill.all"]);
    expect(decide(ws, "kill $PPID")).toEqual(["deny", "kill.all"]);
    expect(decide(ws, "kill %1")).toEqual(["allow", "program.allowed"]);
  });
});
