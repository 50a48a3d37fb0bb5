/** A one-line description of an action, for progress output, prompts and summaries. */
export function describeAction(tool: string, args: unknown): string {
  if (!args || typeof args !== "object") return tool;
  const a = args as Record<string, unknown>;
  let what = "";
  if (typeof a.path === "string") what = a.path;
  else if (typeof a.command === "string") what = a.command.slice(0, 120);
  else if (typeof a.query === "string") what = a.query;
  else if (tool === "update_plan") what = "plan";
  return what ? `${tool}(${what})` : tool;
}
