import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CREDENTIAL_PATHS_IN_HOME } from "../../src/sandbox/credentials.js";
import { detectIsolation } from "../../src/sandbox/detect.js";
import { createSandbox } from "../../src/sandbox/executor.js";
import { DEFAULT_HIDDEN_IN_HOME, hiddenPaths } from "../../src/sandbox/isolation.js";
import { DEFAULT_POLICY, evaluatePolicy } from "../../src/sandbox/policy.js";

const HOME = "/home/tester";
// Agent and tool credential files the review found on neither list, plus the classic stores.
const MUST_COVER = [
  ".claude/.credentials.json",
  ".claude.json",
  ".codex/auth.json",
  ".config/github-copilot/apps.json",
  ".gemini/oauth_creds.json",
  ".config/openai/auth.json",
  ".huggingface/token",
  ".cache/huggingface/token",
  ".config/hub",
  ".terraform.d/credentials.tfrc.json",
  ".vault-token",
  ".pgpass",
  ".my.cnf",
  ".boto",
  ".s3cfg",
  ".ssh/id_ed25519",
  ".gnupg/private-keys-v1.d/x.key",
  ".aws/credentials",
  ".azure/msal_token_cache.json",
  ".config/gcloud/application_default_credentials.json",
  ".config/gh/hosts.yml",
  ".docker/config.json",
  ".kube/config",
  ".netrc",
  ".npmrc",
  ".pypirc",
  ".git-credentials",
  ".cargo/credentials.toml",
];

let tmp: string;
beforeEach(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "ll-cred-")));
});
const homes: string[] = [];
afterEach(() => {
  fs.rmSync(tmp, { recursive: true, force: true });
  for (const h of homes.splice(0)) fs.rmSync(h, { recursive: true, force: true });
});

describe("one list of credential stores", () => {
  it("is the list bwrap hides", () => {
    expect(DEFAULT_HIDDEN_IN_HOME).toEqual([...CREDENTIAL_PATHS_IN_HOME]);
  });

  it.each(MUST_COVER)("the policy asks before a command reads ~/%s", (rel) => {
    const ws = path.join(tmp, "ws");
    fs.mkdirSync(ws);
    const v = evaluatePolicy(`cat ~/${rel}`, DEFAULT_POLICY, { workspace: ws, home: HOME });
    expect({ decision: v.decision, rule: v.rule }).toEqual({ decision: "ask", rule: "read.secrets" });
  });

  it("leaves ordinary home files alone", () => {
    const ws = path.join(tmp, "ws");
    fs.mkdirSync(ws);
    for (const rel of [".bashrc", ".config/git/config", ".claude/settings.json", ".cache/pip/x"]) {
      expect(evaluatePolicy(`cat ~/${rel}`, DEFAULT_POLICY, { workspace: ws, home: HOME }).rule).not.toBe("read.secrets");
    }
  });

  it("hides every such file that exists in a home, and only those", () => {
    const home = path.join(tmp, "home");
    for (const rel of [".claude/.credentials.json", ".codex/auth.json", ".cache/huggingface/token", ".claude/settings.json"]) {
      fs.mkdirSync(path.dirname(path.join(home, rel)), { recursive: true });
      fs.writeFileSync(path.join(home, rel), "secret");
    }
    const hidden = hiddenPaths([home], DEFAULT_HIDDEN_IN_HOME, path.join(tmp, "ws"))
      .map((p) => path.relative(home, p))
      .sort();
    expect(hidden).toEqual([".cache/huggingface/token", ".claude/.credentials.json", ".codex/auth.json"]);
  });

  const bwrap = detectIsolation().levels.bwrap;
  it.skipIf(!bwrap.ok)(
    `a command under bwrap cannot read ~/.claude/.credentials.json${bwrap.ok ? "" : ` — SKIPPED: ${bwrap.detail}`}`,
    async () => {
      // The home is outside /tmp (private under bwrap), so that the neighbour file shows that the
      // hiding, not a missing mount, is what stops the read.
      const ws = path.join(tmp, "ws");
      fs.mkdirSync(ws);
      const home = fs.mkdtempSync(path.join("/var/tmp", "ll-cred-home-"));
      homes.push(home);
      fs.mkdirSync(path.join(home, ".claude"), { recursive: true });
      fs.writeFileSync(path.join(home, ".claude", ".credentials.json"), '{"claudeAiOauth":{"accessToken":"sk-ant-oat01-secret"}}');
      fs.writeFileSync(path.join(home, ".claude", "settings.json"), "{}");
      // Readable to anyone: as root the command runs as another uid.
      for (const d of [tmp, ws, home, path.join(home, ".claude")]) fs.chmodSync(d, 0o755);
      for (const f of [".credentials.json", "settings.json"]) fs.chmodSync(path.join(home, ".claude", f), 0o644);
      const saved = process.env.HOME;
      process.env.HOME = home; // os.homedir() follows $HOME: the sandbox hides under this home
      try {
        const sb = createSandbox({ level: "bwrap" });
        const r = await sb.exec({
          command: `cat ${home}/.claude/.credentials.json; cat ${home}/.claude/settings.json`,
          cwd: ws,
          workspace: ws,
          timeoutMs: 20_000,
        });
        expect(r.stdout + r.stderr).not.toContain("sk-ant-oat01-secret");
        expect(r.stdout).toBe("{}");
      } finally {
        process.env.HOME = saved;
      }
    },
    60_000,
  );
});
