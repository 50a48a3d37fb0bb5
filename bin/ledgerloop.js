#!/usr/bin/env node
// The CLI is compiled JavaScript, built by `npm ci` (the prepare script) or `npm run build`: no
// TypeScript loader at run time. dist/cli/ is the compiled CLI bundled into a few files
// (scripts/bundle-cli.mjs), which starts faster than the ~880 modules of dist/src/ it is made from.
// `npm run ledgerloop -- …` runs the sources.
import fs from "node:fs";

const main = new URL("../dist/cli/main.js", import.meta.url);
if (!fs.existsSync(main)) {
  process.stderr.write("ledgerloop: the build is missing (dist/cli/main.js); run `npm run build` in the package directory\n");
  process.exit(1);
}
await import(main.href);
