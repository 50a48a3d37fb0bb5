import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Database } from "../../src/sqlite/driver.js";
import { afterAll, describe, expect, it } from "vitest";
import { runEval } from "../../src/eval/eval.js";
import { seededRandom } from "../../src/eval/killed-run.js";

// `--kill-every`: the process driving a ledgerloop run gets real SIGKILLs and the run is resumed
// from its checkpoint each time. With the oracle the run must end as an unkilled one does: solved,
// the same files, every step decided once and every action done once. Slow tier (test/tiers.ts):
// children start from the TypeScript sources, a few seconds each.

const SUITE = path.join(import.meta.dirname, "../../eval/suite");
const TASK = "js-order-coupons";
const made: string[] = [];
const outDir = () => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), "ll-kill-"));
  made.push(d);
  return d;
};
afterAll(() => {
  for (const d of made) fs.rmSync(d, { recursive: true, force: true });
});

/** Path → sha256 of every file the run left in a workspace. */
function files(workspace: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const f of (fs.readdirSync(workspace, { recursive: true }) as string[]).sort()) {
    const p = path.join(workspace, f);
    if (fs.lstatSync(p).isFile()) out[f] = crypto.createHash("sha256").update(fs.readFileSync(p)).digest("hex");
  }
  return out;
}

describe("eval --kill-every", () => {
  it("the kill moments come from the seed", () => {
    const a = seededRandom(7);
    const b = seededRandom(7);
    const xs = Array.from({ length: 5 }, () => a());
    expect(Array.from({ length: 5 }, () => b())).toEqual(xs);
    expect(new Set(xs).size).toBe(5);
    for (const x of xs) expect(x >= 0 && x < 1).toBe(true);
    expect(seededRandom(8)()).not.toBe(xs[0]);
  });

  it("an oracle run killed several times ends solved, with the same files and nothing done twice", async () => {
    const plain = await runEval({ suiteDir: SUITE, model: "oracle", only: [TASK], outDir: outDir(), settings: { vectors: "off" } });
    const out = outDir();
    // The oracle drives this task in about 2 s on a fast machine, so the kills come every 0.25 to
    // 0.75 s of driving: at least one lands inside the run however fast the machine is (at 4 s, none
    // did once start-up got quicker), and a slow machine only gets more kills, up to the cap of 10.
    const killed = await runEval({ suiteDir: SUITE, model: "oracle", only: [TASK], outDir: out, settings: { vectors: "off" }, killEverySec: 0.5, seed: 3 });
    const r = killed.results[0]!;
    const unkilled = plain.results[0]!;
    expect(unkilled.kills).toBeUndefined();
    expect(r.kills).toBeGreaterThanOrEqual(1);
    expect([r.solved, r.status, r.faults, r.error]).toEqual([true, "finished", undefined, undefined]);
    expect(r.steps).toBe(unkilled.steps);
    expect(r.effects).toMatchObject({ actions: unkilled.steps, duplicatedSteps: [], duplicatedOutcomes: 0, withoutOutcome: 0 });
    // The files as an unkilled run leaves them (the hidden tests are in both: copied after the run).
    const ws = (o: string) => path.join(o, "work", `${TASK}.ledgerloop.1`, "workspace");
    expect(files(ws(out))).toEqual(files(ws(plain.outDir)));
    // Read from the ledger itself, not through the harness: one decision per step, one outcome per action.
    const db = new Database(path.join(out, "work", `${TASK}.ledgerloop.1`, "state", "state.db"), { readonly: true });
    const perStep = db.prepare("SELECT json_extract(payload, '$.step') AS step, count(*) AS n FROM ll_events WHERE type = 'agent_action' GROUP BY 1 HAVING n > 1").all();
    const outcomes = db.prepare("SELECT count(*) FROM ll_events WHERE type = 'environment_feedback'").pluck().get();
    db.close();
    expect(perStep).toEqual([]);
    expect(outcomes).toBe(unkilled.steps);
    const report = fs.readFileSync(killed.reportFile, "utf8");
    expect(report).toContain("## Killed and resumed (--kill-every)");
    expect(report).toMatch(new RegExp(`\\| ${TASK} \\| 1 \\| ${r.kills} \\| yes \\| ok \\|`));
    // The eval's kill plan is part of what a resume must match.
    await expect(runEval({ suiteDir: SUITE, model: "oracle", only: [TASK], outDir: out, resume: true, settings: { vectors: "off" } })).rejects.toMatchObject({ code: "EVAL_OUT_MISMATCH" });
  }, 600_000);
});
