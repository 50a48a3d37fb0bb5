// `node --import <this file>`: appends the URL of every module the process loads to $TRACE_FILE,
// so a test can check which packages a command pulls in. ES modules are seen as they resolve;
// what require() loads (createRequire included) bypasses that hook and is listed from the require
// cache at exit.
import fs from "node:fs";
import path from "node:path";
import { createRequire, register } from "node:module";
import { pathToFileURL } from "node:url";

register(
  "data:text/javascript," +
    encodeURIComponent(`
import fs from "node:fs";
export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  fs.appendFileSync(process.env.TRACE_FILE, r.url + "\\n");
  return r;
}`),
);

// What `require` loaded (CommonJS, and ES modules required synchronously, as spawn.ts loads execa)
// passes no resolve hook: it is in the one require cache, listed as the process exits.
const cache = createRequire(import.meta.url).cache;
process.on("exit", () => {
  const files = Object.keys(cache).filter((f) => path.isAbsolute(f));
  if (files.length) fs.appendFileSync(process.env.TRACE_FILE, files.map((f) => pathToFileURL(f).href).join("\n") + "\n");
});
