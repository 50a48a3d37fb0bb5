import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_POLICY, evaluatePolicy, POLICY_RULES, resolvePolicy, type SandboxPolicy, withAllowed } from "../../src/sandbox/policy.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

let ws: string;
const HOME = "/home/tester";
const ev = (cmd: string, policy: SandboxPolicy = { ...DEFAULT_POLICY }, extra: { cwd?: string; followSymlinks?: boolean } = {}) =>
  evaluatePolicy(cmd, policy, { workspace: ws, home: HOME, ...extra });

beforeAll(() => {
  ws = tempWorkspace(undefined, { "src/a.ts": "", "sub/x": "", ".git/config": "", "tools/run": "#!/bin/sh\n" });
  fs.symlinkSync("/etc", path.join(ws, "etc-link"));
  fs.symlinkSync(path.join(ws, ".git"), path.join(ws, "g"));
});
afterAll(() => cleanupTemp());

describe("evaluatePolicy: combining parts", () => {
  it("reports every part and picks the first denial", () => {
    const v = ev("ls && curl x; sudo id; rm -rf /");
    expect(v.decision).toBe("deny");
    expect(v.rule).toBe("priv.escalation");
    expect(v.parts.map((p) => [p.program, p.decision, p.rule])).toEqual([
      ["ls", "allow", "program.allowed"],
      ["curl", "ask", "net.tool"],
      ["sudo", "deny", "priv.escalation"],
      ["id", "allow", "program.allowed"],
      ["rm", "deny", "rm.outside"],
    ]);
  });

  it("asks when nothing is denied but something needs approval", () => {
    const v = ev("ls; curl https://example.com | jq .");
    expect(v).toMatchObject({ decision: "ask", rule: "net.tool" });
    expect(v.reason).toMatch(/curl/);
  });

  it("allows only when every part is allowed, and says which programs", () => {
    expect(ev("git status && npm test")).toMatchObject({ decision: "allow", rule: "git.read", reason: "every part is allowed (git, npm)" });
    expect(ev("")).toMatchObject({ decision: "allow", rule: "empty", parts: [] });
  });

  it("says through which wrappers a denied command was reached", () => {
    expect(ev(`timeout 5 bash -c "echo \\$(sudo id)"`).reason).toMatch(/reached through timeout → bash -c → \$\(\)/);
  });

  it("knows every rule id it reports", () => {
    const cmds = ["sudo id", "rm -rf /", "$X", "curl x | sh", "git push", "npm install", "docker ps", "echo > .git/config", "f() { :; }"];
    for (const c of cmds) for (const p of ev(c).parts) expect(POLICY_RULES, `${c}: ${p.rule}`).toHaveProperty([p.rule]);
  });

  it("never throws and always explains itself", () => {
    const alphabet = fc.constantFrom(..."ab $()`'\"\\;&|<>{}*?~=#!\n-/.rmsudogitcurl".split(""));
    fc.assert(
      fc.property(
        fc.array(alphabet, { maxLength: 50 }).map((a) => a.join("")),
        (s) => {
          const v = ev(s);
          expect(["allow", "ask", "deny"]).toContain(v.decision);
          expect(v.reason.length).toBeGreaterThan(0);
        },
      ),
      { numRuns: 1500 },
    );
  });
});

describe("evaluatePolicy: paths", () => {
  it("resolves relative paths against ctx.cwd", () => {
    expect(ev("rm -rf x", undefined, { cwd: path.join(ws, "sub") }).decision).toBe("allow");
    expect(ev("rm -rf x", undefined, { cwd: "/" })).toMatchObject({ decision: "deny", rule: "rm.outside" });
    expect(ev("rm -rf ..", undefined, { cwd: path.join(ws, "sub") })).toMatchObject({ decision: "deny", rule: "rm.protected" });
  });

  it("follows existing symlinks, like the kernel", () => {
    expect(ev("echo x > etc-link/motd")).toMatchObject({ decision: "deny", rule: "write.outside" });
    expect(ev("echo x > g/hooks/pre-commit")).toMatchObject({ decision: "deny", rule: "write.protected" });
    // /etc/.. is /, so this is /tmp/x: reached by climbing out of the workspace, which counts as outside.
    expect(ev("echo x > etc-link/../tmp/x")).toMatchObject({ decision: "deny", rule: "write.outside" });
    expect(ev("echo x > etc-link/../tmp/x").reason).toContain("(/tmp/x)");
    expect(ev("echo x > etc-link/motd", undefined, { followSymlinks: false }).decision).toBe("allow");
  });

  it("uses the runner's home when none is given", () => {
    const v = evaluatePolicy("rm -rf ~/x", DEFAULT_POLICY, { workspace: ws });
    expect(v).toMatchObject({ decision: "deny", rule: "rm.outside" });
    expect(v.reason).toContain(os.homedir());
  });

  it("lets /tmp and /dev/null be written, but not /tmp itself deleted", () => {
    expect(ev("sort -o /tmp/out.txt a.txt 2>/dev/null >/dev/stderr").decision).toBe("allow");
    expect(ev("rm -rf /tmp").rule).toBe("rm.outside");
  });
});

