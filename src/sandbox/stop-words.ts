// No imports: the CLI's command modules load this at start (see test/package/startup.test.ts).

/**
 * What stopped a command, in words, where its error class does not already say it: "memory limit",
 * "the sandbox session ended", "killed from outside the sandbox"; null for a timeout (its class says
 * it) and for a command that ended by itself. The report and `ledger` use it (the viewer's page has
 * its own shorter words, in src/web/app/timeline.js).
 */
export function stopWords(stoppedBy: string | null | undefined, limit: string | null | undefined): string | null {
  switch (stoppedBy) {
    case "limit":
      return limit === "timeout" ? null : `${(limit ?? "a").replace(/_/g, " ")} limit`;
    case "run_stopped":
      return "the run was stopped";
    case "session_ended":
      return "the sandbox session ended";
    case "outside":
      return "killed from outside the sandbox";
    default:
      return null;
  }
}
