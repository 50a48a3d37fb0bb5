import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_POLICY, evaluatePolicy } from "../../src/sandbox/policy.js";
import { expandGlob, globCanReach, globSegments } from "../../src/sandbox/policy-secret-globs.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

describe("globCanReach", () => {
  const reach = (dir: string, rest: string[], secret: Array<string | null>) => globCanReach(globSegments(dir, rest), secret);

  it("matches a secret or a path below it, not only an ancestor", () => {
    expect(reach("/home/u", [".aw?", "credentials"], ["home", "u", ".aws"])).toBe(true);
    expect(reach("/home/u", [".c*"], ["home", "u", ".config", "gh"])).toBe(false); // ~/.config itself, as a literal path
    expect(reach("/home/u", [".c*", "*"], ["home", "u", ".config", "gh"])).toBe(true);
    expect(reach("/home", ["*", ".ssh"], ["home", null, ".ssh"])).toBe(true);
    expect(reach("/home/u/ws", ["*.ts"], ["home", "u", ".ssh"])).toBe(false);
  });

  it("lets ** stand for any number of directories", () => {
    expect(reach("/home/u", ["**", "id_rsa"], ["home", "u", ".ssh"])).toBe(true);
    expect(reach("/", ["**"], ["proc", null, "environ"])).toBe(true);
  });
});

describe("globs against the file system", () => {
  let root: string;
  let home: string;
  let ws: string;

  beforeAll(() => {
    root = tempWorkspace(undefined, {
      "home/.ssh/id_rsa": "KEY\n",
      "home/notes/todo.txt": "x\n",
      "ws/src/a.ts": "",
    });
    home = path.join(root, "home");
    ws = path.join(root, "ws");
    // A name no pattern would take for a credential store: only following the link shows where it lands.
    fs.symlinkSync(".ssh", path.join(home, "keys"));
  });

  afterAll(() => cleanupTemp());

  const ev = (cmd: string) => evaluatePolicy(cmd, DEFAULT_POLICY, { workspace: ws, home });

  it("expands like bash, listing matches without resolving links", () => {
    expect(expandGlob(home, ["k*", "id_*"])).toEqual([path.join(home, "keys", "id_rsa")]);
    expect(expandGlob(home, ["**", "x"])).toBeNull();
  });

  it("asks when a match goes through a symlink into a credential store", () => {
    expect(ev("cat ~/k*/id_rsa")).toMatchObject({ decision: "ask", rule: "read.secrets" });
    expect(ev(`head ${home}/ke?s/*`)).toMatchObject({ decision: "ask", rule: "read.secrets" });
  });

  it("still allows globs that match nothing secret", () => {
    expect(ev("cat ~/notes/*.txt").decision).toBe("allow");
    expect(ev("cat src/*.ts").decision).toBe("allow");
  });
});
