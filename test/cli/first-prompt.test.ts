import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { afterEach, describe, expect, it } from "vitest";
import { cli } from "../helpers/cli.js";
import { DEMO_WORKSPACE, REPO, cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

// What the model sees must not depend on how fast the run got to its first prompt: start-up work
// moved to the background (the Chroma server started before the runtime loads, say) may change
// when things are ready, never what the first decide prompt holds. This pins the first prompt of a
// one-step scripted run on the demo workspace, and its context_built record, byte for byte against
// a fixture recorded before that start-up work moved. Event ids, the run id and the workspace's
// temporary path are the only parts that differ between two runs; they are replaced by stand-ins.
const FIXTURE = path.join(REPO, "test/fixtures/prompts/one-step-demo-context.json");

const chromaInstalled = (() => {
  try {
    createRequire(import.meta.url).resolve("chromadb");
    return true;
  } catch {
    return false;
  }
})();

/** The `context --json` output with what differs between runs replaced by stand-ins. */
function normalised(json: string, workspace: string, thread: string): string {
  return json
    .split(workspace)
    .join("<workspace>")
    .split(thread)
    .join("<thread>")
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, "<id>");
}

afterEach(() => cleanupTemp());

describe("the first decide prompt of a one-step run on the demo workspace", () => {
  // The fixture's retrieved code carries the vector scores of the hashed embedder in Chroma.
  it.skipIf(!chromaInstalled)("is byte-identical to the recorded one, vector scores included", () => {
    const ws = tempWorkspace(DEMO_WORKSPACE);
    // Outside the workspace: a file in it would be indexed and searched.
    const script = path.join(tempWorkspace(), "one-step.json");
    fs.writeFileSync(script, JSON.stringify({ decide: [{ tool_calls: [{ name: "finish", args: { summary: "done" } }] }] }));
    const run = cli(["run", "finish at once", "-w", ws, "--model", `scripted:${script}`, "--max-steps", "1", "--json", "-q"], { timeoutMs: 120_000 });
    expect(run.code, run.stderr).toBe(0);
    const thread = (JSON.parse(run.stdout.trim().split("\n")[0]!) as { thread: string }).thread;
    const ctx = cli(["context", thread, "-w", ws, "--json"]);
    expect(ctx.code, ctx.stderr).toBe(0);
    const got = normalised(ctx.stdout.trim(), ws, thread);
    // The vector side answered the first search (a run that raced past its server would not say so).
    expect(got).toContain('"note":"vector=');
    expect(got).toBe(fs.readFileSync(FIXTURE, "utf8").trim());
  });
});
