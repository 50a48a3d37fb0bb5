import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { awkCall, scanSed, sedScripts } from "../../../src/sandbox/programs/text.js";
import { cleanupTemp } from "../../helpers/workspace.js";
import { decide, firstPart, programsWorkspace, writes } from "./helpers.js";

let ws: string;
beforeAll(() => {
  ws = programsWorkspace();
});
afterAll(() => cleanupTemp());

describe("sed", () => {
  it("finds its scripts and what they write and run", () => {
    expect(sedScripts(firstPart("sed -n -e 1p -e '$p' f")).map((w) => w.text)).toEqual(["1p", "$p"]);
    expect(sedScripts(firstPart("sed -i s/a/b/ f")).map((w) => w.text)).toEqual(["s/a/b/"]);
    expect(scanSed("s/a/b/w out.txt")).toMatchObject({ writes: ["out.txt"], exec: [], execPatternSpace: false });
    expect(scanSed("1e id\n/x/d")).toMatchObject({ exec: ["id"] });
    expect(scanSed("s/x/y/e")).toMatchObject({ execPatternSpace: true });
    expect(scanSed("s/x").unknown).toBe(true);
  });

  it("writes its files in place, and the files of `w`", () => {
    expect(writes("sed -i s/a/b/ f g")).toEqual(["f", "g"]);
    expect(writes("sed -i -e s/a/b/ f")).toEqual(["f"]);
    expect(writes("sed -n 1p f")).toEqual([]);
    expect(writes("sed 'w /tmp/w' f")).toEqual(["/tmp/w"]);
    expect(decide(ws, "sed -i s/a/b/ /etc/hosts")).toEqual(["deny", "write.outside"]);
  });

  it("asks before its script runs commands, and refuses a refused one", () => {
    expect(decide(ws, "sed 1e f")).toEqual(["ask", "sed.exec"]);
    expect(decide(ws, "sed 's/x/id/e' f")).toEqual(["ask", "sed.exec"]);
    expect(decide(ws, "sed '1e sudo id' f")).toEqual(["deny", "interp.inline-denied"]);
    expect(decide(ws, "sed -n '1,20p' src/x.ts")).toEqual(["allow", "program.allowed"]);
  });
});

describe("awk", () => {
  it("finds its program, files and the inplace extension", () => {
    expect(awkCall(firstPart("awk -F, '{print $1}' a b"))).toMatchObject({ program: { text: "{print $1}" }, inplace: false });
    expect(awkCall(firstPart("gawk -i inplace '{print}' f")).inplace).toBe(true);
    expect(awkCall(firstPart("awk -f prog.awk a")).program).toBeNull();
  });

  it("writes its redirected files and in-place files; checks what it passes to a shell", () => {
    expect(writes(`awk '{print > "out.txt"}' a`)).toEqual(["out.txt"]);
    expect(writes("gawk -i inplace '{print}' f")).toEqual(["f"]);
    expect(decide(ws, `awk '{print > "/etc/x"}' a`)).toEqual(["deny", "write.outside"]);
    expect(decide(ws, `awk 'BEGIN{system("sudo id")}'`)).toEqual(["deny", "interp.inline-denied"]);
    expect(decide(ws, "awk '{print $1}' a | sort")).toEqual(["allow", "program.allowed"]);
  });
});
