import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { inflateRawSync } from "node:zlib";
import { Database } from "../../src/sqlite/driver.js";
import { afterEach, describe, expect, it } from "vitest";
import { writeRunReport } from "../../src/report/write-run-report.js";
import { createRetriever } from "../../src/retrieval/hybrid.js";
import { createRedactor } from "../../src/secrets.js";
import { testAgent, type TestAgent } from "../helpers/agent.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";
import { SAMPLES, type Sample } from "./corpus-samples.js";

const r = createRedactor();
const header = (s: Sample) => `## sample: ${s.name}`;
const CORPUS = SAMPLES.map((s) => `${header(s)}\n${s.text}\n`).join("\n");

let agents: TestAgent[] = [];
afterEach(async () => {
  await Promise.all(agents.map((a) => a.close()));
  agents = [];
  cleanupTemp();
});

describe("secret corpus, redactor level", () => {
  it("has at least 60 formats, each with its own name", () => {
    expect(SAMPLES.length).toBeGreaterThanOrEqual(60);
    expect(new Set(SAMPLES.map((s) => s.name)).size).toBe(SAMPLES.length);
  });

  it.each(SAMPLES.map((s) => [s.name, s] as const))("hides %s and keeps the text around it", (_name, s) => {
    const out = r.redact(s.text);
    expect(out).not.toContain(s.secret);
    expect(out).toContain("[REDACTED]");
    for (const k of s.keep) expect(out).toContain(k);
  });

  it("hides every sample in the corpus file as a whole, and keeps every sample's heading", () => {
    const out = r.redact(CORPUS);
    for (const s of SAMPLES) {
      expect(out, s.name).not.toContain(s.secret);
      expect(out).toContain(header(s));
    }
  });
});

/** Groups of sample texts, each short enough for one commit message. */
function messageChunks(max = 4500): string[] {
  const out: string[] = [];
  let cur = "";
  for (const s of SAMPLES) {
    const piece = `${header(s)}\n${s.text}\n\n`;
    if (cur && cur.length + piece.length > max) {
      out.push(cur);
      cur = "";
    }
    cur += piece;
  }
  if (cur) out.push(cur);
  return out;
}

/** Every file under `dir`, recursively. */
function filesUnder(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? filesUnder(p) : e.isFile() ? [p] : [];
  });
}

/**
 * What a store could reveal of a secret: the secret itself, and (for full-text indexes, which keep
 * lowercased terms and store a term's prefix once per page) the tail of its longest alphanumeric run.
 */
function traces(secret: string): string[] {
  const run = (secret.match(/[A-Za-z0-9]+/g) ?? []).sort((a, b) => b.length - a.length)[0] ?? "";
  return run.length >= 11 ? [secret, run.slice(3).toLowerCase()] : [secret];
}

describe("secret corpus, end to end", () => {
  it("stores no sample raw: file read, command output, commit messages, lessons, index, report", async () => {
    const ws = tempWorkspace(undefined, { "secrets/corpus.txt": CORPUS, "README.md": "# app\n" });
    const git = (...args: string[]) => execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd: ws, stdio: "pipe" });
    git("init", "-q");
    git("add", "-A");
    git("commit", "-q", "-m", "initial");
    const chunks = messageChunks();
    const call = (name: string, args: Record<string, unknown>) => ({ tool_calls: [{ name, args }] });
    // Lessons hold one sample line each (the reflection keeps 12 lines: a few samples per line).
    const singleLine = SAMPLES.filter((s) => !s.text.includes("\n")).map((s) => s.text);
    const lessonLines = Array.from({ length: 12 }, (_, i) => singleLine.filter((_, k) => k % 12 === i).join(" ; "));
    const a = await testAgent(
      ws,
      {
        decide: [
          call("read_file", { path: "secrets/corpus.txt" }),
          call("run_command", { command: "cat secrets/corpus.txt" }),
          ...chunks.flatMap((message, i) => [call("write_file", { path: `notes/${i}.txt`, content: `note ${i}\n` }), call("git_commit", { message })]),
          call("finish", { summary: "read, printed and committed the corpus" }),
        ],
        reflect: [{ content: lessonLines.join("\n") }, { content: lessonLines.join("\n") }],
      },
      { sandbox: "none", maxSteps: 2 * chunks.length + 10, outputCapBytes: 1 << 20 },
    );
    agents.push(a);
    const final = await a.run("keep the corpus safe");
    expect(final.status).toBe("finished");

    // Each way in did carry every sample (so that "not stored" proves something).
    const feedback = (await a.events())
      .filter((e) => e.type === "environment_feedback")
      .map((e) => e.payload as { tool: string; output: string; status: string });
    const read = feedback.find((f) => f.tool === "read_file")!;
    const cat = feedback.find((f) => f.tool === "run_command")!;
    const commits = feedback.filter((f) => f.tool === "git_commit");
    expect(commits.map((c) => c.status)).toEqual(chunks.map(() => "ok"));
    const log = execFileSync("git", ["log", "--format=%B"], { cwd: ws, encoding: "utf8" });
    for (const s of SAMPLES) {
      expect(read.output).toContain(header(s));
      expect(cat.output).toContain(header(s));
      // The messages went through (the tool commits the message as recorded: redacted already).
      expect(log).toContain(header(s));
    }

    const report = await writeRunReport(a.rt, "t1");
    expect(fs.existsSync(report)).toBe(true);
    const prompts = JSON.stringify(a.model.requests);
    await a.close();
    agents = [];
    // The search index, with git history, as `ledgerloop index` would build it.
    const stateDir = path.join(ws, ".ledgerloop");
    const retriever = await createRetriever({ workspace: ws, stateDir, vectorIndex: "off", redact: (t) => r.redact(t) });
    try {
      await retriever.index();
    } finally {
      await retriever.close();
    }

    const files = filesUnder(stateDir);
    expect(files.map((f) => path.relative(stateDir, f))).toEqual(expect.arrayContaining(["state.db", "index.db", "reports/t1.md"]));
    const stores: Array<[string, string]> = files.map((f) => [path.relative(stateDir, f), fs.readFileSync(f).toString("latin1")]);
    const db = new Database(path.join(stateDir, "state.db"), { readonly: true });
    const blobs = db.prepare("SELECT hash, data FROM ll_blobs").all() as Array<{ hash: string; data: Buffer }>;
    const lessons = db.prepare("SELECT value FROM ll_store").all() as Array<{ value: string }>;
    db.close();
    expect(blobs.length).toBeGreaterThan(2);
    for (const bl of blobs) stores.push([`blob ${bl.hash.slice(0, 12)}`, inflateRawSync(bl.data).toString("utf8")]);
    stores.push(["model requests", prompts]);
    // The lessons were stored (redacted), so the memory path was exercised.
    expect(JSON.stringify(lessons)).toContain("[REDACTED]");

    const leaked: string[] = [];
    for (const s of SAMPLES) {
      for (const t of traces(s.secret)) {
        const where = stores.filter(([, text]) => (t === s.secret ? text : text.toLowerCase()).includes(t)).map(([name]) => name);
        if (where.length) leaked.push(`${s.name}: ${where.join(", ")}`);
      }
    }
    const caught = SAMPLES.length - new Set(leaked.map((l) => l.split(":")[0])).size;
    console.log(`secret corpus: ${SAMPLES.length} formats; end to end ${caught} caught in ${stores.length} stores`);
    expect(leaked).toEqual([]);
  }, 300_000);
});
