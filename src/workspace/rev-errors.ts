import { LedgerloopError } from "../errors.js";

/** Stable codes of {@link RevisionError}. */
export type RevisionErrorCode =
  | "REV_NOT_FOUND"
  | "REV_BLOB_MISSING"
  | "REV_BLOB_CORRUPT"
  | "REV_TREE_MISSING"
  | "REV_TREE_CORRUPT"
  | "REV_RESTORE_CONFLICT"
  | "REV_TARGET_NOT_EMPTY"
  | "REV_FILE_NOT_FOUND";

/** A workspace revision cannot be read, written or restored; the message names the revision, path or hash. */
export class RevisionError extends LedgerloopError {
  declare readonly code: RevisionErrorCode;
  constructor(code: RevisionErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
  }
}
