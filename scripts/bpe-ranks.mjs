// Writes gpt-tokenizer's byte-pair ranks as JSON into dist/tokenizer/, for src/context/bpe-ranks.ts:
// JSON parses several times faster than the JavaScript module they ship as. Run by `npm run build`.
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const OUT = path.join(REPO, "dist", "tokenizer");

export async function writeRanks() {
  const require = createRequire(import.meta.url);
  const pkg = JSON.parse(fs.readFileSync(require.resolve("gpt-tokenizer/package.json"), "utf8"));
  fs.mkdirSync(OUT, { recursive: true });
  for (const encoding of ["o200k_base", "cl100k_base"]) {
    const { default: ranks } = await import(`gpt-tokenizer/bpeRanks/${encoding}`);
    const file = path.join(OUT, `${encoding}.json`);
    fs.writeFileSync(`${file}.tmp`, JSON.stringify({ tokenizer: `${pkg.name}@${pkg.version}`, encoding, ranks }));
    fs.renameSync(`${file}.tmp`, file);
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await writeRanks();
