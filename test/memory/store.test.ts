import { describePg, useTestDatabase } from "../helpers/postgres.js";
import { pgStatePortForTest, sqliteStatePortForTest } from "../helpers/state-port.js";
import { storeConformance } from "./store-conformance.js";

// The lessons store of the state port's adapters, as the runtime opens them.
storeConformance("sqlite", {
  async create() {
    const { port, dispose } = await sqliteStatePortForTest("store");
    return { store: port.store, dispose };
  },
});

describePg("PostgreSQL store", () => {
  const db = useTestDatabase("store");
  storeConformance("postgres", {
    async create() {
      const { port, dispose } = await pgStatePortForTest(db.url, "store");
      return { store: port.store, dispose };
    },
  });
});
