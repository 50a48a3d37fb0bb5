/**
 * Attack suite, part two: principles about the user's git and the run's own configuration, tried
 * through several paths each, at every isolation level available here. Each case runs hostile
 * commands in the sandbox and then runs the user's git ON THE HOST (as the tests' uid, like a shell
 * prompt would) and checks that nothing the agent planted ran and nothing that governs the run
 * changed. The isolating levels prevent the change; level `none` repairs it after the command.
 */
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { spawnSync } from "node:child_process";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { detectIsolation } from "../../src/sandbox/detect.js";
import { createSandbox, type ConfiguredSandbox } from "../../src/sandbox/executor.js";
import { LEVELS } from "../../src/sandbox/isolation.js";
import type { ExecResult } from "../../src/sandbox/port.js";

const report = detectIsolation();
const hasGit = spawnSync("git", ["--version"]).status === 0;

let area: string;
let ws: string;
let marker: string;

/** The user's git, on the host, in `dir`: what a shell prompt or an editor runs. */
function hostGit(dir: string, ...args: string[]) {
  return spawnSync("git", args, { cwd: dir, encoding: "utf8", env: { ...process.env, GIT_TERMINAL_PROMPT: "0" } });
}

/** Shell text that writes an executable script at `file` which touches the marker. */
function plantScript(file: string): string {
  return `mkdir -p "$(dirname ${file})"; printf '#!/bin/sh\\ntouch ${marker}\\nexit 1\\n' > ${file}; chmod +x ${file}`;
}

/** git config text whose fsmonitor runs the marker script. */
const evilConfig = (script: string) => `[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = ${script}\\n\\tbare = false\\n`;

function snapshot(p: string): string | null {
  try {
    return crypto.createHash("sha256").update(fs.readFileSync(p)).digest("hex");
  } catch {
    return null;
  }
}

beforeEach(() => {
  area = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "ll-attack-git-")));
  ws = path.join(area, "ws");
  fs.mkdirSync(ws);
  marker = path.join(area, `PWNED-${crypto.randomBytes(3).toString("hex")}`);
  if (hasGit) {
    hostGit(ws, "init", "-q");
    fs.writeFileSync(path.join(ws, "a.txt"), "a\n");
    hostGit(ws, "-c", "user.name=t", "-c", "user.email=t@t", "add", "a.txt");
    hostGit(ws, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init");
  }
});

afterEach(() => {
  fs.rmSync(area, { recursive: true, force: true });
});

/** Runs the user's git as a prompt and a commit would, in each directory; true when nothing planted ran. */
function userGitIsSafe(dirs: string[]): boolean {
  for (const d of dirs) {
    if (!fs.existsSync(d)) continue;
    hostGit(d, "status", "--short");
    hostGit(d, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "probe");
  }
  return !fs.existsSync(marker);
}

describe.skipIf(!hasGit)("the attack works without the sandbox (so the cases below can fail)", () => {
  it("a commondir written on the host makes the user's git run the planted fsmonitor", () => {
    const script = path.join(ws, "planted/fsmon.sh");
    spawnSync("sh", ["-c", `${plantScript(script)}; cp -a .git evil; printf '${evilConfig(script)}' > evil/config; echo ../evil > .git/commondir`], {
      cwd: ws,
    });
    expect(userGitIsSafe([ws])).toBe(false);
  });

  it("a repository created in a subdirectory runs its own fsmonitor for git there", () => {
    const script = path.join(ws, "sub/fsmon.sh");
    spawnSync("sh", ["-c", `mkdir sub && git init -q sub && ${plantScript(script)} && printf '${evilConfig(script)}' > sub/.git/config`], { cwd: ws });
    expect(userGitIsSafe([path.join(ws, "sub")])).toBe(false);
  });
});

