import fs from "node:fs";
import path from "node:path";
import { CREDENTIAL_PATHS_IN_HOME } from "./credentials.js";
import { traversable, type UidPlan } from "./uid-plan.js";

export { planUid, runnerUid, type UidPlan } from "./uid-plan.js";

/**
 * Isolation levels, strongest first. What each one promises (and the attack suite tests):
 *
 * - `bwrap` (bubblewrap): the host filesystem is read-only except the workspace; `/tmp`, `/dev`,
 *   `/run` and `/proc` are private; no network unless allowed (loopback works); new PID namespace
 *   (nothing outlives the command); no capabilities, no_new_privs, no nested user namespaces, no
 *   set-uid/set-gid files can be created (seccomp); cleared environment; every `.git` entry,
 *   `ledgerloop.config.json` and `.ledgerloop/` read-only (git-guard.ts); host unix sockets outside
 *   the workspace unreachable; credential stores of the home directory (.ssh, .aws, .npmrc, …) and
 *   the host's password, sudo and SSH host key files hidden. Reading is not confined beyond that:
 *   the command reads what its uid can (with a root-owned workspace that is uid 0, so other
 *   root-only files too).
 * - `unshare`: the same file-system promises as bwrap, made with a mount namespace (every host
 *   mount remounted read-only, private `/tmp` `/run` `/dev/shm` and `/proc`, the same read-only
 *   workspace paths, hidden credential stores and host sockets); no network (loopback up); new PID
 *   namespace; no capabilities and no_new_privs. Not promised: a user namespace (a root runner's
 *   command keeps uid 0, without capabilities), a private `/dev` (it is read-only), the seccomp
 *   filter (set-uid/set-gid bits it sets in the workspace are cleared when it ends: setid.ts), and
 *   nested user namespaces are not disabled (they cannot lift the read-only mounts: the kernel locks
 *   mounts inherited by a less privileged namespace).
 * - `none`: the command runs on the host as the runner. Only limits, the scrubbed environment,
 *   whole-tree killing, (as root) clearing new set-uid/set-gid bits, and the workspace guard's
 *   after-the-fact repairs apply: a `.git` the command creates is moved away, and changes to the
 *   config file and to git's control files are undone — detected after the command, not prevented.
 *
 * All levels get the same limits (see limits.ts).
 */
export type IsolationLevel = "bwrap" | "unshare" | "none";
export const LEVELS: IsolationLevel[] = ["bwrap", "unshare", "none"];

/** What a level enforces and what it does not, as `doctor` prints it (the attack suite tests the first list). */
export function levelPromises(level: IsolationLevel): { enforced: string[]; notEnforced: string[] } {
  const files = "read-only host; private /tmp, /run, /proc; credential stores and host sockets hidden";
  const git = "every .git, ledgerloop.config.json and .ledgerloop/ read-only; a new .git is moved away after the command";
  if (level === "bwrap") {
    return {
      enforced: [
        files,
        "private /dev",
        git,
        "no network (loopback only)",
        "PID namespace",
        "no capabilities, no_new_privs",
        "user namespace (uid 65534 inside for a root runner), nested ones disabled",
        "seccomp: no set-uid/set-gid files",
      ],
      notEnforced: ["reading what the command's uid can read outside the hidden paths"],
    };
  }
  if (level === "unshare") {
    return {
      enforced: [files, git, "no network (loopback only)", "PID namespace", "no capabilities, no_new_privs", "set-uid/set-gid bits cleared after the command"],
      notEnforced: [
        "user namespace (a root runner's command stays uid 0, without capabilities)",
        "private /dev (read-only instead)",
        "seccomp filter",
        "reading what the command's uid can read outside the hidden paths",
      ],
    };
  }
  return {
    enforced: [
      "limits and a scrubbed environment",
      "changes to git's control files and the config undone after the command; a new .git moved away",
      "set-uid/set-gid bits cleared after a root command",
      "a PID namespace per command when the runner can make one (root): see the reasons above",
    ],
    notEnforced: ["file-system confinement (host, /tmp and .ledgerloop/ are writable)", "network", "capabilities"],
  };
}

