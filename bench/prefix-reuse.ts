import fs from "node:fs";
import { loadTokenCounter } from "../src/context/tokens.js";
import { medianRatio, prefixReuse } from "../src/context/reuse.js";
import type { ChatMessage } from "../src/models/port.js";

// `npx tsx bench/prefix-reuse.ts <requests.jsonl>`: prefix reuse of consecutive decide prompts in a
// file written by LEDGERLOOP_RECORD_REQUESTS (a scripted run), as the context node measures it.
const file = process.argv[2];
if (!file) {
  console.error("usage: tsx bench/prefix-reuse.ts <requests.jsonl>");
  process.exit(2);
}
const counter = await loadTokenCounter("o200k_base");
const decides = fs
  .readFileSync(file, "utf8")
  .split("\n")
  .filter(Boolean)
  .map((l) => JSON.parse(l) as { node: string; turn: number; messages: ChatMessage[] })
  .filter((r) => r.node === "decide");
const ratios: number[] = [];
let prev: ChatMessage[] | null = null;
for (const r of decides) {
  const reuse = prefixReuse(prev, r.messages, counter);
  if (prev) ratios.push(reuse.ratio);
  console.log(`decide turn ${String(r.turn).padStart(3)}: ${reuse.reusedTokens}/${reuse.tokens} tokens reused (${(reuse.ratio * 100).toFixed(1)}%)`);
  prev = r.messages;
}
console.log(`median prefix reuse over ${ratios.length} prompts: ${(medianRatio(ratios) * 100).toFixed(1)}%`);
