/** Program names as the registry knows them. */

/** `python3.12` → `python3`, `pip3.12` → `pip`, `gcc-13` → `gcc`, `mkfs.ext4` → `mkfs`. */
export function normalizeProgram(name: string): string {
  if (/^python\d+(\.\d+)*$/.test(name)) return "python3";
  if (/^pip\d*(\.\d+)*$/.test(name)) return "pip";
  if (/^(gcc|g\+\+|clang|clang\+\+|cc)-\d+(\.\d+)*$/.test(name)) return name.replace(/-\d.*$/, "");
  if (/^(mkfs|fsck)\./.test(name)) return "mkfs";
  return name;
}