/**
 * Extra workspace paths commands may read but not change. None by default: every `.git`, the config
 * file and `.ledgerloop/` are protected by the workspace guard itself (git-guard.ts), at every call.
 */
export const DEFAULT_PROTECTED: string[] = [];

/**
 * Credential stores under a home directory that commands have no business reading: under bwrap
 * they are replaced by an empty directory or an empty file. Commands still read everything else
 * the uid they run as can read (the root filesystem is bound read-only, not hidden).
 */
export const DEFAULT_HIDDEN_IN_HOME = [...CREDENTIAL_PATHS_IN_HOME];

/**
 * Host files that only root may read and no build needs: hidden under bwrap as well, because with a
 * root-owned workspace the command runs as uid 0 (without capabilities, but still their owner).
 */
export const DEFAULT_HIDDEN_HOST = [
  "/etc/shadow",
  "/etc/shadow-",
  "/etc/gshadow",
  "/etc/gshadow-",
  "/etc/sudoers",
  "/etc/sudoers.d",
  "/etc/security/opasswd",
  "/etc/ssh/ssh_host_rsa_key",
  "/etc/ssh/ssh_host_ecdsa_key",
  "/etc/ssh/ssh_host_ed25519_key",
  "/etc/ssh/ssh_host_dsa_key",
];

/** Existing paths to hide, given home directories and names relative to them (or absolute). */
export function hiddenPaths(homes: Array<string | undefined>, names: string[], workspace: string): string[] {
  const out = new Set<string>();
  for (const n of names) {
    const candidates = path.isAbsolute(n) ? [n] : homes.filter((h): h is string => !!h).map((h) => path.join(h, n));
    for (const p of candidates) {
      // Never hide the workspace or a directory holding it.
      if (under(workspace, p)) continue;
      try {
        fs.lstatSync(p);
        out.add(p);
      } catch {
        // absent
      }
    }
  }
  return [...out];
}

/** Protected paths of a workspace that exist, as absolute paths. */
export function protectedPaths(workspace: string, rel: string[] = DEFAULT_PROTECTED): string[] {
  const out: string[] = [];
  for (const r of rel) {
    const abs = path.resolve(workspace, r);
    if (abs !== workspace && !abs.startsWith(workspace + path.sep)) continue;
    try {
      fs.lstatSync(abs);
      out.push(abs);
    } catch {
      // absent: nothing to protect
    }
  }
  return out;
}

/** Protected paths without those already covered by a protected directory above them. */
export function mergeProtected(paths: string[]): string[] {
  const sorted = [...new Set(paths)].sort((a, b) => a.length - b.length);
  const out: string[] = [];
  for (const p of sorted) if (!out.some((q) => p.startsWith(`${q}/`))) out.push(p);
  return out;
}

function under(p: string, dir: string): boolean {
  return p === dir || p.startsWith(dir.endsWith("/") ? dir : dir + "/");
}

/**
 * The path bwrap could not mount because it vanished after the argv was built: a host socket
 * closed, a hidden credential file or a protected workspace path deleted, in between. bwrap stops
 * before anything of the command runs ("Can't create file at …" for a mask's mount point on the
 * read-only root, "Can't find source path …" for a protected path), so the command can be started
 * again with a fresh argv (which mounts the path again if it is back). Null for any other output and
 * for a path the argv does not mount. (A command printing those words first gets started again: what
 * it could do anyway.)
 */
