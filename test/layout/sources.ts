import fs from "node:fs";
import path from "node:path";
import { REPO } from "../helpers/workspace.js";
import type { SourceFile } from "./import-rings.js";

/** Every TypeScript and JavaScript module of the rings (everything under src/). */
export function sources(): SourceFile[] {
  const out: SourceFile[] = [];
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(path.join(REPO, dir), { withFileTypes: true })) {
      const rel = `${dir}/${e.name}`;
      if (e.isDirectory()) walk(rel);
      else if (/\.(ts|mts|js|mjs)$/.test(e.name) && !e.name.endsWith(".d.ts")) out.push({ path: rel, text: fs.readFileSync(path.join(REPO, rel), "utf8") });
    }
  };
  walk("src");
  return out;
}
