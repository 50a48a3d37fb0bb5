import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Database } from "../../src/sqlite/driver.js";
import { inflateRawSync } from "node:zlib";
import { afterEach, describe, expect, it } from "vitest";
import { SqliteLedger } from "../../src/ledger/sqlite-ledger.js";
import { openStateDb } from "../../src/ledger/state-db.js";
import { createRedactor } from "../../src/secrets.js";
import { testAgent, type TestAgent } from "../helpers/agent.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

// A key's first line without its END line (a truncated paste, a `head` of the file): before, the
// private-key rule hid "to the end of the text", and on a serialised prompt that meant the JSON's
// closing quotes and brackets too, so every run and resume failed at step 0.
const BEGIN = "-----BEGIN OPENSSH PRIVATE KEY-----";
const BODY = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW";
const LONE = `${BEGIN}\n${BODY}\n\nthe notes go on after a blank line`;

let agents: TestAgent[] = [];
const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(agents.map((a) => a.close()));
  agents = [];
  cleanupTemp();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

describe("a private key without its END line", () => {
  const r = createRedactor();

  it("is hidden up to a blank line or a quote, not to the end of the text", () => {
    const out = r.redact(`${LONE}\nlast line`);
    expect(out).not.toContain(BODY.slice(0, 30));
    expect(out).toContain("the notes go on after a blank line\nlast line");
    // In text that quotes it, the quote ends the key: what follows the quote stays.
    const quoted = r.redact(`key = "${BEGIN}\\n${BODY}" # deploy key\nnext`);
    expect(quoted).not.toContain(BODY.slice(0, 30));
    expect(quoted).toContain(`" # deploy key\nnext`);
  });

  it("stored in a blob as JSON still parses, and keeps every other value", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ll-struct-"));
    dirs.push(dir);
    const db = openStateDb(path.join(dir, "state.db"));
    const ledger = new SqliteLedger(db, { redactor: createRedactor() });
    const messages = [
      { role: "user", content: `goal: ${BEGIN}\n${BODY}` },
      { role: "assistant", content: "ok", toolCalls: [{ id: "c1", name: "read_file", args: { path: "url://a:b", note: "c@d" } }] },
    ];
    const json = JSON.stringify(messages);
    const back = await ledger.getBlob(await ledger.putBlob(json));
    db.close();
    const parsed = JSON.parse(back!) as typeof messages;
    expect(parsed).toHaveLength(2);
    expect(parsed[0]!.content).toMatch(/^goal: \[REDACTED\]/);
    expect(back).not.toContain(BODY.slice(0, 30));
    // Values that a text rule could join across a quote (`url://a:b","note":"c@d`) stay as they were.
    expect(parsed[1]).toEqual(messages[1]);
    // Stored again, a redacted blob is the same blob (a copy or migration keeps its hash).
    const again = new SqliteLedger(openStateDb(path.join(dir, "state.db")), { redactor: createRedactor() });
    expect(await again.putBlob(back!)).toBe(await again.putBlob(back!));
  });

  it("in the goal and in a file read does not stop the run, and is stored nowhere", async () => {
    const ws = tempWorkspace(undefined, { "notes.md": `# deploy\n${LONE}\n` });
    const a = await testAgent(ws, {
      decide: [{ tool_calls: [{ name: "read_file", args: { path: "notes.md" } }] }, { tool_calls: [{ name: "finish", args: { summary: "read the notes" } }] }],
    });
    agents.push(a);
    const final = await a.run(`use this key: ${BEGIN}\n${BODY}`);
    expect(final.status).toBe("finished");
    // Every prompt stored is JSON, and the model was asked twice (the run went past step 0).
    const rows = a.rt.db.prepare("SELECT data FROM ll_blobs").all() as Array<{ data: Buffer }>;
    const blobs = rows.map((b) => inflateRawSync(b.data).toString("utf8"));
    expect(blobs.length).toBeGreaterThan(0);
    for (const b of blobs) expect(() => JSON.parse(b)).not.toThrow();
    expect(a.model.requests.filter((q) => q.node === "decide")).toHaveLength(2);
    await a.close();
    agents = [];
    const dbFile = path.join(ws, ".ledgerloop", "state.db");
    const raw = new Database(dbFile, { readonly: true });
    const events = JSON.stringify(raw.prepare("SELECT payload FROM ll_events").all());
    raw.close();
    const wal = `${dbFile}-wal`;
    const disk = Buffer.concat([fs.readFileSync(dbFile), fs.existsSync(wal) ? fs.readFileSync(wal) : Buffer.alloc(0)]).toString("latin1");
    for (const text of [events, disk, ...blobs]) expect(text).not.toContain(BODY.slice(0, 30));
    expect(events).toContain("the notes go on after a blank line");
  }, 120_000);
});