export function vanishedMask(argv: readonly string[], stderr: string): string | null {
  const first = stderr.slice(0, 4096).split("\n", 1)[0] ?? "";
  if (!first.startsWith("bwrap: Can't ")) return null;
  for (let i = 0; i + 2 < argv.length; i++) {
    const [op, a, b] = [argv[i], argv[i + 1]!, argv[i + 2]!];
    // Gone before its mount point was made, or between the mount and its read-only remount.
    const says =
      op === "--ro-bind" && a === "/dev/null"
        ? { p: b, w: [`Can't create file at ${b}: `, `Can't bind mount /oldroot/dev/null on /newroot${b}: `] }
        : op === "--tmpfs"
          ? { p: a, w: [`Can't mkdir ${a}: `, `Can't mount tmpfs on /newroot${a}: `, `Can't remount readonly on /newroot${a}: `] }
          : op === "--ro-bind" && a === b && a !== "/"
            ? { p: a, w: [`Can't find source path ${a}: `, `Can't bind mount /oldroot${a} on /newroot${a}: `] }
            : null;
    if (says?.w.some((w) => first.startsWith(`bwrap: ${w}`))) return says.p;
  }
  return null;
}

/** How often a command whose mask vanished during bwrap's set-up is started (see {@link vanishedMask}). */
export const MASK_RACE_ATTEMPTS = 5;

/**
 * Listening unix sockets of the host (from /proc/net/unix) that a command could connect to by
 * path. Network namespaces do not cover these, and a root-owned daemon socket (docker, systemd,
 * dbus) is a way out for a command that keeps uid 0.
 */
export function hostSocketPaths(workspace: string, hidden: string[] = ["/tmp", "/run", "/dev", "/proc"]): string[] {
  let text = "";
  try {
    text = fs.readFileSync("/proc/net/unix", "utf8");
  } catch {
    return [];
  }
  const out = new Set<string>();
  for (const line of text.split("\n").slice(1)) {
    const f = line.trim().split(/\s+/);
    const p = f[7];
    if (!p || !p.startsWith("/")) continue;
    if (under(p, workspace) || hidden.some((h) => under(p, h))) continue;
    try {
      if (fs.lstatSync(p).isSocket()) out.add(p);
    } catch {
      // gone, or in another mount namespace
    }
  }
  return [...out];
}

/** Programs the isolation levels use, found once. */
export interface Tools {
  sh: string;
  bash: string;
  bwrap?: string;
  unshare?: string;
  setpriv?: string;
  ip?: string;
  mount?: string;
}

export interface WrapInput {
  command: string;
  cwd: string;
  workspace: string;
  env: Record<string, string>;
  allowNetwork: boolean;
  /** Absolute protected paths that exist. */
  protect: string[];
  /** Extra host paths bound read-write (bwrap), e.g. a build cache. */
  writable: string[];
  /** Existing host paths replaced by an empty directory or file (bwrap). */
  hidden: string[];
  uid: UidPlan;
  /** Child fd holding the seccomp filter, or null. */
  seccompFd: number | null;
  tools: Tools;
  /** bwrap ≥ 0.8 has --disable-userns. */
  disableUserns: boolean;
  /**
   * The command already runs in the run's session network namespace (session.ts): it must not
   * make one of its own, or a server another command started would be out of its reach.
   */
  sessionNet?: boolean;
}

