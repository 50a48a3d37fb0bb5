import { insert, remove, replaceAll } from "./document.js";

/**
 * Runs one editor command line on the document:
 *   insert <pos> <text...>   delete <pos> <length>   replace <find> <replacement>
 */
export function apply(doc, line) {
  const [cmd, ...args] = line.trim().split(" ");
  switch (cmd) {
    case "insert":
      return insert(doc, Number(args[0]), args.slice(1).join(" "));
    case "delete":
      return remove(doc, Number(args[0]), Number(args[1]));
    case "replace":
      return replaceAll(doc, args[0], args[1] ?? "");
    default:
      throw new Error(`unknown command: ${cmd}`);
  }
}
