import { latestValues } from "../ledger/checkpoints.js";
import { writePrivateFile } from "../private-files.js";
import type { Runtime } from "../runtime.js";
import type { TaskStateValue } from "../state.js";
import { reportFile } from "./report-file.js";

/** Writes the report of a run that just stopped to <stateDir>/reports/<thread>.md; returns the path. */
export async function writeRunReport(rt: Runtime, thread: string): Promise<string> {
  const { buildReport, reportMarkdown } = await import("./report.js");
  const values = await latestValues<TaskStateValue>(rt.checkpointer, thread);
  const report = await buildReport(rt.ledger, rt.revisions, thread, values?.ledgerHead ?? null, values?.subtasks ?? []);
  const file = reportFile(rt.stateDir, thread);
  // Redacted again with the run's redactor: events stored by an older version passed fewer rules.
  writePrivateFile(file, rt.redactor.redact(reportMarkdown(report)) + "\n");
  return file;
}
