import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cleanupTemp } from "../../helpers/workspace.js";
import { decide, programsWorkspace, writes } from "./helpers.js";

let ws: string;
beforeAll(() => {
  ws = programsWorkspace();
});
afterAll(() => cleanupTemp());

describe("archivers: tar", () => {
  it("writes the archive it creates and the directory it extracts into, in every option style", () => {
    expect(writes("tar czf /tmp/o.tgz src")).toEqual(["/tmp/o.tgz"]);
    expect(writes("tar -cf out.tar src")).toEqual(["out.tar"]);
    expect(writes("tar --create --file=o.tar src")).toEqual(["o.tar"]);
    expect(writes("tar -czf - src")).toEqual([]);
    expect(writes("tar xzf a.tgz -C sub")).toEqual(["sub"]);
    expect(writes("tar -x -f a.tar --directory=/etc")).toEqual(["/etc"]);
    expect(writes("tar xf a.tar")).toEqual(["."]);
    expect(writes("tar tf a.tar")).toEqual([]);
  });

  it("asks before tar runs a program, refuses absolute names, asks for extracting into the root", () => {
    expect(decide(ws, "tar xzf a.tgz -C sub")).toEqual(["allow", "program.allowed"]);
    expect(decide(ws, "tar xf a.tar -C sub --to-command=sh")).toEqual(["ask", "tar.exec"]);
    expect(decide(ws, "tar -I zstd -xf a.tar -C sub")).toEqual(["ask", "tar.exec"]);
    expect(decide(ws, "tar xf a.tar -C sub --checkpoint-action=exec=id")).toEqual(["ask", "tar.exec"]);
    expect(decide(ws, "tar xPf a.tar -C sub")).toEqual(["deny", "tar.absolute-names"]);
    expect(decide(ws, "tar xf a.tar")).toEqual(["ask", "tar.extract-protected"]);
    expect(decide(ws, "tar xf a.tar -C /etc")).toEqual(["deny", "write.outside"]);
  });
});

describe("archivers: compressors", () => {
  it("replace their operands, unless they write to stdout, list or test", () => {
    expect(writes("gzip a b")).toEqual(["a", "b"]);
    expect(writes("xz -d -S .x a.x")).toEqual(["a.x"]);
    expect(writes("gzip -c a")).toEqual([]);
    expect(writes("zstd --test a.zst")).toEqual([]);
    expect(decide(ws, "gzip /etc/hosts")).toEqual(["deny", "write.outside"]);
    expect(decide(ws, "zcat a.gz")).toEqual(["allow", "program.allowed"]);
  });
});
