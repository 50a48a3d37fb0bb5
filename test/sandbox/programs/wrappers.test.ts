import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseCommandLine } from "../../../src/sandbox/policy-parts.js";
import { cleanupTemp } from "../../helpers/workspace.js";
import { decide, HOME, problems, programsWorkspace, reached, writes } from "./helpers.js";

let ws: string;
beforeAll(() => {
  ws = programsWorkspace();
});
afterAll(() => cleanupTemp());

describe("wrappers", () => {
  it("run the command after their options (and timeout's duration)", () => {
    expect(reached("timeout -s KILL 5 ls")).toEqual(["ls (timeout)"]);
    expect(reached("timeout --kill-after=1 5 ls")).toEqual(["ls (timeout)"]);
    expect(reached("nice -n 5 ls")).toEqual(["ls (nice)"]);
    expect(reached("nice -5 ls")).toEqual(["ls (nice)"]);
    expect(reached("stdbuf -o L ls")).toEqual(["ls (stdbuf)"]);
    expect(reached("ionice -c 3 ls")).toEqual(["ls (ionice)"]);
    expect(reached("nohup setsid ls")).toEqual(["setsid (nohup)", "ls (nohup → setsid)"]);
    // The program, not bash's `time` keyword.
    expect(reached("/usr/bin/time -o t.txt ls")).toEqual(["ls (time)"]);
    expect(problems("timeout $T ls")).toEqual(["parse.dynamic-program"]);
  });

  it("env: assignments and -C reach the command, -S is code, -u takes a name", () => {
    const parts = parseCommandLine("env -u HOME -C sub X=1 ls", { cwd: "/w", home: HOME }).parts;
    expect(parts[1]).toMatchObject({ program: "ls", via: ["env"], cwd: ["/w/sub"] });
    expect(parts[1]!.assignments.map((a) => a.text)).toEqual(["X=1"]);
    expect(reached("env -S 'ls -l'")).toEqual(["ls (env -S)"]);
    expect(problems("env $X ls")).toEqual(["parse.dynamic-program"]);
    expect(decide(ws, "env LD_PRELOAD=/x.so ls")).toEqual(["deny", "env.sensitive"]);
  });

  it("watch runs its words as code (or exec form with -x); flock runs its command or -c code", () => {
    expect(reached("watch -n 1 'ls; id'")).toEqual(["ls (watch)", "id (watch)"]);
    expect(reached("watch -x ls -l")).toEqual(["ls (watch)"]);
    expect(reached("flock -w 3 /tmp/l ls")).toEqual(["ls (flock)"]);
    expect(reached("flock /tmp/l -c 'id'")).toEqual(["id (flock -c)"]);
    expect(decide(ws, "timeout 5 sudo id")).toEqual(["deny", "priv.escalation"]);
  });

  it("time writes the file of -o", () => {
    expect(writes("/usr/bin/time -o /etc/t ls")).toEqual(["/etc/t"]);
    expect(decide(ws, "/usr/bin/time --output=/etc/t ls")).toEqual(["deny", "write.outside"]);
  });
});
