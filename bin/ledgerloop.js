#!/usr/bin/env node
// The CLI is the compiled JavaScript in dist/, built by `npm ci` (the prepare script) or
// `npm run build`: no TypeScript loader at run time. `npm run ledgerloop -- …` runs the sources.
import fs from "node:fs";

const main = new URL("../dist/src/cli/main.js", import.meta.url);
if (!fs.existsSync(main)) {
  process.stderr.write("ledgerloop: the build is missing (dist/src/cli/main.js); run `npm run build` in the package directory\n");
  process.exit(1);
}
await import(main.href);
