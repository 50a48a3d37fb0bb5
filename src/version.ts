import fs from "node:fs";
import path from "node:path";
import { packageRoot } from "./package-root.js";

/** The version in this package's package.json. */
function ownPackageVersion(): string {
  try {
    return (JSON.parse(fs.readFileSync(path.join(packageRoot(), "package.json"), "utf8")) as { version?: string }).version ?? "unknown";
  } catch {
    return "unknown";
  }
}

/** This ledgerloop's version (its package.json's), as workers register it in the fleet. */
export const packageVersion: string = ownPackageVersion();
