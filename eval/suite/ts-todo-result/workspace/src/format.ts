import type { Todo } from "./store.js";

/** "[x] 3 Buy milk" for a done todo, "[ ] 3 Buy milk" for an open one. */
export function formatTodo(t: Todo): string {
  return `[${t.done ? "x" : " "}] ${t.id} ${t.title}`;
}
