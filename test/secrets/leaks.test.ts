import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Database } from "../../src/sqlite/driver.js";
import { afterEach, describe, expect, it } from "vitest";
import { SqliteLedger } from "../../src/ledger/sqlite-ledger.js";
import { openStateDb } from "../../src/ledger/state-db.js";
import { createRedactor, secretValuesFromDotenv } from "../../src/secrets.js";
import { writeRunReport } from "../../src/report/write-run-report.js";
import { SqliteStore } from "../../src/memory/sqlite-store.js";
import { ScriptedModel } from "../../src/models/scripted.js";
import { createRuntime, type ProgressEvent } from "../../src/runtime.js";
import { testAgent, type TestAgent } from "../helpers/agent.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

// The four leaks the review found, as the commands printed them.
const AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
const PASSWORD = "Tr0ub4dor&3x";
const PGP_BODY = "lQOYBGXk3vMBCAC7q2WJ9sF1k0pXvO5nH3s8tR6yZ2aQ4mLc1dE7fG9hJ0kL3nP5rT8uW2xY4zA6bC8dE0fG2hJ4kL6";
const PGP = `-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n${PGP_BODY}\n=Xk3v\n-----END PGP PRIVATE KEY BLOCK-----\n`;
const CREDS = `[default]\naws_access_key_id = AKIAZ7QW3XK9PLM2NB4V\naws_secret_access_key = ${AWS_SECRET}\n`;
const CREDS_B64 = Buffer.from(CREDS)
  .toString("base64")
  .replace(/(.{76})/g, "$1\n");
// A .env value under a name no rule knows and of no known format: only the .env seeding hides it.
const DOTENV_VALUE = "q8Zr2Lw9Xv4Tn7Kp3Jm6";

let agents: TestAgent[] = [];
const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(agents.map((a) => a.close()));
  agents = [];
  cleanupTemp();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

describe("the review's leaks, through a real ledger append", () => {
  it.each([
    ["the AWS secret access key", `$ cat ~/.aws/credentials\n${CREDS}`, [AWS_SECRET, "AKIAZ7QW3XK9PLM2NB4V"]],
    ["a password= assignment", `connecting with password=${PASSWORD} host=db`, [PASSWORD]],
    ["a PGP private key block", `$ gpg --export-secret-keys -a\n${PGP}`, [PGP_BODY.slice(0, 40), PGP_BODY.slice(-40)]],
    ["the base64 of a file holding keys", `$ base64 creds.txt\n${CREDS_B64}`, [CREDS_B64.split("\n")[0]!, CREDS_B64.split("\n")[1]!]],
  ])("stores %s redacted", async (_name, stdout, secrets) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ll-leak-"));
    dirs.push(dir);
    const file = path.join(dir, "state.db");
    const db = openStateDb(file);
    const ledger = new SqliteLedger(db, { redactor: createRedactor() });
    const e = await ledger.append({
      threadId: "t",
      parentId: null,
      type: "environment_feedback",
      payload: { tool: "run_command", status: "ok", output: stdout, stdout, durationMs: 5 },
    });
    const ref = await ledger.putBlob(stdout);
    db.close();
    // Read back through a plain connection: what is on disk, not what the ledger API shows.
    const raw = new Database(file, { readonly: true });
    const payload = (raw.prepare("SELECT payload FROM ll_events WHERE id = ?").get(e.id) as { payload: string }).payload;
    raw.close();
    const reopened = openStateDb(file);
    const blob = await new SqliteLedger(reopened).getBlob(ref);
    reopened.close();
    for (const s of secrets) {
      expect(payload).not.toContain(s);
      expect(JSON.parse(payload).stdout).not.toContain(s);
      expect(blob).not.toContain(s);
    }
    expect(JSON.parse(payload).stdout).toContain("[REDACTED]");
  });
});

