// Rewind a run: workspace files, ledger branch and graph state go back together, exactly as
// `ledgerloop rewind` does. `node examples/scripts/rewind.mjs [NEW_DIR]`
import fs from "node:fs";
import path from "node:path";
import { getHistory, openAgent, rewindThread } from "ledgerloop";
import { GOAL, demoOptions, demoWorkspace } from "./demo-setup.mjs";

const workspace = demoWorkspace();
const file = path.join(workspace, "services/users/server.js");
const before = fs.readFileSync(file, "utf8");
const agent = await openAgent(demoOptions(workspace));
let thread;
try {
  ({ thread } = await agent.run(GOAL));
} finally {
  await agent.close();
}
console.log(`after the run, ${path.relative(workspace, file)} ${fs.readFileSync(file, "utf8") === before ? "is unchanged" : "has the /health route"}`);
// The first checkpoint that plans: the files were as the run found them.
const history = await getHistory(thread, { workspace });
const target = history.filter((r) => r.next.includes("plan")).at(-1) ?? history.at(-1);
const r = await rewindThread(thread, { workspace, to: target.checkpointId });
const n = r.restored.created.length + r.restored.modified.length + r.restored.deleted.length;
const same = fs.readFileSync(file, "utf8") === before;
console.log(`rewound ${thread} to ${r.toCheckpoint}: ${n} file(s) restored; ${path.relative(workspace, file)} is ${same ? "as before the run" : "NOT restored"}`);
if (!same) process.exitCode = 1;