/** argv running `bash -c command` under bubblewrap (without the cgroup/rlimit wrapper). */
export function bwrapArgv(i: WrapInput): string[] {
  const a: string[] = [];
  if (i.uid.kind === "owner") {
    // bwrap then runs unprivileged and builds its sandbox in a user namespace of the owner.
    a.push(i.tools.setpriv!, `--reuid=${i.uid.uid}`, `--regid=${i.uid.gid}`, "--clear-groups", "--");
  }
  a.push(i.tools.bwrap!, "--unshare-user");
  if (i.disableUserns) a.push("--disable-userns");
  if (i.uid.kind === "root-userns") a.push("--uid", "65534", "--gid", "65534");
  a.push("--unshare-pid", "--unshare-ipc", "--unshare-cgroup-try");
  if (!i.allowNetwork && !i.sessionNet) a.push("--unshare-net");
  a.push("--die-with-parent", "--new-session", "--cap-drop", "ALL");
  a.push("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/run");
  // /etc/resolv.conf often points into /run (systemd-resolved): keep name resolution when allowed.
  if (i.allowNetwork) {
    try {
      const resolv = fs.realpathSync("/etc/resolv.conf");
      if (under(resolv, "/run") || under(resolv, "/tmp")) a.push("--ro-bind", resolv, resolv);
    } catch {
      // no resolv.conf
    }
  }
  // bwrap running as a non-root uid cannot even mount over what that uid cannot reach, and need
  // not: the command could not reach it from inside either.
  const reachable = (p: string) => {
    if (i.uid.kind === "owner") return traversable(path.dirname(p), i.uid.uid, i.uid.gid);
    if (i.uid.kind === "self") {
      try {
        fs.accessSync(path.dirname(p), fs.constants.X_OK);
      } catch {
        return false;
      }
    }
    return true;
  };
  for (const s of hostSocketPaths(i.workspace).filter(reachable)) a.push("--ro-bind", "/dev/null", s);
  for (const h of i.hidden.filter(reachable)) {
    if (isDir(h)) a.push("--tmpfs", h, "--remount-ro", h);
    else a.push("--ro-bind", "/dev/null", h);
  }
  // After the tmpfs mounts, so that a workspace under /tmp stays visible.
  a.push("--bind", i.workspace, i.workspace);
  for (const w of i.writable) a.push("--bind", w, w);
  for (const p of i.protect) a.push("--ro-bind", p, p);
  if (i.seccompFd !== null) a.push("--seccomp", String(i.seccompFd));
  a.push("--clearenv");
  const env: Record<string, string> = { ...i.env, TMPDIR: "/tmp" };
  if (i.uid.kind === "owner" && i.uid.home) env.HOME = i.uid.home;
  for (const [k, v] of Object.entries(env)) a.push("--setenv", k, v);
  a.push("--chdir", i.cwd, "--", i.tools.bash, "-c", i.command);
  return a;
}

function isDir(p: string): boolean {
  try {
    return fs.lstatSync(p).isDirectory();
  } catch {
    return false;
  }
}

/** Shell-quotes one word for a POSIX shell. */
export function shQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** A mount of the host as /proc/self/mountinfo lists it. */
export interface HostMount {
  mountPoint: string;
  /** Per-mount options (`rw,nosuid,relatime`). */
  options: string[];
}

/** The runner's mounts, parents before children (mountinfo order). */
export function hostMounts(text?: string): HostMount[] {
  let info = text;
  if (info === undefined) {
    try {
      info = fs.readFileSync("/proc/self/mountinfo", "utf8");
    } catch {
      return [];
    }
  }
  const out: HostMount[] = [];
  for (const line of info.split("\n")) {
    const f = line.split(" ");
    if (f.length < 6) continue;
    // Spaces, tabs, newlines and backslashes are octal-escaped in mountinfo.
    const mountPoint = f[4]!.replace(/\\([0-7]{3})/g, (_m, o: string) => String.fromCharCode(parseInt(o, 8)));
    out.push({ mountPoint, options: f[5]!.split(",") });
  }
  return out;
}

/**
 * Flags of a mount that a bind remount must repeat: inside a user namespace they are locked, and a
 * remount that leaves one out is refused.
 */
function lockedFlags(options: string[]): string {
  const keep = options.filter((o) => ["nosuid", "nodev", "noexec", "noatime", "nodiratime", "relatime", "strictatime", "nosymfollow"].includes(o));
  return keep.length ? `,${keep.join(",")}` : "";
}

/**
 * The script run inside the unshare namespaces, as root of them, before dropping to the command. It
 * carries out a list of mount operations (three words each, built by {@link unshareMountOps}) and
 * stops the command from starting (exit 125) if any of them fails: a level that cannot keep its
 * promises must not run anything. Paths come as arguments, never inside the script.
 */
