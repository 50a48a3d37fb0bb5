import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadSuite } from "../../src/eval/task.js";

// A suite with one task folder, `task.json` as given; workspace/ and hidden/ present unless dropped.
function suiteWith(taskJson: unknown, opts: { folder?: string; drop?: "workspace" | "hidden" | "hidden-files" } = {}): string {
  const suite = fs.mkdtempSync(path.join(os.tmpdir(), "ll-suite-"));
  const dir = path.join(suite, opts.folder ?? "t1");
  fs.mkdirSync(path.join(dir, "workspace"), { recursive: true });
  fs.mkdirSync(path.join(dir, "hidden"), { recursive: true });
  fs.writeFileSync(path.join(dir, "workspace", "a.js"), "export const a = 1;\n");
  if (opts.drop !== "hidden-files") fs.writeFileSync(path.join(dir, "hidden", "a.test.js"), "// hidden\n");
  if (opts.drop === "workspace" || opts.drop === "hidden") fs.rmSync(path.join(dir, opts.drop), { recursive: true });
  fs.writeFileSync(path.join(dir, "task.json"), typeof taskJson === "string" ? taskJson : JSON.stringify(taskJson));
  return suite;
}

const good = { id: "t1", goal: "do it", language: "javascript", hiddenTest: "node --test" };

describe("eval task format", () => {
  it("loads a valid task with its limits defaulted", () => {
    const [t] = loadSuite(suiteWith(good));
    expect(t).toMatchObject({ id: "t1", hiddenTest: "node --test", limits: { maxSteps: 60, timeoutSec: 900 }, oracleFile: null });
  });

  it("names the file and the field of a bad task.json", () => {
    const file = (s: string) => path.join(s, "t1", "task.json");
    let s = suiteWith({ ...good, hiddenTest: undefined });
    expect(() => loadSuite(s)).toThrow(`task ${file(s)}: hiddenTest:`);
    s = suiteWith({ ...good, limits: { maxSteps: -1 } });
    expect(() => loadSuite(s)).toThrow(`task ${file(s)}: limits.maxSteps:`);
    s = suiteWith({ ...good, language: "cobol" });
    expect(() => loadSuite(s)).toThrow(`task ${file(s)}: language:`);
    s = suiteWith({ ...good, extra: 1 });
    expect(() => loadSuite(s)).toThrow(/t1\/task\.json: \(root\): Unrecognized key/);
    s = suiteWith("{ not json");
    expect(() => loadSuite(s)).toThrow(`task ${file(s)}: cannot read it (`);
  });

  it("refuses an id that is not its folder's name, and missing or empty parts", () => {
    expect(() => loadSuite(suiteWith(good, { folder: "other" }))).toThrow(/id "t1" must match its folder name "other"/);
    expect(() => loadSuite(suiteWith(good, { drop: "workspace" }))).toThrow(/the workspace\/ folder is missing/);
    expect(() => loadSuite(suiteWith(good, { drop: "hidden" }))).toThrow(/the hidden\/ folder is missing/);
    expect(() => loadSuite(suiteWith(good, { drop: "hidden-files" }))).toThrow(/hidden\/ is empty/);
  });

  it("errors carry the suite code and exit code 2; unknown --task ids are named", () => {
    const s = suiteWith(good);
    expect(() => loadSuite(s, ["t1", "nope"])).toThrow(/has no task "nope"/);
    try {
      loadSuite(path.join(s, "missing"));
    } catch (err) {
      expect(err).toMatchObject({ code: "EVAL_SUITE_INVALID", exitCode: 2 });
    }
    expect.assertions(2);
  });

  it("the shipped suite loads, and every task has an oracle", () => {
    const tasks = loadSuite(path.join(import.meta.dirname, "../../eval/suite"));
    expect(tasks.length).toBeGreaterThanOrEqual(4);
    for (const t of tasks) expect(t.oracleFile, t.id).not.toBeNull();
  });
});
