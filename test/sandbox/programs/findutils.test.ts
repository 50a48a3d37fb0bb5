import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { analyzeFind } from "../../../src/sandbox/programs/findutils.js";
import { cleanupTemp } from "../../helpers/workspace.js";
import { decide, firstPart, problems, programsWorkspace, reached, writes } from "./helpers.js";

let ws: string;
beforeAll(() => {
  ws = programsWorkspace();
});
afterAll(() => cleanupTemp());

describe("findutils: find", () => {
  it("reads start points, -name filters, -exec commands and -fprint files", () => {
    const f = analyzeFind(firstPart("find -L src test -name '*.ts' -exec wc -l {} + -fprint out.txt").words);
    expect(f.starts.map((s) => s.text)).toEqual(["src", "test"]);
    expect(f.names).toEqual(["*.ts"]);
    expect(f.execs.map((e) => e.words.map((w) => w.text))).toEqual([["wc", "-l", "{}"]]);
    expect(f.writes.map((w) => w.text)).toEqual(["out.txt"]);
    expect(analyzeFind(firstPart("find . -name a -o -name b").words).names).toEqual([]);
  });

  it("runs -exec/-execdir commands and judges -delete by the start points", () => {
    expect(reached("find . -exec grep -l x {} \\; -execdir rm {} +")).toEqual(["grep (find -exec)", "rm (find -execdir)"]);
    expect(problems("find . -exec ls {}")).toEqual(["parse.error"]);
    expect(writes("find build -delete")).toEqual(["rm build"]);
    expect(decide(ws, "find build -type f -delete")).toEqual(["allow", "program.allowed"]);
    expect(decide(ws, "find / -delete")).toEqual(["deny", "rm.outside"]);
    expect(decide(ws, "find . -exec sudo id \\;")).toEqual(["deny", "priv.escalation"]);
  });
});

describe("findutils: xargs", () => {
  it("runs its command (echo by default) with the input, skipping its options' values", () => {
    expect(reached("xargs -n 1 -P 4 rm")).toEqual(["rm (xargs)"]);
    expect(reached("xargs --max-args 2 -I{} cp {} dest")).toEqual(["cp (xargs)"]);
    expect(reached("xargs")).toEqual(["echo (xargs)"]);
    expect(problems("xargs $OPTS rm")).toEqual(["parse.dynamic-program"]);
    expect(decide(ws, "ls | xargs rm -rf")).toEqual(["deny", "rm.unknown-target"]);
  });
});
