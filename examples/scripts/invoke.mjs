// Invoke the compiled graph from a script: `node examples/scripts/invoke.mjs [NEW_DIR]`.
// The graph carries the workspace's SQLite checkpointer, so the run is resumable and
// `ledgerloop threads -w <workspace>` lists it.
import { openAgent } from "ledgerloop";
import { GOAL, demoOptions, demoWorkspace } from "./demo-setup.mjs";

const workspace = demoWorkspace();
const agent = await openAgent(demoOptions(workspace));
try {
  // agent.run(GOAL) does all of this (and answers approvals); here the graph is driven by hand.
  const thread = agent.startThread(GOAL);
  const final = await agent.graph.invoke({ goal: GOAL }, { configurable: { thread_id: thread } });
  console.log(`thread ${thread}: ${final.status} after ${final.step} step(s)`);
  console.log(`plan: ${final.subtasks.map((s) => `${s.id}=${s.status}`).join(", ")}`);
  console.log(`workspace: ${workspace}`);
  if (final.status !== "finished") process.exitCode = 1;
} finally {
  await agent.close();
}
