// Kept apart from the schemas (events.ts, zod): writing a state database's schema version and
// reading events need the number, not zod, and loading zod and building the schemas costs more
// than the rest of an inspection command.

/** Version of the ledger event payload schemas; bump when a payload changes shape. */
export const SCHEMA_VERSION = 1;
