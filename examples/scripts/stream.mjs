// Stream node updates as the agent works: `node examples/scripts/stream.mjs [NEW_DIR]`.
import { openAgent } from "ledgerloop";
import { GOAL, demoOptions, demoWorkspace } from "./demo-setup.mjs";

const agent = await openAgent(demoOptions(demoWorkspace()));
try {
  const thread = agent.startThread(GOAL);
  const stream = await agent.graph.stream({ goal: GOAL }, { configurable: { thread_id: thread }, streamMode: "updates" });
  let last = "";
  for await (const update of stream) {
    for (const [node, change] of Object.entries(update)) {
      const keys = change ? Object.keys(change).join(", ") : "";
      console.log(`${node.padEnd(9)} ${keys}`);
      if (change?.status) last = change.status;
    }
  }
  console.log(`thread ${thread}: ${last}`);
  if (last !== "finished") process.exitCode = 1;
} finally {
  await agent.close();
}