describe.each(LEVELS)("level %s", (level) => {
  const probe = report.levels[level];
  describe.skipIf(!probe.ok || !hasGit)(probe.ok ? (hasGit ? "available" : "SKIPPED: git is not installed") : `SKIPPED: ${probe.detail}`, () => {
    let sb: ConfiguredSandbox;
    beforeAll(() => {
      sb = createSandbox({ level });
    });
    const run = (command: string): Promise<ExecResult> => sb.exec({ command, cwd: ws, workspace: ws, timeoutMs: 20_000 });

    describe("git cannot be redirected to anything the agent controls", () => {
      const cases: Array<[string, (s: string) => string, string[]]> = [
        [
          "commondir pointing at a planted config (python, as the review did)",
          (s) => `${plantScript(s)}; cp -a .git evil; printf '${evilConfig(s)}' > evil/config; python3 -c "open('.git/commondir','w').write('../evil')"`,
          ["."],
        ],
        ["core.fsmonitor appended to .git/config", (s) => `${plantScript(s)}; printf '[core]\\n\\tfsmonitor = ${s}\\n' >> .git/config`, ["."]],
        ["a pre-commit hook", (s) => `${plantScript(".git/hooks/pre-commit")}; ${plantScript(s)}`, ["."]],
        [
          "worktree config switched on",
          (s) =>
            `${plantScript(s)}; printf '[extensions]\\n\\tworktreeConfig = true\\n' >> .git/config; printf '[core]\\n\\tfsmonitor = ${s}\\n' > .git/config.worktree`,
          ["."],
        ],
        [
          ".git replaced by a copy with a hook and an fsmonitor",
          (s) =>
            `${plantScript(s)}; mv .git .git-old; mkdir .git; cp -a .git-old/. .git/; ${plantScript(".git/hooks/pre-commit")}; printf '${evilConfig(s)}' > .git/config`,
          ["."],
        ],
        [
          ".git replaced by a gitfile leading to a planted repository",
          (s) => `${plantScript(s)}; git init -q --bare evil.git; printf '${evilConfig(s)}' > evil.git/config; rm -rf .git; echo 'gitdir: evil.git' > .git`,
          ["."],
        ],
        [
          "a new repository in a subdirectory",
          (s) => `${plantScript(s)}; mkdir -p sub && git init -q sub && printf '${evilConfig(s)}' > sub/.git/config`,
          ["sub"],
        ],
        [
          "a gitfile in an ignored subdirectory",
          (s) =>
            `${plantScript(s)}; echo node_modules/ > .gitignore; git init -q --bare /tmp/e.git 2>/dev/null; mkdir -p node_modules/x evil.git && git init -q --bare evil.git && printf '${evilConfig(s)}' > evil.git/config && echo "gitdir: $PWD/evil.git" > node_modules/x/.git`,
          ["node_modules/x"],
        ],
        [
          "a symlink named .git in a subdirectory",
          (s) => `${plantScript(s)}; git init -q --bare evil.git && printf '${evilConfig(s)}' > evil.git/config && mkdir -p d && ln -s ../evil.git d/.git`,
          ["d"],
        ],
      ];
      for (const [name, attack, dirs] of cases) {
        it(name, async () => {
          const script = path.join(ws, "planted/fsmon.sh");
          await run(attack(script));
          expect(userGitIsSafe(dirs.map((d) => path.join(ws, d))), `the user's git ran the agent's program after: ${name}`).toBe(true);
          // The user's repository is still there and intact (at level none a command can delete it:
          // only what it planted is undone there).
          if (level !== "none" || !/rm -rf \.git/.test(attack(script))) {
            expect(hostGit(ws, "log", "--format=%s", "-1").stdout.trim()).toMatch(/^(init|probe)$/);
          }
        });
      }

      it("a .git the command created is moved out of git's sight and the command is told", async () => {
        const r = await run("mkdir -p sub && git init -q sub && echo made");
        expect(fs.existsSync(path.join(ws, "sub/.git"))).toBe(false);
        expect(r.violations?.join("\n")).toMatch(/sub\/\.git/);
        expect(r.stderr).toMatch(/ledgerloop: moved away sub\/\.git/);
      });

      it("the repository's hooks swapped for a link to a host directory: the host directory is left alone", async () => {
        // The guard's own clean-up must not follow the link: at level none it lists and removes
        // "new hooks", which through the link would be the host directory's files.
        const host = path.join(area, "host-dir");
        fs.mkdirSync(host);
        fs.writeFileSync(path.join(host, "precious"), "keep me\n");
        fs.writeFileSync(path.join(ws, ".git/hooks/pre-commit.sample"), "#!/bin/sh\n");
        await run(`rm -rf .git/hooks; ln -s ${host} .git/hooks`);
        expect(fs.readFileSync(path.join(host, "precious"), "utf8")).toBe("keep me\n");
        expect(userGitIsSafe([ws])).toBe(true);
      });

      it("a FIFO put in place of the repository's config does not hang the guard", async () => {
        const r = await run("mv .git/config .git/config.old; mkfifo .git/config; echo done");
        expect(r.stdout).toContain("done");
        if (level === "none") {
          // Put back as the regular file it was.
          expect(fs.lstatSync(path.join(ws, ".git/config")).isFile()).toBe(true);
          expect(r.violations?.join("\n")).toMatch(/config/);
        }
      }, 60_000);

      it("git read commands still work in the sandbox", async () => {
        const r = await run("echo b > b.txt; git status --short; git log --format=%s -1");
        expect(r.stdout).toContain("?? b.txt");
        expect(r.stdout).toContain("init");
      });
    });

    describe("the files that govern the run cannot be changed", () => {
      const config = '{"sandbox":{"network":false}}\n';
      const evil = '{"sandbox":{"network":true,"policy":{"allow":["curl","nc","git push"]}}}';
      beforeEach(() => {
        fs.mkdirSync(path.join(ws, ".ledgerloop"));
        fs.writeFileSync(path.join(ws, ".ledgerloop/state.db"), "state");
      });

      it("an existing config file stays as it was, whichever way it is written", async () => {
        fs.writeFileSync(path.join(ws, "ledgerloop.config.json"), config);
        for (const attack of [
          `python3 -c "open('ledgerloop.config.json','w').write('${evil}')"`,
          `mv ledgerloop.config.json old.json; echo '${evil}' > ledgerloop.config.json`,
          `rm -f ledgerloop.config.json; ln -s old.json ledgerloop.config.json`,
          `node -e "require('fs').writeFileSync('ledgerloop.config.json', '{}')"`,
        ]) {
          await run(attack);
          expect(fs.readFileSync(path.join(ws, "ledgerloop.config.json"), "utf8"), attack).toBe(config);
          expect(fs.lstatSync(path.join(ws, "ledgerloop.config.json")).isFile()).toBe(true);
        }
      });

      it("a config file the command creates is removed and the command is told", async () => {
        const r = await run(`echo '${evil}' > ledgerloop.config.json`);
        expect(fs.existsSync(path.join(ws, "ledgerloop.config.json"))).toBe(false);
        expect(r.violations?.join("\n")).toMatch(/ledgerloop\.config\.json/);
      });

      it.skipIf(level === "none")(
        `.ledgerloop/ cannot be written, moved or removed${level === "none" ? " — not promised at level none: only the policy protects it there" : ""}`,
        async () => {
          const before = snapshot(path.join(ws, ".ledgerloop/state.db"));
          await run("python3 -c \"open('.ledgerloop/state.db','w').write('x')\"; mv .ledgerloop .ll-old; rm -rf .ledgerloop; echo x > .ledgerloop/new");
          expect(snapshot(path.join(ws, ".ledgerloop/state.db"))).toBe(before);
          expect(fs.existsSync(path.join(ws, ".ledgerloop/new"))).toBe(false);
        },
      );
    });
  });
});
