import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { latestValues } from "../ledger/checkpoints.js";
import type { Ledger } from "../ledger/port.js";
import { writePrivateFile } from "../private-files.js";
import type { Redactor } from "../secrets.js";
import type { TaskStateValue } from "../state.js";
import type { RevisionStore } from "../workspace/revisions.js";
import { reportFile } from "../workspace/location.js";

/** The parts of a run's runtime a report is built from (declared here so report/ does not import the runtime above it). */
export interface ReportSource {
  checkpointer: BaseCheckpointSaver;
  ledger: Ledger;
  revisions: RevisionStore;
  stateDir: string;
  redactor: Redactor;
}

/** Writes the report of a run that just stopped to <stateDir>/reports/<thread>.md; returns the path. */
export async function writeRunReport(rt: ReportSource, thread: string): Promise<string> {
  const { buildReport, reportMarkdown } = await import("./report.js");
  const values = await latestValues<TaskStateValue>(rt.checkpointer, thread);
  const report = await buildReport(rt.ledger, rt.revisions, thread, values?.ledgerHead ?? null, values?.subtasks ?? []);
  const file = reportFile(rt.stateDir, thread);
  // Redacted again with the run's redactor: events stored by an older version passed fewer rules.
  writePrivateFile(file, rt.redactor.redact(reportMarkdown(report)) + "\n");
  return file;
}
