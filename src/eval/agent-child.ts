import fs from "node:fs";
import { errorMessage } from "../errors.js";
import { taskModel } from "./models.js";
import { runLedgerloop, type AgentOutcome } from "./run-ledgerloop.js";
import type { ChildSpec } from "./killed-run.js";

// The process `--kill-every` kills: it runs (or resumes) one ledgerloop run of a task and writes
// its outcome to a file. Started by killed-run.ts only; it says "driving" on stdout once the run's
// graph starts, so that the kills land in the run and not in the start-up of Node.

const specFile = process.argv[2];
if (!specFile) {
  process.stderr.write("usage: agent-child <spec.json> (started by ledgerloop eval --kill-every)\n");
  process.exit(2);
}
const spec = JSON.parse(fs.readFileSync(specFile, "utf8")) as ChildSpec;
const stop = new AbortController();
process.on("SIGTERM", () => stop.abort(new Error("stopped")));
const signal = AbortSignal.any([stop.signal, AbortSignal.timeout(Math.max(1, spec.deadline - Date.now()))]);
let outcome: AgentOutcome;
try {
  const { task, modelSpec, modelEndpoint, workspace, stateDir, settings } = spec.input;
  outcome = await runLedgerloop(
    { task, model: taskModel(modelSpec, task, modelEndpoint), workspace, stateDir, settings },
    { thread: spec.thread, resume: spec.resume, signal, killed: spec.resume, onDriving: () => process.stdout.write("driving\n") },
  );
} catch (err) {
  outcome = { status: "failed", steps: 0, spend: { calls: 0, inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, costUsd: 0 }, error: errorMessage(err) };
}
// Written whole or not at all: a kill while writing leaves no outcome, and the run is resumed.
fs.writeFileSync(`${spec.outFile}.tmp`, JSON.stringify(outcome));
fs.renameSync(`${spec.outFile}.tmp`, spec.outFile);
process.exit(0);
