import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeTargets } from "../../../src/sandbox/programs/registry.js";
import { cleanupTemp } from "../../helpers/workspace.js";
import { decide, firstPart, programsWorkspace, writes } from "./helpers.js";

let ws: string;
beforeAll(() => {
  ws = programsWorkspace();
});
afterAll(() => cleanupTemp());

describe("coreutils: what they write", () => {
  it("knows deletions, copies into directories and link names", () => {
    expect(writes("rm -rf build dist")).toEqual(["rm build", "rm dist"]);
    expect(writes("cp -r a b dest")).toEqual(["dest <- a,b"]);
    expect(writes("cp -t dest a b")).toEqual(["dest <- a,b"]);
    expect(writes("mv a b")).toEqual(["a", "b <- a"]);
    expect(writes("ln -s ../x link")).toEqual(["link <- ../x"]);
    // One operand: the link is made here under the target's basename.
    expect(writeTargets(firstPart("ln -s /opt/tool"))[0]!.word.candidates).toEqual([{ text: "tool", glob: false }]);
    expect(writes("dd if=/dev/zero of=out.bin")).toEqual(["out.bin"]);
    expect(writes("chmod -R 755 a b")).toEqual(["a", "b"]);
    expect(writes("chmod -x a")).toEqual(["a"]);
    expect(writes("split -l 10 in.txt part-")).toEqual(["part-"]);
    expect(writes("csplit in 2")).toEqual(["xx"]);
    expect(writes("sort -o sorted.txt in")).toEqual(["sorted.txt"]);
    expect(writes("mktemp -p /tmp")).toEqual(["/tmp"]);
    expect(writes("cat a b")).toEqual([]);
  });

  it("judges those writes by path", () => {
    expect(decide(ws, "rm -rf build")).toEqual(["allow", "program.allowed"]);
    expect(decide(ws, "rm -rf /")).toEqual(["deny", "rm.outside"]);
    expect(decide(ws, "rm -rf .git")).toEqual(["deny", "rm.protected"]);
    expect(decide(ws, "cp src/x.ts /etc/")).toEqual(["deny", "write.outside"]);
    expect(decide(ws, "cp x .git/hooks/pre-commit")).toEqual(["deny", "write.protected"]);
    expect(decide(ws, "touch etc-link/passwd")).toEqual(["deny", "write.outside"]);
  });
});

describe("coreutils: rules of their own", () => {
  it("refuses rm --no-preserve-root and setuid modes", () => {
    expect(decide(ws, "rm -rf --no-preserve-root build")).toEqual(["deny", "rm.no-preserve-root"]);
    expect(decide(ws, "chmod 4755 src/x.ts")).toEqual(["deny", "chmod.setuid"]);
    expect(decide(ws, "chmod u+s src/x.ts")).toEqual(["deny", "chmod.setuid"]);
    expect(decide(ws, "chmod 755 src/x.ts")).toEqual(["allow", "program.allowed"]);
  });

  it("asks for symlinks leaving the workspace and refuses hard links to files outside or protected", () => {
    expect(decide(ws, "ln -s /etc/passwd sub/p")).toEqual(["ask", "ln.symlink-outside"]);
    expect(decide(ws, "ln -s ../src/x.ts sub/x")).toEqual(["allow", "program.allowed"]);
    expect(decide(ws, "ln /etc/passwd sub/p")).toEqual(["deny", "ln.hardlink-outside"]);
    expect(decide(ws, "ln -s .git/config sub/c")).toEqual(["deny", "ln.symlink-outside"]);
  });
});
