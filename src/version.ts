import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** The nearest package.json above this module: src/ in a checkout, dist/src/ once built. */
function ownPackageVersion(): string {
  for (let dir = path.dirname(fileURLToPath(import.meta.url)); ; dir = path.dirname(dir)) {
    try {
      const p = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")) as { name?: string; version?: string };
      if (p.name === "ledgerloop" && p.version) return p.version;
    } catch {
      // No package.json at this level: look one up.
    }
    if (path.dirname(dir) === dir) return "unknown";
  }
}

/** This ledgerloop's version (its package.json's), as workers register it in the fleet. */
export const packageVersion: string = ownPackageVersion();
