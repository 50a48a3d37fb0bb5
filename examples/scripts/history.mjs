// Read a run's history: LangGraph's checkpoints, and the same rows and ledger events the CLI prints
// (`ledgerloop history` / `ledgerloop ledger`). `node examples/scripts/history.mjs [NEW_DIR]`
import { getHistory, getLedgerEvents, listThreads, openAgent } from "ledgerloop";
import { GOAL, demoOptions, demoWorkspace } from "./demo-setup.mjs";

const workspace = demoWorkspace();
const agent = await openAgent(demoOptions(workspace));
let thread;
let n = 0;
try {
  ({ thread } = await agent.run(GOAL));
  for await (const snap of agent.graph.getStateHistory({ configurable: { thread_id: thread } })) {
    if (n++ < 3) console.log(`checkpoint ${snap.config.configurable.checkpoint_id} step ${snap.metadata.step} next: ${snap.next.join(",") || "(end)"}`);
  }
  console.log(`${n} checkpoints (LangGraph getStateHistory)`);
} finally {
  await agent.close();
}
// The CLI's own functions read the state database without a graph.
const rows = await getHistory(thread, { workspace });
const decisions = await getLedgerEvents(thread, { workspace, type: ["decision"] });
const threads = await listThreads({ workspace });
console.log(`${rows.length} checkpoints (getHistory), ${decisions.length} decision(s): ${decisions.map((e) => e.payload.text).join(" | ")}`);
console.log(`threads: ${threads.map((t) => `${t.thread} ${t.status}`).join(", ")}`);
if (rows.length !== n || !threads.some((t) => t.thread === thread)) process.exitCode = 1;