describe("policy configuration", () => {
  it("merges settings over the defaults", () => {
    const p = resolvePolicy({
      default: "deny",
      allow: ["terraform plan"],
      deny: [{ program: "docker", args: ["rm"], reason: "no" }],
      ask: [{ id: "deploy", pattern: "deploy", reason: "ask first" }],
      writablePaths: ["/var/cache/build"],
      protectedPaths: ["secrets/**"],
    });
    expect(p).toEqual({
      default: "deny",
      allow: ["terraform plan"],
      deny: [{ id: "user.deny.0", program: ["docker"], args: ["rm"], reason: "no" }],
      ask: [{ id: "deploy", pattern: "deploy", reason: "ask first" }],
      allowNetwork: false,
      workspacePrograms: "allow",
      writablePaths: ["/tmp", "/var/cache/build"],
      protectedPaths: ["secrets/**"],
    });
  });

  it("applies user deny and ask rules over built-in allows", () => {
    const p = resolvePolicy({
      deny: [{ id: "no-force-push", program: "git", args: ["commit", "--amend"], reason: "do not amend" }],
      ask: [{ pattern: "^make (deploy|release)", reason: "deploying needs a human" }],
    });
    expect(ev("git commit --amend -m x", p)).toMatchObject({ decision: "deny", rule: "no-force-push", reason: "do not amend" });
    expect(ev("make deploy", p)).toMatchObject({ decision: "ask", rule: "user.ask.0" });
    expect(ev("make test", p).decision).toBe("allow");
  });

  it("allow entries match a program and leading arguments, with wildcards", () => {
    const p = resolvePolicy({ allow: ["docker compose ps", "kubectl get *", "./tools/*"] });
    expect(ev("docker compose ps -a", p)).toMatchObject({ decision: "allow", rule: "user.allow" });
    expect(ev("docker compose down", p).decision).toBe("ask");
    expect(ev("kubectl get pods", p).decision).toBe("allow");
    expect(ev("./tools/run --x", p).rule).toBe("user.allow");
  });

  it("lifts a built-in denial only when the allow entry names the arguments", () => {
    expect(ev("git push", resolvePolicy({ allow: ["git"] })).rule).toBe("git.push");
    expect(ev("git push origin main", resolvePolicy({ allow: ["git push"] }))).toMatchObject({ decision: "allow", rule: "user.allow" });
    // Path and structure checks are never lifted.
    expect(ev("cp x /etc/y", resolvePolicy({ allow: ["cp x /etc/y"] })).rule).toBe("write.outside");
    expect(ev("curl x | sh", resolvePolicy({ allow: ["sh", "curl"] })).rule).toBe("pipe.download-to-interpreter");
  });

  it("default: deny refuses unknown programs; workspacePrograms: ask asks for ./scripts", () => {
    expect(ev("docker ps", resolvePolicy({ default: "deny" }))).toMatchObject({ decision: "deny", rule: "program.unknown" });
    expect(ev("./tools/run", resolvePolicy({ workspacePrograms: "ask" }))).toMatchObject({ decision: "ask", rule: "workspace.program" });
    expect(ev("./tools/run").rule).toBe("workspace.program");
  });

  it("extra protected and writable paths", () => {
    const p = resolvePolicy({ protectedPaths: ["secrets/**", "prod.env"], writablePaths: ["/var/cache/build"] });
    expect(ev("echo x > secrets/key", p).rule).toBe("write.protected");
    expect(ev("rm prod.env", p).rule).toBe("rm.protected");
    expect(ev("cp a.txt /var/cache/build/a.txt", p).decision).toBe("allow");
    expect(ev("cp a.txt /var/cache/other", p).rule).toBe("write.outside");
  });

  it("withAllowed adds CLI allows and the network without touching the original", () => {
    const base = resolvePolicy({ allow: ["terraform plan"] });
    const p = withAllowed(base, ["docker", " "], { allowNetwork: true });
    expect(p.allow).toEqual(["terraform plan", "docker"]);
    expect(base.allow).toEqual(["terraform plan"]);
    expect(ev("npm install", p)).toMatchObject({ decision: "allow", rule: "pkg.install" });
    expect(ev("npm install", base).decision).toBe("ask");
    expect(ev("curl x | bash", p).decision).toBe("deny");
  });
});

describe("inline interpreter code", () => {
  it.each([
    [`python3 -c "import os; print(os.getcwd())"`, "allow"],
    // Code that starts programs needs approval even when no literal is refused: the command may be built at run time.
    [`python3 -c "import subprocess; subprocess.run(['pytest', '-q'])"`, "ask"],
    [`python3 -c "import subprocess; subprocess.run(['sudo', 'id'])"`, "deny"],
    [`python3 -c "import os; os.system('git push')"`, "deny"],
    [`python3 -c "print('sudo id')"`, "allow"],
    [`node -e "require('child_process').execSync('npm test')"`, "ask"],
    [`node -e "require('child_process').spawnSync('rm', ['-rf', '/'])"`, "deny"],
    [`node -e "require('child_process').execFileSync('sh', ['-c', 'sudo id'])"`, "deny"],
    [`node --eval="require('child_process').execSync('rm -rf ~')"`, "deny"],
    [`perl -e 'system("sudo id")'`, "deny"],
    [`awk '{ print $1 > "/etc/x" }' f`, "deny"],
    [`awk '{ print | "sort" }' f`, "allow"],
  ])("%s → %s", (cmd, decision) => {
    expect(ev(cmd).decision).toBe(decision);
  });
});
