import { describePg, useTestDatabase } from "../helpers/postgres.js";
import { pgStatePortForTest, sqliteStatePortForTest } from "../helpers/state-port.js";
import { runsConformance } from "./runs-conformance.js";

// The run registry and checkpointer of the state port's adapters, as the runtime opens them.
runsConformance("sqlite", {
  async create() {
    const { port, dispose } = await sqliteStatePortForTest("runs");
    return { runs: port.runs, checkpointer: port.checkpointer, dispose };
  },
});

describePg("PostgreSQL run registry", () => {
  const db = useTestDatabase("runs");
  runsConformance("postgres", {
    async create() {
      const { port, dispose } = await pgStatePortForTest(db.url, "runs");
      return { runs: port.runs, checkpointer: port.checkpointer, dispose };
    },
  });
});
