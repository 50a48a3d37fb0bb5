import type { z } from "zod";
import { withLangGraph } from "@langchain/langgraph/zod";
import { TaskState } from "../state.js";

// LangGraph takes a channel's initial value from its zod registry, not from the field's
// `.default()`. Registering here, next to the graph, keeps `state.ts` (and so the package's root
// import) free of LangGraph; `withLangGraph` without a reducer registers the very same schema object.
let registered = false;

/** Registers each TaskState field's zod default as its LangGraph channel default (once per process). */
export function registerStateChannels(): void {
  if (registered) return;
  for (const field of Object.values(TaskState.shape) as z.ZodType[]) withLangGraph(field, { default: () => field.parse(undefined) });
  registered = true;
}
