// Dedupes a POLICY_COLLECT recording into the sorted fixture test/fixtures/policy-commands.jsonl.
import fs from "node:fs";
const seen = new Map();
for (const line of fs.readFileSync(process.argv[2], "utf8").split("\n")) {
  if (!line) continue;
  const r = JSON.parse(line);
  const key = JSON.stringify([r.command, r.policy, r.level, r.cwd]);
  if (!seen.has(key)) seen.set(key, r);
  else if (r.source < seen.get(key).source) seen.set(key, r);
}
const rows = [...seen.values()].map((r) => JSON.stringify({ source: r.source, command: r.command, policy: r.policy, level: r.level, cwd: r.cwd }));
process.stdout.write(rows.sort().join("\n") + "\n");
