import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cleanupTemp } from "../../helpers/workspace.js";
import { decide, programsWorkspace, writes } from "./helpers.js";

let ws: string;
beforeAll(() => {
  ws = programsWorkspace();
});
afterAll(() => cleanupTemp());

describe("build, test, lint and format tools", () => {
  it("write what their output options name", () => {
    expect(writes("tsc --outDir dist -p .")).toEqual(["dist"]);
    expect(writes("gcc -o bin/a a.c")).toEqual(["bin/a"]);
    expect(writes("vitest run --outputFile.junit=r.xml")).toEqual(["r.xml"]);
    expect(writes("esbuild a.ts --outfile=out.js")).toEqual(["out.js"]);
    expect(writes("pytest --junitxml r.xml")).toEqual(["r.xml"]);
    expect(decide(ws, "tsc --outDir /etc/out")).toEqual(["deny", "write.outside"]);
  });

  it("formatters write their operands only when told to", () => {
    expect(writes("prettier --check src")).toEqual([]);
    expect(writes("prettier --write src a.ts")).toEqual(["src", "a.ts"]);
    expect(writes("eslint --fix src -o report.txt")).toEqual(["src", "report.txt"]);
    expect(writes("black -l 100 src -")).toEqual(["src"]);
    expect(writes("gofmt -l .")).toEqual([]);
    expect(writes("gofmt -w a.go")).toEqual(["a.go"]);
    expect(writes("ruff format src")).toEqual(["src"]);
    expect(writes("ruff check src")).toEqual([]);
    expect(decide(ws, "prettier --write ../other")).toEqual(["deny", "write.outside"]);
  });

  it("allow make with the workspace's makefiles; ask for makefile text from elsewhere", () => {
    expect(decide(ws, "make -j4 test")).toEqual(["allow", "program.allowed"]);
    expect(decide(ws, "make -f /tmp/x.mk")).toEqual(["ask", "make.makefile"]);
    expect(decide(ws, "make --eval='x:;id'")).toEqual(["ask", "make.makefile"]);
    expect(decide(ws, "gmake -f -")).toEqual(["ask", "make.makefile"]);
  });
});
