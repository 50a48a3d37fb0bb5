import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { interpreterCall, interpreterKind } from "../../../src/sandbox/programs/runtimes.js";
import { cleanupTemp } from "../../helpers/workspace.js";
import { decide, firstPart, programsWorkspace, writes } from "./helpers.js";

let ws: string;
beforeAll(() => {
  ws = programsWorkspace();
});
afterAll(() => cleanupTemp());

describe("runtimes", () => {
  it("know which interpreter a program is, by its normalized name", () => {
    expect(["python3.12", "node", "bun", "deno", "perl", "dash", "ls"].map(interpreterKind)).toEqual(["python", "node", "node", "node", "perl", "shell", null]);
  });

  it("read how an interpreter gets its code", () => {
    expect(interpreterCall(firstPart("python3 -u -c 'print(1)' x"), "python")).toMatchObject({ inline: [{ text: "print(1)" }], script: null });
    expect(interpreterCall(firstPart("python3 -m pytest -q"), "python")).toMatchObject({ module: "pytest" });
    expect(interpreterCall(firstPart("python3 -"), "python")).toMatchObject({ stdin: true });
    expect(interpreterCall(firstPart("node --require ./r.js app.js"), "node")).toMatchObject({ script: { text: "app.js" } });
    expect(interpreterCall(firstPart("node -p 1 -e 2"), "node").inline.map((w) => w.text)).toEqual(["1", "2"]);
    expect(interpreterCall(firstPart("deno eval 'Deno.exit()'"), "node").inline.map((w) => w.text)).toEqual(["Deno.exit()"]);
  });

  it("allow python3 and node; python3 -m venv writes its directory", () => {
    expect(decide(ws, "python3 -m pytest -q")).toEqual(["allow", "program.allowed"]);
    expect(decide(ws, "node --test test/")).toEqual(["allow", "program.allowed"]);
    expect(writes("python3 -m venv .venv")).toEqual([".venv"]);
    expect(decide(ws, "python3 -m venv /opt/venv")).toEqual(["deny", "write.outside"]);
    expect(decide(ws, `python3 -c "import os; os.system('sudo id')"`)).toEqual(["deny", "interp.inline-denied"]);
    expect(decide(ws, `node -e "require('child_process').execSync(x)"`)).toEqual(["ask", "interp.inline-exec"]);
  });
});
