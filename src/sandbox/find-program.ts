import fs from "node:fs";
import path from "node:path";

const SEARCH = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"];

/** Absolute path of a program on PATH or in the usual system directories. */
export function findProgram(name: string, envPath: string | undefined = process.env.PATH): string | undefined {
  const dirs = [...(envPath ?? "").split(":").filter((d) => d.startsWith("/")), ...SEARCH];
  for (const d of dirs) {
    const p = path.join(d, name);
    try {
      fs.accessSync(p, fs.constants.X_OK);
      if (fs.statSync(p).isFile()) return p;
    } catch {
      // not here
    }
  }
  return undefined;
}
