/**
 * Golden decisions: every command line the policy, parser and attack suites feed to the policy
 * (test/fixtures/policy-commands.jsonl, recorded by test/sandbox/golden/collect.setup.ts) plus
 * generated option permutations (golden/variants.ts), each evaluated under several policies and
 * levels, must get exactly the verdict stored in test/fixtures/policy-decisions.jsonl: decision,
 * rule, reason and every part. It pins the policy's behaviour while its rules move between files.
 *
 * Regenerate the fixture only on purpose (a decision meant to change):
 *   POLICY_GOLDEN_WRITE=1 npx vitest run test/sandbox/policy-golden.test.ts
 * Re-record the command list (after adding tests to the suites):
 *   POLICY_COLLECT=/tmp/cmds.jsonl npx vitest run --config test/sandbox/golden/collect.config.ts \
 *     test/sandbox/policy*.test.ts test/sandbox/credentials.test.ts test/sandbox/attack*.test.ts
 *   then `node test/sandbox/golden/dedupe.mjs /tmp/cmds.jsonl > test/fixtures/policy-commands.jsonl`.
 */
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_POLICY, evaluatePolicy, type PolicyVerdict, resolvePolicy, type SandboxPolicy } from "../../src/sandbox/policy.js";
import { cleanupTemp, REPO, tempWorkspace } from "../helpers/workspace.js";
import { generatedVariants } from "./golden/variants.js";

const COMMANDS = path.join(REPO, "test/fixtures/policy-commands.jsonl");
const DECISIONS = path.join(REPO, "test/fixtures/policy-decisions.jsonl");
const HOME = "/home/tester";

interface Recorded {
  source: string;
  command: string;
  policy: SandboxPolicy | null;
  level: "bwrap" | "unshare" | "none" | null;
  cwd: string | null;
}

const NAMED: Record<string, SandboxPolicy> = {
  default: { ...DEFAULT_POLICY },
  network: resolvePolicy({}, { allowNetwork: true }),
  strict: resolvePolicy({
    default: "deny",
    allow: ["terraform plan", "docker", "git push origin main", "./tools/*"],
    deny: [{ id: "no-docker-rm", program: "docker", args: ["rm"], reason: "containers are removed by the user" }],
    ask: [
      { program: "make", args: ["deploy"], reason: "deploying needs a human" },
      { pattern: "--force", reason: "forced" },
    ],
    workspacePrograms: "ask",
    protectedPaths: ["secrets/**", "*.pem"],
  }),
};

/** One evaluation: the command, the policy (named or as recorded), the level and the cwd. */
interface Case {
  command: string;
  key: string;
  policy: SandboxPolicy;
  level: Recorded["level"];
  cwd: string | null;
}

