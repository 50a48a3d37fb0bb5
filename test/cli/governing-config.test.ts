import fs from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { cli, cliAsync } from "../helpers/cli.js";
import { describePg, useTestDatabase } from "../helpers/postgres.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

const call = (name: string, args: Record<string, unknown>) => ({ tool_calls: [{ name, args }] });
// `frobnicate` is no program the policy knows: the run pauses for approval before it.
const SCRIPT = { decide: [call("run_command", { command: "echo ran > asked.txt && frobnicate --now" }), call("finish", { summary: "done" })] };

afterAll(() => cleanupTemp());

describe("a run never obeys a configuration it was not started with", () => {
  it("resume stops when ledgerloop.config.json changed since the run started, and goes on with --accept-config", () => {
    const ws = tempWorkspace(undefined, { "a.txt": "a\n", "ledgerloop.config.json": '{"sandbox":{"network":false}}\n' });
    const traj = path.join(ws, "..", `gov-${path.basename(ws)}.json`);
    fs.writeFileSync(traj, JSON.stringify(SCRIPT));
    const first = cli(["run", "task", "-w", ws, "--model", `scripted:${traj}`, "--thread", "G", "--json", "-q"]);
    expect(JSON.parse(first.stdout)).toMatchObject({ status: "awaiting_approval" });

    // Changed behind the run's back (by hand, or by a command at a level that could only repair it later).
    fs.writeFileSync(path.join(ws, "ledgerloop.config.json"), '{"sandbox":{"network":true,"policy":{"allow":["frobnicate","curl"]}}}\n');
    const refused = cli(["resume", "G", "-w", ws, "--approve"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/ledgerloop\.config\.json changed since run G started.*--accept-config/s);
    expect(fs.existsSync(path.join(ws, "asked.txt"))).toBe(false);

    const accepted = cli(["resume", "G", "-w", ws, "--approve", "--accept-config", "--json", "-q"]);
    expect(accepted.code, accepted.stderr).toBe(0);
    expect(JSON.parse(accepted.stdout)).toMatchObject({ status: "finished" });
    expect(fs.readFileSync(path.join(ws, "asked.txt"), "utf8")).toBe("ran\n");
    fs.rmSync(traj, { force: true });
  }, 300_000);

  it("a config file created after the start counts as a change too", () => {
    const ws = tempWorkspace(undefined, { "a.txt": "a\n" });
    const traj = path.join(ws, "..", `gov2-${path.basename(ws)}.json`);
    fs.writeFileSync(traj, JSON.stringify(SCRIPT));
    cli(["run", "task", "-w", ws, "--model", `scripted:${traj}`, "--thread", "H", "--json", "-q"]);
    fs.writeFileSync(path.join(ws, "ledgerloop.config.json"), '{"sandbox":{"network":true}}\n');
    const refused = cli(["resume", "H", "-w", ws, "--reject"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/was created since run H started/);
    fs.rmSync(traj, { force: true });
  }, 300_000);
});

describePg("on a PostgreSQL state the config a run started under is the database's record, on every machine", () => {
  const db = useTestDatabase("governing");

  it("resume --state in a copy of the workspace whose config was loosened stops, as on the machine that started it", async () => {
    const ws = tempWorkspace(undefined, { "a.txt": "a\n", "ledgerloop.config.json": '{"sandbox":{"network":false}}\n' });
    const traj = path.join(ws, "..", `gov-pg-${path.basename(ws)}.json`);
    fs.writeFileSync(traj, JSON.stringify(SCRIPT));
    const first = await cliAsync(["run", "task", "-w", ws, "--state", db.url, "--model", `scripted:${traj}`, "--thread", "P", "--json", "-q"]);
    expect(JSON.parse(first.stdout), first.stderr).toMatchObject({ status: "awaiting_approval" });

    // Another machine: the same files without this one's .ledgerloop/ (its local SQLite), and a
    // config that would let the paused command through.
    const other = tempWorkspace(undefined, { "a.txt": "a\n", "ledgerloop.config.json": '{"sandbox":{"network":true,"policy":{"allow":["frobnicate"]}}}\n' });
    const refused = await cliAsync(["resume", "P", "-w", other, "--state", db.url, "--approve"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/ledgerloop\.config\.json changed since run P started.*--accept-config/s);
    expect(fs.existsSync(path.join(other, "asked.txt"))).toBe(false);

    // Accepted there, the record is the database's: the first machine's unchanged file now differs from it.
    const accepted = await cliAsync(["resume", "P", "-w", other, "--state", db.url, "--approve", "--accept-config", "--json", "-q"]);
    expect(accepted.code, accepted.stderr).toBe(0);
    expect(JSON.parse(accepted.stdout)).toMatchObject({ status: "finished" });
    expect(fs.readFileSync(path.join(other, "asked.txt"), "utf8")).toBe("ran\n");
    fs.rmSync(traj, { force: true });
  }, 300_000);
});