const UNSHARE_INNER = [
  'ip="$1"; mnt="$2"; cwd="$3"; shift 3',
  'fail() { echo "ledgerloop: unshare sandbox: $*" >&2; exit 125; }',
  'gone() { ! [ -e "$1" ] && ! [ -L "$1" ]; }',
  // Mounts over $a: done, or $a is gone; a mount that failed on a path that is back is tried again.
  'over() { n=0; until e=$("$@" 2>&1); do gone "$a" && return 0; n=$((n+1)); [ "$n" -lt 5 ] || return 1; done; }',
  'if [ -n "$ip" ]; then "$ip" link set lo up 2>/dev/null || echo "ledgerloop: could not bring up lo" >&2; fi',
  '"$mnt" --make-rprivate / || fail "cannot make the mounts private"',
  'while [ "$1" != "--" ]; do',
  '  op="$1"; a="$2"; b="$3"; shift 3',
  '  case "$op" in',
  '    tmpfs) "$mnt" -t tmpfs -o "mode=$b,nosuid,nodev" tmpfs "$a" || fail "cannot mount a private $a";;',
  '    stage) mkdir -p "/run/.ll/$b" && "$mnt" --bind "$a" "/run/.ll/$b" || fail "cannot stage $a";;',
  '    ro) "$mnt" -o "remount,bind,ro$b" "$a" || fail "cannot make $a read-only";;',
  '    unstage) mkdir -p "$a" 2>/dev/null; "$mnt" --bind "/run/.ll/$b" "$a" && umount "/run/.ll/$b" || fail "cannot bind $a";;',
  // What vanished since the list was made (a host socket closed, a credential file or a protected
  // path deleted) has nothing left to reach or protect through its path: skipped, not a failure.
  '    hidedir) over "$mnt" -t tmpfs -o ro,mode=755 tmpfs "$a" || fail "cannot hide $a: $e";;',
  '    hidefile) over "$mnt" --bind /dev/null "$a" || fail "cannot hide $a: $e";;',
  '    robind) over "$mnt" --bind -o ro "$a" "$a" || fail "cannot protect $a: $e";;',
  '    *) fail "unknown operation $op";;',
  "  esac",
  "done",
  "shift",
  // The working directory was entered before the mounts: enter it again to be on the new ones.
  'cd "$cwd" || fail "cannot enter $cwd"',
  // Not exec: this shell stays PID 1 of the namespace. The kernel does not deliver default-action
  // signals such as RLIMIT_CPU's SIGXCPU to a namespace's init, so the command must not be it.
  '"$@"',
].join("\n");

/**
 * Directories both isolating levels replace with private, empty ones (bwrap with its tmpfs mounts and
 * a fresh /dev, unshare with the mounts below, which never remount them). Only the workspace stays
 * visible under them.
 */
export const PRIVATE_DIRS = ["/run", "/tmp", "/dev/shm"];

/**
 * The absolute paths among `words` (a command line) that a command at an isolating level cannot
 * see: under a private directory and outside the workspace. For error messages: a program kept in
 * /tmp runs on the host and is "not found" in the sandbox.
 */
export function pathsInPrivateDirs(words: string[], workspace: string): string[] {
  const ws = path.resolve(workspace);
  return words.filter((w) => {
    if (!path.isAbsolute(w)) return false;
    const p = path.resolve(w);
    return PRIVATE_DIRS.some((d) => under(p, d)) && !under(p, ws);
  });
}

/**
 * The mount operations that make the unshare level keep what bwrap promises for files: every host
 * mount read-only, private /tmp, /run and /dev/shm, the workspace (and extra writable paths) bound
 * read-write over that, credential stores and host sockets hidden, protected paths read-only. The
 * workspace is staged under the new /run first, because it often lives below /tmp.
 */
