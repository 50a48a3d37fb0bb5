import { withLessonStore } from "../ledger/open-lesson-store.js";
import type { WorkspaceArgs } from "../ledger/open-state.js";
import type { Lesson } from "../memory/lessons.js";

export { withLessonStore };

/** Which lessons `memory list` shows: all, or those relevant to a query. */
export interface MemoryArgs extends WorkspaceArgs {
  query?: string;
}

/** Lessons stored for a workspace (all, or the ones relevant to a query). */
export async function listMemory(args: MemoryArgs): Promise<Lesson[]> {
  const { listLessons, recallLessons } = await import("../memory/lessons.js");
  return withLessonStore(args, false, (store) => (args.query ? recallLessons(store, args.query, 50) : listLessons(store)));
}