describe("a run that prints secrets", () => {
  it("stores them nowhere: not in the ledger, the checkpoints, the prompts or the report", async () => {
    const ws = tempWorkspace(undefined, {
      ".gitignore": ".env\ncreds.txt\nkey.asc\n",
      ".env": `NODE_ENV=development\nDB_PASSWORD=${PASSWORD}\nORDERS_DB=${DOTENV_VALUE}\n`,
      "creds.txt": CREDS,
      "key.asc": PGP,
      "app.js": "console.log('hi');\n",
    });
    expect(secretValuesFromDotenv(ws)).toEqual([PASSWORD, DOTENV_VALUE]);
    const cmd = (command: string) => ({ tool_calls: [{ name: "run_command", args: { command } }] });
    const a = await testAgent(
      ws,
      {
        decide: [
          cmd("cat .env"),
          cmd("cut -d= -f2- .env"),
          cmd("cat creds.txt"),
          cmd("base64 creds.txt"),
          cmd("cat key.asc"),
          cmd(`echo password=${PASSWORD}`),
          { tool_calls: [{ name: "finish", args: { summary: "printed everything" } }] },
        ],
      },
      { sandbox: "none" },
    );
    agents.push(a);
    const final = await a.run("print the credentials");
    expect(final.status).toBe("finished");
    const feedback = (await a.events()).filter((e) => e.type === "environment_feedback");
    // The commands did print them (the test would prove nothing otherwise).
    expect(JSON.stringify(feedback)).toContain("[REDACTED]");
    expect(JSON.stringify(feedback)).toContain("development");

    const report = fs.readFileSync(await writeRunReport(a.rt, "t1"), "utf8");
    const prompts = JSON.stringify(a.model.requests);
    const blobs = await Promise.all((a.rt.db.prepare("SELECT hash FROM ll_blobs").all() as Array<{ hash: string }>).map((r) => a.rt.ledger.getBlob(r.hash)));
    await a.close();
    agents = [];
    const db = fs.readFileSync(path.join(ws, ".ledgerloop", "state.db"));
    const wal = path.join(ws, ".ledgerloop", "state.db-wal");
    const disk = Buffer.concat([db, fs.existsSync(wal) ? fs.readFileSync(wal) : Buffer.alloc(0)]).toString("latin1");
    const secrets = [AWS_SECRET, PASSWORD, DOTENV_VALUE, PGP_BODY.slice(0, 40), CREDS_B64.split("\n")[0]!, "AKIAZ7QW3XK9PLM2NB4V"];
    for (const s of secrets) {
      expect(disk, `state.db holds ${s}`).not.toContain(s);
      expect(prompts, `a prompt holds ${s}`).not.toContain(s);
      expect(report, `the report holds ${s}`).not.toContain(s);
      for (const b of blobs) expect(b, `a blob holds ${s}`).not.toContain(s);
    }
  }, 120_000);
});

describe("the other ways out", () => {
  it("long-term memory stores values redacted, whoever puts them", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ll-leak-"));
    dirs.push(dir);
    const db = openStateDb(path.join(dir, "state.db"));
    const store = new SqliteStore(db, createRedactor());
    await store.put(["lessons"], "k", { text: `retry with password=${PASSWORD}` });
    const row = db.prepare("SELECT value FROM ll_store").get() as { value: string };
    const fts = JSON.stringify(db.prepare("SELECT text FROM ll_store_fts").all());
    db.close();
    expect(row.value).not.toContain(PASSWORD);
    expect(fts).not.toContain(PASSWORD);
    expect(row.value).toContain("password=[REDACTED]");
  });

  it("progress lines and warnings pass the run's redactor, .env values included", async () => {
    const ws = tempWorkspace(undefined, { ".env": `ORDERS_DB=${DOTENV_VALUE}\n` });
    const lines: string[] = [];
    const rt = await createRuntime(
      { workspace: ws, model: "scripted:test", retrieval: "lexical" },
      { model: new ScriptedModel({}), progress: (e: ProgressEvent) => lines.push(e.text), warn: (m) => lines.push(m) },
    );
    try {
      rt.progress!({ node: "act", step: 1, text: `run_command: echo ${DOTENV_VALUE} password=${PASSWORD}` });
    } finally {
      await rt.close();
    }
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toContain(DOTENV_VALUE);
    expect(lines[0]).not.toContain(PASSWORD);
  });
});