function cases(): Case[] {
  const recorded: Recorded[] = fs
    .readFileSync(COMMANDS, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Recorded);
  const out: Case[] = [];
  const seen = new Set<string>();
  const add = (c: Case) => {
    const id = `${c.key}\0${c.command}`;
    if (!seen.has(id)) {
      seen.add(id);
      out.push(c);
    }
  };
  for (const r of recorded) {
    if (r.policy) {
      const h = crypto.createHash("sha256").update(JSON.stringify(r.policy)).digest("hex").slice(0, 8);
      add({ command: r.command, key: `recorded:${h}:${r.level ?? "-"}:${r.cwd ?? "-"}`, policy: r.policy, level: r.level, cwd: r.cwd });
    }
  }
  // The parser suite's inputs (many of them random strings from property tests) under the default policy only.
  for (const r of recorded) if (r.source === "parseCommandLine") add({ command: r.command, key: "default", policy: NAMED.default!, level: null, cwd: null });
  const all = [...new Set([...recorded.filter((r) => r.source !== "parseCommandLine").map((r) => r.command), ...generatedVariants()])];
  for (const command of all) {
    add({ command, key: "default", policy: NAMED.default!, level: null, cwd: null });
    add({ command, key: "network", policy: NAMED.network!, level: null, cwd: null });
    add({ command, key: "strict", policy: NAMED.strict!, level: null, cwd: null });
    add({ command, key: "default:none:sub", policy: NAMED.default!, level: "none", cwd: "sub" });
  }
  return out.sort((a, b) => (a.command < b.command ? -1 : a.command > b.command ? 1 : a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

let ws: string;

beforeAll(() => {
  ws = tempWorkspace(undefined, {
    "src/x.ts": "export const x = 1;\n",
    "src/a.ts": "",
    "sub/x": "",
    "tools/run": "#!/bin/sh\n",
    "scripts/build.sh": "#!/bin/sh\necho build\n",
    "node_modules/.bin/vitest": "#!/bin/sh\n",
    ".git/hooks/pre-commit.sample": "#!/bin/sh\n",
    ".git/config": "[core]\n",
    ".ledgerloop/state.db": "",
    "secrets/key.txt": "",
  });
  fs.symlinkSync("/etc", path.join(ws, "etc-link"));
  fs.symlinkSync(path.join(ws, ".git"), path.join(ws, "g"));
});
afterAll(() => cleanupTemp());

/**
 * The verdict with this run's workspace path replaced, as one deterministic JSON line: in full for the
 * default policy; for the other policies and levels the decision, the rule and a hash of the full
 * verdict (reasons and parts), which keeps the fixture small and still catches any change.
 */
function serialize(c: Case, v: PolicyVerdict): string {
  // A reason may cut the workspace path short (`…/ll-test-L2x…`): its random name is masked too.
  const norm = (s: string) =>
    s
      .split(ws)
      .join("<WS>")
      .replace(/ll-test-[A-Za-z0-9]{1,6}/g, "ll-test-XXXXXX");
  const parts = v.parts.map((p) => [norm(p.text), p.program, p.via.map(norm), p.decision, p.rule, norm(p.reason)]);
  const full = JSON.stringify({ c: c.command, k: c.key, d: v.decision, r: v.rule, why: norm(v.reason), parts });
  if (c.key === "default") return full;
  return JSON.stringify({ c: c.command, k: c.key, d: v.decision, r: v.rule, h: crypto.createHash("sha256").update(full).digest("hex").slice(0, 16) });
}

function evaluate(c: Case): string {
  const command = c.command.split("<WS>").join(ws).split("<WSPARENT>").join(path.dirname(ws)).split("<HOME>").join(HOME);
  const v = evaluatePolicy(command, c.policy, { workspace: ws, home: HOME, ...(c.level ? { level: c.level } : {}), ...(c.cwd ? { cwd: c.cwd } : {}) });
  return serialize(c, v);
}

describe("policy golden decisions", () => {
  it("gives every recorded and generated command the verdict stored in the fixture", () => {
    const got = cases().map(evaluate);
    if (process.env.POLICY_GOLDEN_WRITE) {
      fs.writeFileSync(DECISIONS, `${got.join("\n")}\n`);
      return;
    }
    const want = fs.readFileSync(DECISIONS, "utf8").split("\n").filter(Boolean);
    expect(got.length).toBe(want.length);
    const diffs: string[] = [];
    for (let i = 0; i < want.length; i++) if (got[i] !== want[i]) diffs.push(`- ${want[i]}\n+ ${got[i]}`);
    expect(diffs.slice(0, 10).join("\n\n"), `${diffs.length} verdicts differ`).toBe("");
  });

  it("covers the corpus, the attack suites and a few hundred generated variants", () => {
    const recorded = fs
      .readFileSync(COMMANDS, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Recorded);
    const sources = new Set(recorded.map((r) => r.source));
    expect(sources).toEqual(new Set(["evaluatePolicy", "parseCommandLine", "sandbox.exec"]));
    expect(recorded.length).toBeGreaterThan(400);
    expect(generatedVariants().length).toBeGreaterThan(300);
  });
});
