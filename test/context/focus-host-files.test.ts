/**
 * Issue 32, finding 2: host files in the prompt. The focus section showed the files of the agent's
 * recent read_file/write_file calls, whatever their outcome, and read them on the host following
 * symlinks: a refused read_file of `notes.txt -> /etc/shadow` put /etc/shadow into the prompt and
 * state.db. The marker file below stands for /etc/shadow.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { LedgerEvent } from "../../src/state.js";
import { promptText, testAgent, type TestAgent } from "../helpers/agent.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

const call = (name: string, args: Record<string, unknown>) => ({ tool_calls: [{ name, args }] });
const finish = call("finish", { summary: "done" });

let agents: TestAgent[] = [];
let hostDir: string;
let hostFile: string;
const MARKER = "HOST-ONLY-9c41e7 root:$6$salt$hash";

beforeEach(() => {
  hostDir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "ll-host-")));
  hostFile = path.join(hostDir, "shadow");
  fs.writeFileSync(hostFile, `${MARKER}\n`);
});

afterEach(async () => {
  await Promise.all(agents.map((a) => a.close()));
  agents = [];
  cleanupTemp();
  fs.rmSync(hostDir, { recursive: true, force: true });
});

/** Every byte ledgerloop stored for the run (state.db and its WAL included). */
function stored(ws: string): string {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) out.push(fs.readFileSync(p).toString("latin1"));
    }
  };
  walk(path.join(ws, ".ledgerloop"));
  return out.join("\n");
}

describe("a host file behind a symlink never reaches the prompt nor state.db", () => {
  it("a refused read_file of a symlink to a host file does not make it a focus file", async () => {
    const ws = tempWorkspace(undefined, { "a.txt": "alpha\n" });
    fs.symlinkSync(hostFile, path.join(ws, "notes.txt"));
    const a = await testAgent(ws, { decide: [call("read_file", { path: "notes.txt" }), call("list_files", {}), finish] });
    agents.push(a);
    expect((await a.run("read the notes")).status).toBe("finished");
    const fb = (await a.events()).find((e): e is LedgerEvent<"environment_feedback"> => e.type === "environment_feedback")!;
    expect(fb.payload.status).not.toBe("ok");
    for (const step of [2, 3]) expect(promptText(a.decidePrompt(step))).not.toContain("HOST-ONLY-9c41e7");
    await a.close();
    agents = [];
    expect(stored(ws)).not.toContain("HOST-ONLY-9c41e7");
  });

  it("a file read ok and then swapped for a symlink to a host file is not read for the prompt", async () => {
    const ws = tempWorkspace(undefined, { "notes.txt": "my notes\n" });
    const a = await testAgent(
      ws,
      {
        decide: [
          call("read_file", { path: "notes.txt" }),
          call("run_command", { command: `rm notes.txt && ln -s ${hostFile} notes.txt` }),
          call("list_files", {}),
          finish,
        ],
      },
      { approve: "auto" },
    );
    agents.push(a);
    expect((await a.run("read the notes")).status).toBe("finished");
    expect(fs.lstatSync(path.join(ws, "notes.txt")).isSymbolicLink()).toBe(true);
    // Before the swap the file was shown (so the case below is not vacuous)...
    expect(promptText(a.decidePrompt(2))).toContain("my notes");
    // ...after it, the link is not followed.
    for (const step of [3, 4]) expect(promptText(a.decidePrompt(step))).not.toContain("HOST-ONLY-9c41e7");
    await a.close();
    agents = [];
    expect(stored(ws)).not.toContain("HOST-ONLY-9c41e7");
  });
});
