import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cleanupTemp } from "../../helpers/workspace.js";
import { decide, programsWorkspace, writes } from "./helpers.js";

let ws: string;
beforeAll(() => {
  ws = programsWorkspace();
});
afterAll(() => cleanupTemp());

describe("git", () => {
  it("allows reading, refuses add/commit/push/config and asks for what rewrites history", () => {
    expect(decide(ws, "git status")).toEqual(["allow", "git.read"]);
    expect(decide(ws, "git --no-pager log --oneline -5")).toEqual(["allow", "git.read"]);
    expect(decide(ws, "git branch --list 'f*'")).toEqual(["allow", "git.read"]);
    expect(decide(ws, "git config --get user.name")).toEqual(["allow", "git.read"]);
    expect(decide(ws, "git commit -m x")).toEqual(["deny", "git.commit"]);
    expect(decide(ws, "git push")).toEqual(["deny", "git.push"]);
    expect(decide(ws, "git config user.name x")).toEqual(["deny", "git.config"]);
    expect(decide(ws, "git -c core.pager=less log")).toEqual(["deny", "git.config-override"]);
    expect(decide(ws, "git remote add o u")).toEqual(["deny", "git.remote"]);
    expect(decide(ws, "git reset --hard")).toEqual(["ask", "git.write"]);
    expect(decide(ws, "git branch -D old")).toEqual(["ask", "git.write"]);
    expect(decide(ws, "git grep -O less foo")).toEqual(["ask", "git.exec"]);
    expect(decide(ws, "git frobnicate")).toEqual(["ask", "git.unknown"]);
  });

  it("uses the network only when allowed, and asks for repositories outside the workspace", () => {
    expect(decide(ws, "git fetch")).toEqual(["ask", "git.network"]);
    expect(decide(ws, "git fetch", { network: true })).toEqual(["allow", "git.network"]);
    expect(decide(ws, "git -C /tmp/other status")).toEqual(["ask", "git.outside"]);
    expect(decide(ws, "git -C sub status")).toEqual(["allow", "git.read"]);
  });

  it("writes the files its output options name", () => {
    expect(writes("git archive -o /tmp/a.tgz HEAD")).toEqual(["/tmp/a.tgz"]);
    expect(writes("git diff --output=../d.patch")).toEqual(["../d.patch"]);
    expect(writes("git status")).toEqual([]);
    expect(decide(ws, "git format-patch -o /etc/p HEAD~1")).toEqual(["deny", "write.outside"]);
  });
});
