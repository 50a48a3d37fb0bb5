import { describe, expect, it } from "vitest";
import { getopt, hasLong, leadingOptions, outputWrites, subcommand, takesValue, val } from "../../../src/sandbox/programs/options.js";
import { firstPart } from "./helpers.js";

const words = (cmd: string) => firstPart(cmd).words;
const texts = (ws: { text: string }[]) => ws.map((w) => w.text);

describe("getopt (GNU style)", () => {
  it("takes values from the table, attached or separate, and lets options follow operands", () => {
    const o = getopt(words("cp -t dest a -S .bak --target-directory=d2 b -- -c"), 1, { short: "tS", long: ["target-directory", "suffix"] });
    expect(texts(val(o, "t"))).toEqual(["dest"]);
    expect(texts(val(o, "S"))).toEqual([".bak"]);
    expect(texts(val(o, "target-directory"))).toEqual(["d2"]);
    expect(texts(o.operands)).toEqual(["a", "b", "-c"]);
  });

  it("reads clusters up to the first letter that takes a value", () => {
    const o = getopt(words("sed -nie s/a/b/ f"), 1, { short: "e" });
    expect([...o.short]).toEqual(["n", "i", "e"]);
    expect(texts(val(o, "e"))).toEqual(["s/a/b/"]);
    expect(texts(o.operands)).toEqual(["f"]);
  });

  it("expands abbreviated long options of the table and knows abbreviations by prefix", () => {
    const o = getopt(words("x --out file --recur"), 1, { long: ["output"] });
    expect(texts(val(o, "output"))).toEqual(["file"]);
    expect(hasLong(o, "recursive")).toBe(true);
    expect(hasLong(o, "remove")).toBe(false);
  });
});

describe("leadingOptions (wrappers)", () => {
  it("stops at the first operand and skips the values of lone letters and long names", () => {
    expect(leadingOptions(words("timeout -s KILL 5 ls"), 1, { short: "sk", long: ["signal"] })).toBe(3);
    expect(leadingOptions(words("timeout --signal KILL 5 ls"), 1, { short: "sk", long: ["signal"] })).toBe(3);
    expect(leadingOptions(words("timeout --signal=KILL 5 ls"), 1, { short: "sk", long: ["signal"] })).toBe(2);
    // A cluster carries its value: -oL is one word.
    expect(leadingOptions(words("stdbuf -oL ls"), 1, { short: "ioe" })).toBe(2);
    expect(leadingOptions(words("nice -5 ls"), 1, { short: "n", numeric: true })).toBe(2);
    expect(leadingOptions(words("nice -- -x"), 1, {})).toBe(2);
  });

  it("tells which option words take the next word as their value", () => {
    const table = { short: "nq", long: ["interval"] };
    expect(["-n", "-q", "--interval"].every((t) => takesValue(t, table))).toBe(true);
    expect(["-n5", "-x", "--interval=5", "--int", "-"].some((t) => takesValue(t, table))).toBe(false);
  });

  it("says when an option word is computed at run time", () => {
    expect(leadingOptions(words("sudo $OPT id"), 1, {})).toBe(-1);
  });
});

describe("subcommand and output options", () => {
  it("finds the first operand past options with values", () => {
    expect(subcommand(words("npm --prefix sub test"), 1, ["--prefix"])?.word.text).toBe("test");
    expect(subcommand(words("npm -- run"), 1)?.word.text).toBe("run");
    expect(subcommand(words("npm --silent"), 1)).toBeNull();
  });

  it("lists every file an output option names, vitest's --outputFile.json= form too", () => {
    const part = firstPart("vitest run --outputFile=a.xml --outputFile.json=b.json");
    expect(outputWrites(part, { long: ["outputFile"] }).map((t) => t.word.text)).toEqual(["a.xml", "b.json"]);
  });
});
