import { afterEach, describe, expect, it } from "vitest";
import { testAgent, type TestAgent } from "../helpers/agent.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";
import { walkCounts } from "../../src/workspace/walk.js";

// "One walk per step": the tree is read once for a step that runs a command, not once before the
// command, once after it and once more for the step's revision (3 walks a step before issue 13).
// The sandbox's .git guard (git-guard.ts) is not a workspace walk: it re-reads only directories
// whose ctime changed, looking for .git entries.

// Walks and directory reads of the one walker, attributed to the step whose decide came last.
const perStep = new Map<string, { walks: number; dirsRead: number }>();
let current = "";
let mark = { ...walkCounts };

function closeStep(next: string): void {
  if (current) {
    const was = perStep.get(current) ?? { walks: 0, dirsRead: 0 };
    perStep.set(current, { walks: was.walks + walkCounts.walks - mark.walks, dirsRead: was.dirsRead + walkCounts.dirsRead - mark.dirsRead });
  }
  current = next;
  mark = { ...walkCounts };
}

let agents: TestAgent[] = [];
afterEach(async () => {
  await Promise.all(agents.map((a) => a.close()));
  agents = [];
  cleanupTemp();
});

describe("one walk per step", () => {
  it("a step that runs a command walks the workspace once, and its feedback and revision still see the change", async () => {
    const ws = tempWorkspace(undefined, { "src/a.ts": "export const a = 1;\n", "src/lib/b.ts": "export const b = 2;\n", "README.md": "hi\n" });
    const a = await testAgent(ws, {
      decide: [
        { tool_calls: [{ name: "read_file", args: { path: "src/a.ts" } }] },
        { tool_calls: [{ name: "run_command", args: { command: "echo 'export const c = 3;' > src/c.ts && rm README.md" } }] },
        {
          tool_calls: [
            { name: "write_file", args: { path: "src/d.ts", content: "export const d = 4;\n" } },
            { name: "run_command", args: { command: "echo more >> src/a.ts" } },
          ],
        },
        { tool_calls: [{ name: "finish", args: { summary: "done" } }] },
      ],
    });
    agents.push(a);
    // Code search is not what is measured here (the lexical fallback lists the files per revision).
    a.rt.searcher = { search: async () => [] } as unknown as typeof a.rt.searcher;
    a.rt.progress = (e) => {
      if (e.node === "decide") closeStep(`step ${e.step}`);
    };
    const final = await a.run("make c");
    closeStep("");
    expect(final.status).toBe("finished");

    // Step 1 only reads a file: its revision is the one walk. Steps 2 and 3 run commands: still one,
    // each reading the 3 directories (root, src, src/lib) once.
    const steps = ["step 1", "step 2", "step 3"].map((s) => perStep.get(s));
    expect(steps).toEqual([
      { walks: 1, dirsRead: 3 },
      { walks: 1, dirsRead: 3 },
      { walks: 1, dirsRead: 3 },
    ]);

    const feedback = (await a.events()).filter((e) => e.type === "environment_feedback").map((e) => e.payload as { tool: string; filesChanged?: unknown });
    const commands = feedback.filter((f) => f.tool === "run_command");
    expect(commands[0]!.filesChanged).toEqual({ created: ["src/c.ts"], modified: [], deleted: ["README.md"] });
    // write_file's own change earlier in the step is not the command's.
    expect(commands[1]!.filesChanged).toEqual({ created: [], modified: ["src/a.ts"], deleted: [] });
    const snaps = (await a.events()).filter((e) => e.type === "workspace_snapshot").map((e) => (e.payload as { changed: unknown }).changed);
    // Step 3's revision holds both the written file and the command's edit.
    expect(snaps[2]).toEqual({ created: ["src/d.ts"], modified: ["src/a.ts"], deleted: [] });
    const files = [...a.rt.revisions.files(final.workspaceRev!).keys()].sort();
    expect(files).toEqual(["src/a.ts", "src/c.ts", "src/d.ts", "src/lib/b.ts"]);
  });
});
