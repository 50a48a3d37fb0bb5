// `node --import <this file>`: appends the URL of every module the process loads to $TRACE_FILE,
// so a test can check which packages a command pulls in.
import { register } from "node:module";

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
