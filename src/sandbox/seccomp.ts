/**
 * A small seccomp filter, handed to bubblewrap with `--seccomp FD`, that refuses to create
 * set-user-ID and set-group-ID files. Inside the sandbox they give nothing (no_new_privs, nosuid
 * mounts), but a command may leave one in the workspace, on the host, owned by the workspace owner
 * (root when the runner is root): `cp /bin/sh x; chmod u+s x` would hand every local user a root
 * shell. Mode bits are plain integer syscall arguments, so a classic BPF filter can check them
 * exactly, whatever program or library makes the call.
 */

const AUDIT_ARCH_X86_64 = 0xc000003e;
const AUDIT_ARCH_AARCH64 = 0xc00000b7;

const BPF_LD_W_ABS = 0x20;
const BPF_JEQ_K = 0x15;
const BPF_JGE_K = 0x35;
const BPF_JSET_K = 0x45;
const BPF_RET_K = 0x06;

const SECCOMP_RET_ALLOW = 0x7fff0000;
const SECCOMP_RET_ERRNO = 0x00050000;
const EPERM = 1;
const ENOSYS = 38;

const S_ISUID_ISGID = 0o6000;
// O_CREAT and __O_TMPFILE: the only open flags for which the kernel reads the mode argument.
const OPEN_USES_MODE = 0o100 | 0o20000000;

interface Rule {
  nr: number;
  /** Index of the mode argument. */
  mode?: number;
  /** Index of the open flags argument, when the mode only counts with O_CREAT/O_TMPFILE. */
  flags?: number;
  /** Refuse the call outright with this errno. */
  deny?: number;
}

interface ArchTable {
  audit: number;
  /** Syscall numbers at or above this belong to another ABI (x32) and are refused. */
  abiLimit?: number;
  rules: Rule[];
}

const IO_URING_SETUP = 425; // io_uring can open and create files without the syscalls below
const OPENAT2 = 437; // its mode sits in a struct the filter cannot read: make libc fall back to openat
const FCHMODAT2 = 452;

const TABLES: Record<string, ArchTable> = {
  x64: {
    audit: AUDIT_ARCH_X86_64,
    abiLimit: 0x40000000,
    rules: [
      { nr: 2, flags: 1, mode: 2 }, // open
      { nr: 85, mode: 1 }, // creat
      { nr: 257, flags: 2, mode: 3 }, // openat
      { nr: 90, mode: 1 }, // chmod
      { nr: 91, mode: 1 }, // fchmod
      { nr: 268, mode: 2 }, // fchmodat
      { nr: FCHMODAT2, mode: 2 },
      { nr: 133, mode: 1 }, // mknod
      { nr: 259, mode: 2 }, // mknodat
      { nr: OPENAT2, deny: ENOSYS },
      { nr: IO_URING_SETUP, deny: EPERM },
    ],
  },
  arm64: {
    audit: AUDIT_ARCH_AARCH64,
    rules: [
      { nr: 56, flags: 2, mode: 3 }, // openat
      { nr: 52, mode: 1 }, // fchmod
      { nr: 53, mode: 2 }, // fchmodat
      { nr: FCHMODAT2, mode: 2 },
      { nr: 33, mode: 2 }, // mknodat
      { nr: OPENAT2, deny: ENOSYS },
      { nr: IO_URING_SETUP, deny: EPERM },
    ],
  },
};

type Insn = { code: number; jt: number | string; jf: number | string; k: number } | { label: string };

/** Whether the filter exists for this CPU architecture. */
export function seccompSupported(arch: string = process.arch): boolean {
  return arch in TABLES;
}

/** The compiled filter (an array of struct sock_filter, little-endian) for `arch`, or null. */
export function buildSeccompFilter(arch: string = process.arch): Buffer | null {
  const t = TABLES[arch];
  if (!t) return null;
  // Offsets in struct seccomp_data: nr at 0, arch at 4, args[i] at 16 + 8i (low word first).
  const arg = (i: number) => 16 + 8 * i;
  const p: Insn[] = [];
  const ld = (k: number) => p.push({ code: BPF_LD_W_ABS, jt: 0, jf: 0, k });
  const ret = (k: number) => p.push({ code: BPF_RET_K, jt: 0, jf: 0, k });
  ld(4);
  p.push({ code: BPF_JEQ_K, jt: 0, jf: "other_abi", k: t.audit });
  ld(0);
  if (t.abiLimit) p.push({ code: BPF_JGE_K, jt: "other_abi", jf: 0, k: t.abiLimit });
  t.rules.forEach((r, i) => p.push({ code: BPF_JEQ_K, jt: `rule${i}`, jf: 0, k: r.nr }));
  ret(SECCOMP_RET_ALLOW);
  t.rules.forEach((r, i) => {
    p.push({ label: `rule${i}` });
    if (r.deny !== undefined) {
      ret(SECCOMP_RET_ERRNO | r.deny);
      return;
    }
    if (r.flags !== undefined) {
      ld(arg(r.flags));
      p.push({ code: BPF_JSET_K, jt: 0, jf: "allow", k: OPEN_USES_MODE });
    }
    ld(arg(r.mode!));
    p.push({ code: BPF_JSET_K, jt: "eperm", jf: "allow", k: S_ISUID_ISGID });
  });
  p.push({ label: "eperm" });
  ret(SECCOMP_RET_ERRNO | EPERM);
  // A call from another ABI (x32, or 32-bit code on a 64-bit kernel) has other syscall numbers
  // that these rules would misread: refuse it.
  p.push({ label: "other_abi" });
  ret(SECCOMP_RET_ERRNO | ENOSYS);
  // BPF only jumps forward: the rule blocks above end here.
  p.push({ label: "allow" });
  ret(SECCOMP_RET_ALLOW);

  const labels = new Map<string, number>();
  const code: Array<{ code: number; jt: number | string; jf: number | string; k: number }> = [];
  for (const insn of p) {
    if ("label" in insn) labels.set(insn.label, code.length);
    else code.push(insn);
  }
  const buf = Buffer.alloc(code.length * 8);
  code.forEach((insn, at) => {
    const rel = (j: number | string) => {
      if (typeof j === "number") return j;
      const target = labels.get(j);
      if (target === undefined) throw new Error(`seccomp: unknown label ${j}`);
      const off = target - at - 1;
      if (off < 0 || off > 255) throw new Error(`seccomp: jump to ${j} out of range`);
      return off;
    };
    buf.writeUInt16LE(insn.code, at * 8);
    buf.writeUInt8(rel(insn.jt), at * 8 + 2);
    buf.writeUInt8(rel(insn.jf), at * 8 + 3);
    buf.writeUInt32LE(insn.k >>> 0, at * 8 + 4);
  });
  return buf;
}
