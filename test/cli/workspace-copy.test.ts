import { createHash } from "node:crypto";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { Database } from "../../src/sqlite/driver.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, jsonLines } from "../helpers/cli.js";
import { DEMO_TRAJECTORY, DEMO_WORKSPACE, cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

afterAll(() => cleanupTemp());

/** sha256 of every file under dir, state directory included. */
function hashTree(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string) => {
    for (const e of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) walk(r);
      else if (e.isFile())
        out[r] = createHash("sha256")
          .update(fs.readFileSync(path.join(dir, r)))
          .digest("hex");
    }
  };
  walk("");
  return out;
}

const types = (ws: string) => jsonLines<{ type: string }>(cli(["ledger", "T", "-w", ws, "--json"]).stdout).map((e) => e.type);
const identity = (ws: string) => {
  const db = new Database(path.join(ws, ".ledgerloop/state.db"), { readonly: true });
  try {
    return db.prepare("SELECT id, workspace FROM ll_workspace").get() as { id: string; workspace: string };
  } finally {
    db.close();
  }
};

let root: string;
let wsA: string;
let checkpoint: string;
beforeAll(() => {
  root = tempWorkspace();
  wsA = path.join(root, "wsA");
  fs.cpSync(DEMO_WORKSPACE, wsA, { recursive: true });
  const r = cli(["run", "demo task", "-w", wsA, "--model", `scripted:${DEMO_TRAJECTORY}`, "--thread", "T", "--json", "-q"]);
  expect(r.code, r.stderr).toBe(0);
  const history = jsonLines<{ checkpointId: string; agentStep: number | null; next: string[] }>(cli(["history", "T", "-w", wsA, "--json"]).stdout);
  checkpoint = history.filter((h) => h.agentStep === 5 && h.next.includes("act")).at(-1)!.checkpointId;
}, 180_000);

describe("a copied workspace never writes into the original", () => {
  it("writers refuse the copy until `adopt`; then it continues on its own state and the original stays byte-identical", () => {
    const wsB = path.join(root, "wsB");
    expect(spawnSync("cp", ["-a", wsA, wsB]).status).toBe(0);
    const before = hashTree(wsA);
    // Reading the copy is fine.
    expect(cli(["threads", "-w", wsB, "--json"]).code).toBe(0);
    const refusal = `ledgerloop: the state in ${wsB}/.ledgerloop was copied from workspace ${wsA}, which still exists; run \`ledgerloop adopt -w ${wsB}\` to make this copy a workspace of its own (its runs continue separately), or work in ${wsA}\n`;
    const rewind = cli(["rewind", "T", "-w", wsB, "--to", checkpoint]);
    expect(rewind.code).toBe(1);
    expect(rewind.stderr).toBe(refusal);
    const resume = cli(["resume", "T", "-w", wsB, "--json", "-q"]);
    expect(resume.code).toBe(1);
    expect(resume.stderr).toBe(refusal);

    const adopt = cli(["adopt", "-w", wsB, "--json"]);
    expect(adopt.code, adopt.stderr).toBe(0);
    expect(JSON.parse(adopt.stdout)).toMatchObject({ workspace: wsB, outcome: "adopted" });
    const rewound = cli(["rewind", "T", "-w", wsB, "--to", checkpoint, "--json"]);
    expect(rewound.code, rewound.stderr).toBe(0);
    const resumed = cli(["resume", "T", "-w", wsB, "--json", "-q"]);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ status: "finished", stateDir: `${wsB}/.ledgerloop` });

    expect(types(wsB)).toContain("time_travel");
    expect(types(wsA)).not.toContain("time_travel");
    expect(hashTree(wsA)).toEqual(before);
    expect(identity(wsB).id).not.toBe(identity(wsA).id);
    expect(identity(wsB).workspace).toBe(wsB);
  }, 240_000);

  it("a moved workspace is adopted with a warning and works", () => {
    const wsC = path.join(root, "wsC");
    const wsD = path.join(root, "wsD");
    expect(spawnSync("cp", ["-a", wsA, wsC]).status).toBe(0);
    expect(cli(["adopt", "-w", wsC]).code).toBe(0);
    const id = identity(wsC).id;
    fs.renameSync(wsC, wsD);
    const rewound = cli(["rewind", "T", "-w", wsD, "--to", checkpoint]);
    expect(rewound.code, rewound.stderr).toBe(0);
    expect(rewound.stderr).toContain(`warning: this workspace's state was moved from ${wsC}; it now belongs to ${wsD}\n`);
    expect(identity(wsD)).toEqual({ id, workspace: wsD });
    const resumed = cli(["resume", "T", "-w", wsD, "--json", "-q"]);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ status: "finished" });
    // No stored path is used any more: run settings do not carry the state directory.
    const db = new Database(path.join(wsD, ".ledgerloop/state.db"), { readonly: true });
    const settings = (db.prepare("SELECT settings FROM ll_runs").all() as Array<{ settings: string }>).map((r) => JSON.parse(r.settings));
    db.close();
    for (const s of settings) expect(s).not.toHaveProperty("stateDir");
  }, 240_000);
});
