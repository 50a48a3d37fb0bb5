import fs from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { CONFIG_FILE, loadConfig, parseConfig, policyFromConfig } from "../../src/config.js";
import { ConfigError } from "../../src/errors.js";
import { DEFAULT_POLICY, evaluatePolicy } from "../../src/sandbox/policy.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

afterAll(() => cleanupTemp());

/** The ConfigError message for a config value. */
function errorOf(value: unknown): string {
  try {
    parseConfig(value);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).code).toBe("CONFIG_INVALID");
    return (err as Error).message;
  }
  throw new Error("expected a ConfigError");
}

describe("ledgerloop.config.json: loading", () => {
  it("means no settings when the file is absent, and the default policy", () => {
    const ws = tempWorkspace();
    expect(loadConfig(ws)).toEqual({});
    expect(policyFromConfig(loadConfig(ws))).toEqual({ ...DEFAULT_POLICY });
  });

  it("reads the sandbox section and merges the policy over the defaults", () => {
    const ws = tempWorkspace(undefined, {
      [CONFIG_FILE]: JSON.stringify({
        $schema: "./schema.json",
        sandbox: {
          network: true,
          policy: {
            allow: ["terraform plan"],
            deny: [{ id: "no-docker-rm", program: ["docker", "podman"], args: ["rm"], reason: "leave containers alone" }],
            ask: [{ pattern: "\\bdeploy\\b", reason: "deploying needs a human" }],
          },
        },
      }),
    });
    const policy = policyFromConfig(loadConfig(ws));
    expect(policy).toMatchObject({
      allowNetwork: true,
      allow: ["terraform plan"],
      deny: [{ id: "no-docker-rm", program: ["docker", "podman"], args: ["rm"], reason: "leave containers alone" }],
      ask: [{ id: "user.ask.0", pattern: "\\bdeploy\\b" }],
    });
    expect(policyFromConfig(loadConfig(ws), { allowNetwork: false }).allowNetwork).toBe(false);
    const ctx = { workspace: ws, home: "/home/tester" };
    expect(evaluatePolicy("podman rm -f web", policy, ctx)).toMatchObject({ decision: "deny", rule: "no-docker-rm", reason: "leave containers alone" });
    expect(evaluatePolicy("terraform plan -out x", policy, ctx).decision).toBe("allow");
    expect(evaluatePolicy("npm run deploy", policy, ctx)).toMatchObject({ decision: "ask", rule: "user.ask.0" });
    expect(evaluatePolicy("npm install", policy, ctx).decision).toBe("allow");
  });

  it("reports unreadable and malformed files with their path", () => {
    const ws = tempWorkspace(undefined, { [CONFIG_FILE]: "{ sandbox: " });
    expect(() => loadConfig(ws)).toThrow(ConfigError);
    expect(() => loadConfig(ws)).toThrow(new RegExp(`${path.join(ws, CONFIG_FILE).replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")} is not valid JSON`));
    expect(() => loadConfig(ws, "other.json")).toThrow(/cannot read .*other\.json/);
  });

  it("is protected from the commands it configures", () => {
    const ws = tempWorkspace(undefined, { [CONFIG_FILE]: "{}" });
    fs.mkdirSync(path.join(ws, "sub"));
    const v = evaluatePolicy(`echo '{"sandbox":{"policy":{"allow":["sudo"]}}}' > ../${CONFIG_FILE}`, DEFAULT_POLICY, {
      workspace: ws,
      cwd: path.join(ws, "sub"),
    });
    expect(v).toMatchObject({ decision: "deny", rule: "write.protected" });
  });
});

describe("ledgerloop.config.json: errors name the bad field", () => {
  it.each([
    [{ sanbox: {} }, `(top level): unknown key "sanbox" (known: $schema, sandbox, prices, summaryModel, tools, mcpServers)`],
    [{ sandbox: { polcy: {} } }, `sandbox: unknown key "polcy" (known: network, policy)`],
    [{ sandbox: { network: "yes" } }, "sandbox.network: Invalid input: expected boolean, received string"],
    [{ sandbox: { policy: { default: "maybe" } } }, `sandbox.policy.default: Invalid option: expected one of "ask"|"deny"`],
    [{ sandbox: { policy: { allow: "npm" } } }, "sandbox.policy.allow: Invalid input: expected array, received string"],
    [{ sandbox: { policy: { allow: ["npm", ""] } } }, "sandbox.policy.allow[1]:"],
    [{ sandbox: { policy: { deny: [{ program: "rm" }] } } }, "sandbox.policy.deny[0].reason: is required (expected string)"],
    [{ sandbox: { policy: { deny: [{ reason: "x" }] } } }, "sandbox.policy.deny[0]: a rule needs `program` or `pattern` (or both)"],
    [
      { sandbox: { policy: { deny: [{ program: "rm", reason: "x", when: 1 }] } } },
      `sandbox.policy.deny[0]: unknown key "when" (known: id, program, args, pattern, reason)`,
    ],
    [{ sandbox: { policy: { ask: [{ pattern: "(", reason: "x" }] } } }, "sandbox.policy.ask[0].pattern: is not a valid regular expression"],
    [{ sandbox: { policy: { ask: [{ id: "has space", program: "x", reason: "x" }] } } }, "sandbox.policy.ask[0].id: use letters, digits"],
    [{ sandbox: { policy: { writablePaths: ["tmp/x"] } } }, "sandbox.policy.writablePaths[0]: must be an absolute path"],
    [{ sandbox: { policy: { writablePaths: ["/"] } } }, "sandbox.policy.writablePaths[0]: cannot be `/`"],
    [{ sandbox: { policy: { protectedPaths: ["../x"] } } }, "sandbox.policy.protectedPaths[0]: must be a path inside the workspace"],
    [{ sandbox: { policy: { workspacePrograms: true } } }, "sandbox.policy.workspacePrograms: Invalid option"],
    [[], "(top level): Invalid input: expected object, received array"],
  ])("%j", (value, message) => {
    const msg = errorOf(value);
    expect(msg.startsWith(`${CONFIG_FILE}: `)).toBe(true);
    expect(msg).toContain(message);
  });
});
