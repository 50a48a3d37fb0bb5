import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

let root: string | undefined;

/**
 * ledgerloop's own package directory: the nearest directory with a package.json above this module,
 * which runs from src/ (a checkout under tsx), dist/src/ (the build) or, bundled, keeps its
 * dist/src/ URL (scripts/bundle-cli.mjs). Found once per process.
 */
export function packageRoot(): string {
  if (root === undefined) {
    let dir = path.dirname(fileURLToPath(import.meta.url));
    while (!fs.existsSync(path.join(dir, "package.json")) && path.dirname(dir) !== dir) dir = path.dirname(dir);
    root = dir;
  }
  return root;
}
