// Shared by the example scripts: a fresh copy of the demo workspace and the scripted model that
// plays the demo's recorded trajectory (no API key needed). Swap `model` for "openai:gpt-4o-mini"
// or a LangChain chat model instance (new ChatAnthropic({...})) to run a real model.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const demo = fileURLToPath(new URL("../demo/", import.meta.url));

export const GOAL =
  "Give the users and orders services a GET /health endpoint answering {status: \"ok\", service: <name>}, " +
  "and implement collectHealth in dashboard/aggregate.js so the dashboard aggregates them. All tests must pass.";

/** A new temp directory holding a copy of examples/demo/workspace (or `dir` when given). */
export function demoWorkspace(dir = process.argv[2]) {
  const ws = dir ? path.resolve(dir) : fs.mkdtempSync(path.join(os.tmpdir(), "ledgerloop-example-"));
  fs.mkdirSync(ws, { recursive: true });
  fs.cpSync(path.join(demo, "workspace"), ws, { recursive: true });
  return ws;
}

/** Run settings for openAgent: the scripted demo model on that workspace. */
export function demoOptions(workspace) {
  return { workspace, model: `scripted:${path.join(demo, "trajectory.json")}`, maxSteps: 30 };
}
