import { formatTodo } from "./format.js";
import type { TodoStore } from "./store.js";

/** Runs one command line against the store and returns what to print. */
export function run(store: TodoStore, line: string): string {
  const [cmd, ...rest] = line.trim().split(/\s+/);
  const arg = rest.join(" ");
  switch (cmd) {
    case "add":
      return `added ${formatTodo(store.add(arg))}`;
    case "done":
      return `completed ${formatTodo(store.complete(Number(arg)))}`;
    case "rm":
      store.remove(Number(arg));
      return `removed ${arg}`;
    case "list":
      return store.list().map(formatTodo).join("\n");
    default:
      throw new Error(`unknown command: ${line}`);
  }
}
