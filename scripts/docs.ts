// Writes the generated reference pages under docs/ (`npm run docs`).
import fs from "node:fs";
import path from "node:path";
import { withToolsTable } from "../src/cli/tools.js";
import { configurationReference, settingFlagSpecsSource } from "../src/settings-docs.js";

const file = path.join(import.meta.dirname, "..", "docs", "configuration.md");
fs.mkdirSync(path.dirname(file), { recursive: true });
fs.writeFileSync(file, configurationReference());
console.log(`wrote ${path.relative(process.cwd(), file)}`);
const specs = path.join(import.meta.dirname, "..", "src", "cli", "setting-flag-specs.ts");
fs.writeFileSync(specs, settingFlagSpecsSource());
console.log(`wrote ${path.relative(process.cwd(), specs)}`);
const commands = path.join(import.meta.dirname, "..", "docs", "commands.md");
fs.writeFileSync(commands, await withToolsTable(fs.readFileSync(commands, "utf8")));
console.log(`wrote the tools table of ${path.relative(process.cwd(), commands)}`);
