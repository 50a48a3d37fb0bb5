import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_POLICY, evaluatePolicy, POLICY_RULES, resolvePolicy, type SandboxPolicy } from "../../src/sandbox/policy.js";
import { cleanupTemp, REPO, tempWorkspace } from "../helpers/workspace.js";

interface Case {
  line: number;
  policy: string;
  decision: string;
  rule: string;
  command: string;
}

/** Reads test/fixtures/policy-corpus.txt (format described at its top). */
function readCorpus(): Case[] {
  const lines = fs.readFileSync(path.join(REPO, "test/fixtures/policy-corpus.txt"), "utf8").split("\n");
  const cases: Case[] = [];
  let policy = "default";
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (!line.trim() || line.startsWith("#")) continue;
    const directive = /^@policy\s+(\S+)$/.exec(line);
    if (directive) {
      policy = directive[1]!;
      continue;
    }
    const m = /^(allow|deny|ask)\s+(\S+)\s+(.*)$/.exec(line);
    if (!m) throw new Error(`policy-corpus.txt:${i + 1}: cannot read ${JSON.stringify(line)}`);
    let command = m[3]!;
    if (command === "<<<") {
      const body: string[] = [];
      const start = i + 1;
      while (++i < lines.length && lines[i] !== ">>>") body.push(lines[i]!);
      if (i >= lines.length) throw new Error(`policy-corpus.txt:${start}: block without >>>`);
      command = body.join("\n");
    } else {
      command = command.replace(/\\n/g, "\n");
    }
    cases.push({ line: i + 1, policy, decision: m[1]!, rule: m[2]!, command });
  }
  return cases;
}

const POLICIES: Record<string, SandboxPolicy> = {
  default: { ...DEFAULT_POLICY },
  network: resolvePolicy({}, { allowNetwork: true }),
  strict: resolvePolicy({
    default: "deny",
    allow: ["terraform plan", "docker"],
    deny: [{ id: "no-docker-rm", program: "docker", args: ["rm"], reason: "containers are removed by the user" }],
    ask: [{ program: "make", args: ["deploy"], reason: "deploying needs a human" }],
  }),
};

const cases = readCorpus();
let ws: string;
const HOME = "/home/tester";

beforeAll(() => {
  ws = tempWorkspace(undefined, {
    "src/x.ts": "export const x = 1;\n",
    "scripts/build.sh": "#!/bin/sh\necho build\n",
    "node_modules/.bin/vitest": "#!/bin/sh\n",
    ".git/hooks/pre-commit.sample": "#!/bin/sh\n",
    ".git/config": "[core]\n",
    ".ledgerloop/state.db": "",
  });
  fs.symlinkSync("/etc", path.join(ws, "etc-link"));
});

afterAll(() => cleanupTemp());

describe("policy corpus", () => {
  it("has enough cases on both sides", () => {
    expect(cases.length).toBeGreaterThanOrEqual(120);
    expect(cases.filter((c) => c.decision === "allow").length).toBeGreaterThanOrEqual(40);
    expect(cases.filter((c) => c.decision !== "allow").length).toBeGreaterThanOrEqual(80);
  });

  it("only names rules the policy documents", () => {
    const custom = new Set(["no-docker-rm", "user.ask.0"]);
    const unknown = cases.filter((c) => c.rule !== "*" && !(c.rule in POLICY_RULES) && !custom.has(c.rule));
    expect(unknown.map((c) => `${c.line}: ${c.rule}`)).toEqual([]);
  });

  it.each(cases.map((c) => [`${c.line}: [${c.policy}] ${c.decision} ${c.rule} ${JSON.stringify(c.command)}`, c] as const))("%s", (_name, c) => {
    const v = evaluatePolicy(c.command, POLICIES[c.policy]!, { workspace: ws, home: HOME });
    const got = { decision: v.decision, rule: c.rule === "*" ? "*" : v.rule };
    expect(got, `reason: ${v.reason}\nparts: ${JSON.stringify(v.parts, null, 1)}`).toEqual({ decision: c.decision, rule: c.rule });
    expect(v.reason.length).toBeGreaterThan(0);
  });
});
