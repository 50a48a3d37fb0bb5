import fs from "node:fs";

/** Reads a JSON config file. */
export function loadFile(path) {
  return JSON.parse(fs.readFileSync(path, "utf8"));
}