export function unshareMountOps(i: WrapInput, mounts: HostMount[] = hostMounts()): string[] {
  const ops: string[][] = [];
  const rw = [i.workspace, ...i.writable];
  ops.push(["tmpfs", "/run", "755"]);
  rw.forEach((p, n) => ops.push(["stage", p, `w${n}`]));
  ops.push(["tmpfs", "/tmp", "1777"]);
  if (isDir("/dev/shm")) ops.push(["tmpfs", "/dev/shm", "1777"]);
  const skip = (mp: string) => under(mp, "/proc") || under(mp, "/dev/pts") || PRIVATE_DIRS.some((d) => under(mp, d)) || rw.some((w) => under(mp, w));
  const seen = new Set<string>();
  for (const m of mounts) {
    if (skip(m.mountPoint) || seen.has(m.mountPoint)) continue;
    seen.add(m.mountPoint);
    ops.push(["ro", m.mountPoint, lockedFlags(m.options)]);
  }
  rw.forEach((p, n) => ops.push(["unstage", p, `w${n}`]));
  for (const s of hostSocketPaths(i.workspace)) ops.push(["hidefile", s, "-"]);
  for (const h of i.hidden) {
    if (PRIVATE_DIRS.some((d) => under(h, d))) continue;
    ops.push([isDir(h) ? "hidedir" : "hidefile", h, "-"]);
  }
  for (const p of i.protect) ops.push(["robind", p, "-"]);
  return ops.flat();
}

/** The environment a command gets at level unshare: its /tmp is private, its HOME the uid's. */
export function unshareEnv(env: Record<string, string>, uid: UidPlan): Record<string, string> {
  const out: Record<string, string> = { ...env, TMPDIR: "/tmp" };
  if (uid.kind === "owner" && uid.home) out.HOME = uid.home;
  return out;
}

/** argv running `bash -c command` under unshare (without the cgroup/rlimit wrapper). */
export function unshareArgv(i: WrapInput, mounts?: HostMount[]): string[] {
  const a: string[] = [i.tools.unshare!];
  if (i.uid.kind === "self") a.push("--user", "--map-root-user");
  if (!i.allowNetwork && !i.sessionNet) a.push("--net");
  a.push("--mount", "--pid", "--fork", "--kill-child", "--mount-proc", "--");
  const ip = !i.allowNetwork && !i.sessionNet && i.tools.ip ? i.tools.ip : "";
  a.push(i.tools.sh, "-c", UNSHARE_INNER, "ledgerloop-unshare", ip, i.tools.mount ?? "mount", i.cwd, ...unshareMountOps(i, mounts), "--");
  a.push(i.tools.setpriv!, "--no-new-privs", "--inh-caps=-all", "--bounding-set=-all");
  if (i.uid.kind === "owner") a.push(`--reuid=${i.uid.uid}`, `--regid=${i.uid.gid}`, "--clear-groups");
  // The environment (TMPDIR=/tmp included) reaches the command through the spawn: see unshareEnv.
  a.push("--", i.tools.bash, "-c", i.command);
  return a;
}

/**
 * The wrapper every command starts in, at every level: it joins the command's cgroups and sets
 * the rlimits while still the only process, then execs the command (or the isolation tool).
 */
export function wrapperArgv(sh: string, joinFiles: string[], rlimitLines: string[], inner: string[]): string[] {
  // "0" in a cgroup v1 tasks file is the writing thread: see CommandCgroups.joinFiles.
  const script = [
    'n="$1"; shift',
    'while [ "$n" -gt 0 ]; do echo 0 > "$1" || { echo "ledgerloop: cannot join cgroup $1" >&2; exit 125; }; shift; n=$((n-1)); done',
    ...rlimitLines.map((l) => `${l} || { echo "ledgerloop: cannot set limit (${l})" >&2; exit 125; }`),
    'exec "$@"',
  ].join("\n");
  return [sh, "-c", script, "ledgerloop-sandbox", String(joinFiles.length), ...joinFiles, ...inner];
}
