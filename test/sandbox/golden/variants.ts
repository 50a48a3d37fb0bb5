/**
 * Generated command lines for the golden-decisions fixture: option permutations of the programs
 * whose rules parse options (sed, tar, git, npm, env, sudo, find, xargs, cp/mv/ln, chmod, …), so that
 * moving their option tables cannot change a decision unnoticed. Deterministic: the same list every run.
 */

/** Every combination of one choice from each list, joined by spaces (empty choices dropped). */
function combos(...lists: string[][]): string[] {
  let out = [""];
  for (const l of lists) out = out.flatMap((prefix) => l.map((x) => [prefix, x].filter(Boolean).join(" ")));
  return out;
}

const TARGETS = ["src/x.ts", "/etc/passwd", ".git/config", "~/.ssh/id_rsa", "$F", "build/*.js", "../up.txt", "/tmp/t.txt"];

export function generatedVariants(): string[] {
  const out: string[] = [];
  // sed: scripts by -e/-f/--expression, in-place forms, w and e commands.
  out.push(
    ...combos(
      ["sed"],
      ["", "-i", "-i.bak", "--in-place", "-n -i", "-E -i"],
      ["'s/a/b/'", "-e 's/a/b/'", "--expression='s/a/b/w /tmp/w'", "'1e id'", "'s/x/sudo id/e'", "-f script.sed", "'w .git/config'"],
      ["src/x.ts", "/etc/hosts"],
    ),
  );
  // tar: old-style letters, dashed clusters, long options, programs tar runs.
  out.push(
    ...combos(
      ["tar"],
      [
        "xzf a.tgz",
        "-xzf a.tgz",
        "--extract --file=a.tgz",
        "czf /tmp/o.tgz src",
        "-cf ../o.tar src",
        "tf a.tar",
        "xf a.tar -P",
        "-x -f a.tar --absolute-names",
      ],
      ["", "-C sub", "-C /", "--directory=/etc", "--to-command=sh", "-I zstd", "--checkpoint-action=exec=id", "--use-compress-program='sudo gzip'"],
    ),
  );
  // git: global options and subcommands.
  out.push(
    ...combos(
      ["git"],
      ["", "-C sub", "-C /tmp/other", "--git-dir=.git", "-c core.pager=less", "--no-pager", "--work-tree=/"],
      [
        "status",
        "log --oneline -5",
        "push",
        "config --get user.name",
        "config user.name x",
        "branch -D old",
        "branch --list 'f*'",
        "tag",
        "tag v1",
        "stash list",
        "stash",
        "remote -v",
        "remote add o u",
        "grep -O less foo",
        "fetch",
        "submodule foreach ls",
        "archive -o /tmp/a.tgz HEAD",
        "diff --output=../d.patch",
        "frobnicate",
        "add -A",
        "reset --hard",
      ],
    ),
  );
  // npm/pnpm/yarn/bun/npx and python tools.
  out.push(
    ...combos(
      ["npm", "pnpm", "yarn", "bun"],
      ["", "--prefix sub", "-C sub", "-w pkg"],
      [
        "test",
        "install",
        "i lodash",
        "publish",
        "run build",
        "config set x y",
        "config get x",
        "exec vitest",
        "x -- sudo id",
        "dlx cowsay",
        "version patch",
        "cache clean",
        "pkg set x=y",
        "whoami",
      ],
    ),
  );
  out.push(...combos(["npx", "bunx", "uvx"], ["", "-y", "--package foo", "-c 'sudo id'", "--"], ["vitest run", "cowsay hi", "sudo id", "rm -rf /"]));
  out.push(
    ...combos(
      ["pip", "python3 -m pip", "uv", "uv pip", "poetry", "cargo", "go"],
      ["install x", "list", "run pytest", "add x", "publish", "build -o /tmp/b", "get x", "tool run ruff", "config set"],
    ),
  );
  // env / sudo / wrappers.
  out.push(
    ...combos(
      ["env", "env -i", "env -u HOME", "env -C /", "env --chdir=sub", "env -S 'sudo id'", "env -", "env --split-string=ls"],
      ["", "X=1", "LD_PRELOAD=/x.so", "PATH=/tmp"],
      ["ls", "rm -rf /", "sudo id", "$CMD"],
    ),
  );
  out.push(
    ...combos(
      [
        "sudo",
        "sudo -u root",
        "sudo -E",
        "sudo -i",
        "doas",
        "doas -u x",
        "pkexec",
        "su -c",
        "runuser -u x --",
        "timeout 5",
        "timeout -s KILL 5",
        "timeout --signal=TERM 5",
        "nice",
        "nice -n 5",
        "nice -5",
        "nohup",
        "stdbuf -oL",
        "stdbuf -o L",
        "ionice -c 3",
        "setsid",
        "time -o /tmp/t",
        "exec -a x",
        "command",
        "command -v",
        "builtin",
        "flock /tmp/l",
        "flock -w 3 /tmp/l -c",
        "watch",
        "watch -n 1",
        "watch -x",
        "xargs",
        "xargs -I{}",
        "xargs -0 -n 1",
        "xargs -i",
        "trap",
      ],
      ["ls", "rm -rf /", "'rm -rf /'", "git push"],
    ),
  );
  // find: starts, tests, actions.
  out.push(
    ...combos(
      ["find"],
      [".", "/", "src /etc", "-L .", "$D"],
      ["", "-name '*.ts'", "-type f -o -name x", "! -name '*.md'"],
      ["-delete", "-exec rm {} +", "-execdir sh -c 'rm -rf /' \\;", "-fprint /etc/out", "-exec sudo id \\;", "-print"],
    ),
  );
  // Files by option: cp/mv/ln/rm/chmod/touch/mkdir/tee/dd/truncate/mktemp/split.
  for (const t of TARGETS) {
    out.push(...combos(["cp", "cp -r", "cp -t", "mv", "mv -T", "ln", "ln -s", "ln -sf", "ln -t"], ["src/x.ts", t], [t === "src/x.ts" ? "dst/" : "src/"]));
    out.push(
      ...combos(
        [
          "rm",
          "rm -rf",
          "rm -r --",
          "rmdir",
          "unlink",
          "shred",
          "rimraf",
          "touch",
          "touch -r src/x.ts",
          "mkdir -p",
          "mkdir -m 700",
          "tee",
          "tee -a",
          "truncate -s 0",
          "chmod 755",
          "chmod -R u+s",
          "chmod 4755",
          "chmod --reference=src/x.ts",
          "chown -R me",
          "gzip",
          "gzip -c",
          "xz -d",
          "uniq in.txt",
          "split -l 10 in.txt",
          "mktemp -p",
          "cat",
          "head -n 3",
          "less",
        ],
        [t],
      ),
    );
    out.push(
      `dd if=/dev/zero of=${t} bs=1 count=1`,
      `curl -o ${t} https://x`,
      `curl -O --output-dir ${t} https://x`,
      `wget -O ${t} https://x`,
      `wget -P ${t} https://x`,
      `echo x > ${t}`,
      `echo x >> ${t}`,
      `cat < ${t}`,
      `tsc --outDir ${t}`,
      `gcc -o ${t} a.c`,
      `sort -o ${t} a`,
      `eslint --fix ${t}`,
      `prettier --write ${t}`,
      `black ${t}`,
      `gofmt -w ${t}`,
      `ruff format ${t}`,
      `python3 -m venv ${t}`,
      `awk '{print > "${t}"}' a`,
      `make -f ${t}`,
      `make -C ${t}`,
      `bash ${t}`,
      `source ${t}`,
      `git archive -o ${t} HEAD`,
      `vitest --outputFile=${t}`,
      `go build -o ${t} .`,
      `rustc -o ${t} a.rs`,
      `esbuild --outfile=${t} a.ts`,
      `csplit -f ${t} in 2`,
    );
  }
  // Interpreters and inline code.
  out.push(
    ...combos(
      ["python3 -c", "node -e", "node -p", "perl -e", "ruby -e", "php -r", "bun -e", "deno eval", "awk"],
      ["'print(1)'", "'import os; os.system(\"sudo id\")'", '\'require("child_process").execSync("ls")\'', "'system(\"rm -rf /\")'", '"$CODE"'],
    ),
  );
  out.push(
    ...combos(
      ["curl -s https://x", "wget -qO- https://x", "cat x.sh", "echo 'sudo id'", "printf 'ls\\n'"],
      ["| sh", "| bash -s", "| python3", "| node", "| sh -c 'cat'", "| xargs rm"],
    ),
  );
  out.push(...combos(["make", "gmake"], ["", "-E 'all:;id'", "--eval='x:'", "-f -", "-f /tmp/x.mk", "-C /tmp", "-j4 test", "MAKEFLAGS=-f/tmp/x"]));
  out.push(...combos(["kill", "kill -9", "kill -s TERM", "kill -l"], ["1", "-1", "1234", "$PPID", "%1"]));
  out.push(
    ...combos(
      ["shopt -s", "shopt -u", "hash -p /bin/sh", "alias", "declare -n", "export", "read"],
      ["expand_aliases", "globskipdots", "ll='ls -l'", "PS4", "x"],
    ),
  );
  out.push(
    ...combos(
      [
        "ssh host",
        "scp a host:",
        "rsync -a a b",
        "nc -l 1",
        "curl https://x",
        "apt-get install x",
        "brew install x",
        "mount /dev/sda /mnt",
        "mkfs.ext4 /dev/sda",
        "python3.12 x.py",
        "pip3.11 install x",
        "gcc-13 a.c",
        "docker ps",
        "terraform plan",
        "/usr/bin/ls",
        "/tmp/x/ls",
        "./tools/run",
        "tools/run",
        "./g/hooks/x",
      ],
      [""],
    ),
  );
  return [...new Set(out)];
}
