/**
 * Privilege and the machine: programs that change user or privileges (refused, but what they would
 * run is still walked, so the model hears about both), system administration (refused) and the
 * system's package managers (asked: they change the machine, not the workspace).
 */
import { literalWord } from "../command-parts.js";
import { runCode, runFrom } from "./follow.js";
import { leadingOptions, type OptionTable } from "./options.js";
import { finding, type FollowApi, type ProgramSpec, q } from "./types.js";

const priv: ProgramSpec["decide"] = (p) =>
  finding(
    "deny",
    "priv.escalation",
    `${q(p.text)}: \`${p.program}\` changes user or privileges, which the sandbox does not allow; run the command without it, on files inside the workspace`,
  );

const SUDO: OptionTable = {
  short: "ugCDhprtUTR",
  long: ["user", "group", "close-from", "chdir", "host", "prompt", "role", "type", "other-user", "command-timeout", "chroot"],
};

/** su and runuser: `-c CODE`, or (runuser) `-u USER [--] COMMAND`. */
function suRuns(api: FollowApi): void {
  const prog = api.part.program;
  const n = api.words.length;
  const lit = (i: number) => (api.words[i]?.literal ? api.words[i]!.text : null);
  for (let i = 1; i < n; i++) {
    const t = lit(i);
    if (t === "-c" || t === "--command") return runCode(api, api.words[i + 1], `${prog} -c`);
    if (t?.startsWith("--command=")) return runCode(api, literalWord(t.slice(10)), `${prog} -c`);
    if (prog === "runuser" && t === "-u") return runFrom(api, i + 2 < n && lit(i + 2) === "--" ? i + 3 : i + 2, prog);
  }
}

const ADMIN = [
  "mkfs",
  "mke2fs",
  "mkswap",
  "fdisk",
  "sfdisk",
  "cfdisk",
  "parted",
  "wipefs",
  "mount",
  "umount",
  "chroot",
  "nsenter",
  "unshare",
  "pivot_root",
  "switch_root",
  "setcap",
  "capsh",
  "insmod",
  "rmmod",
  "modprobe",
  "sysctl",
  "systemctl",
  "service",
  "shutdown",
  "reboot",
  "halt",
  "poweroff",
  "init",
  "telinit",
  "iptables",
  "ip6tables",
  "nft",
  "ufw",
  "crontab",
  "at",
  "batch",
  "useradd",
  "usermod",
  "userdel",
  "groupadd",
  "groupmod",
  "groupdel",
  "passwd",
  "chpasswd",
  "visudo",
  "losetup",
  "dmsetup",
  "cryptsetup",
  "swapon",
  "swapoff",
  "mknod",
  "chattr",
  "debugfs",
  "kexec",
  "killall5",
];
const SYSTEM_PACKAGES = [
  "apt",
  "apt-get",
  "aptitude",
  "dpkg",
  "yum",
  "dnf",
  "rpm",
  "apk",
  "brew",
  "snap",
  "flatpak",
  "pacman",
  "zypper",
  "port",
  "nix-env",
  "emerge",
];

export const SYSTEM_SPECS: ProgramSpec[] = [
  {
    names: ["sudo"],
    options: SUDO,
    decide: priv,
    runs(api) {
      let j = leadingOptions(api.words, 1, SUDO);
      while (j >= 0 && j < api.words.length && api.words[j]!.literal && /^[A-Za-z_][A-Za-z0-9_]*=/.test(api.words[j]!.text)) j++;
      runFrom(api, j, "sudo");
    },
  },
  { names: ["doas"], options: { short: "uC" }, decide: priv, runs: (api) => runFrom(api, leadingOptions(api.words, 1, { short: "uC" }), "doas") },
  { names: ["pkexec"], options: { long: ["user"] }, decide: priv, runs: (api) => runFrom(api, leadingOptions(api.words, 1, { long: ["user"] }), "pkexec") },
  { names: ["su", "runuser"], decide: priv, runs: suRuns },
  { names: ["sudoedit", "setpriv", "newgrp", "sg"], decide: priv },
  {
    names: ADMIN,
    decide: (p) =>
      finding(
        "deny",
        "system.admin",
        `${q(p.text)}: \`${p.program}\` administers the machine (disks, mounts, namespaces, services, users or scheduled jobs), which is outside a coding task`,
      ),
  },
  {
    names: SYSTEM_PACKAGES,
    decide: (p) =>
      finding("ask", "pkg.system", `${q(p.text)} changes the system's packages; ask the user to install what is missing, or use a project-local install`),
  },
];
