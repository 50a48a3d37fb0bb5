// Writes gpt-tokenizer's byte-pair ranks as JSON into dist/tokenizer/, for src/context/bpe-ranks.ts:
// JSON parses several times faster than the JavaScript module they ship as. Run by `npm run build`
// after tsc, with the compiled module that also reads them, so the file's format is defined once.
import { writePreparedRanks } from "../dist/src/context/bpe-ranks.js";

for (const encoding of ["o200k_base", "cl100k_base"]) await writePreparedRanks(encoding);
