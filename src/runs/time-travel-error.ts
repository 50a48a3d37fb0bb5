import { LedgerloopError } from "../errors.js";

/** A time-travel request that cannot be carried out (unknown checkpoint, foreign edits, …). */
export class TimeTravelError extends LedgerloopError {
  constructor(code: "CHECKPOINT_NOT_FOUND" | "CHECKPOINT_AMBIGUOUS" | "FOREIGN_EDITS" | "NO_REVISION", message: string) {
    super(code, message);
  }
}

/** The one checkpoint an id or a unique prefix (6+ characters) names among `ids` (any order); throws otherwise. */
export function pickCheckpoint<T>(all: T[], idOf: (t: T) => string, thread: string, idOrPrefix: string): T {
  const exact = all.find((t) => idOf(t) === idOrPrefix);
  if (exact) return exact;
  const matches = idOrPrefix.length >= 6 ? all.filter((t) => idOf(t).startsWith(idOrPrefix)) : [];
  if (matches.length === 1) return matches[0]!;
  if (matches.length > 1) {
    throw new TimeTravelError(
      "CHECKPOINT_AMBIGUOUS",
      `checkpoint prefix ${idOrPrefix} matches ${matches.length} checkpoints of ${thread}; give more characters`,
    );
  }
  throw new TimeTravelError("CHECKPOINT_NOT_FOUND", `no checkpoint ${idOrPrefix} in thread ${thread}; list them with \`ledgerloop history ${thread}\``);
}
