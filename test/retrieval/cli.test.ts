import fs from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { handleIndex } from "../../src/cli/index.js";
import { searchWorkspace } from "../../src/inspect/search.js";
import { CliError } from "../../src/errors.js";
import { SqliteLedger } from "../../src/ledger/sqlite-ledger.js";
import { openStateDb } from "../../src/ledger/state-db.js";
import { Database } from "../../src/sqlite/driver.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";
import { makeRepo } from "./helpers/git-repo.js";

// The commands' handlers, in process (the CLI child-process tests come once main.ts registers them).
afterAll(cleanupTemp);

const files = {
  "src/roles.ts": "export enum UserRole { Admin, Viewer }\nexport function checkRole(r: UserRole) { return r === UserRole.Admin; }\n",
  "src/chart.ts": "export function drawChart() {}\n",
  ".gitignore": "dist/\n",
  "dist/out.js": "var UserRole;\n",
};

describe("ledgerloop index / search handlers", () => {
  it("index reports files, skips, chunks and the vector state; search prints workspace-relative results best first", async () => {
    const ws = tempWorkspace(undefined, files);
    const seen: string[] = [];
    const summary = await handleIndex({ workspace: ws }, (p) => p.phase === "index" && seen.push(p.path!));
    expect(summary).toMatchObject({ workspace: ws, files: 3, indexed: 3, skipped: { ignored: 1 }, vector: { state: "ok", embedder: "hashed-v1-384" } });
    // A plain directory: the history source is off and says why (no warning).
    expect(summary.history).toMatchObject({ state: "off", commits: 0, detail: "not a git repository" });
    expect(summary.indexFile).toBe(path.join(ws, ".ledgerloop", "index.db"));
    expect(seen.sort()).toEqual([".gitignore", "src/chart.ts", "src/roles.ts"]);
    expect(JSON.parse(JSON.stringify(summary))).toEqual(summary);

    fs.writeFileSync(path.join(ws, "src/perm.ts"), "export function grantUserRole() {}\n");
    // search refreshes the index first, so the new file is found.
    const out = await searchWorkspace("user role", { workspace: ws, k: 3 });
    expect(out.results.length).toBeGreaterThan(0);
    expect(out.results.length).toBeLessThanOrEqual(3);
    const first = out.results[0]!;
    expect(first).toMatchObject({ kind: "code" });
    if (first.kind !== "code") throw new Error("unreachable");
    expect(["src/roles.ts", "src/perm.ts"]).toContain(first.path);
    expect(Object.keys(first).sort()).toEqual(["endLine", "kind", "path", "preview", "score", "sources", "startLine", "symbols"]);
    expect(out.results.map((r) => (r.kind === "code" ? r.path : ""))).toContain("src/perm.ts");
    for (let i = 1; i < out.results.length; i++) expect(out.results[i]!.score).toBeLessThanOrEqual(out.results[i - 1]!.score);
  });

  it("searches ledger events of the state database with --scope events", async () => {
    const ws = tempWorkspace(undefined, files);
    const db = openStateDb(path.join(ws, ".ledgerloop", "state.db"));
    const ledger = new SqliteLedger(db);
    const e = await ledger.append({ threadId: "run-1", parentId: null, type: "decision", payload: { text: "Keep roles in an enum", step: 1 } });
    db.close();
    const out = await searchWorkspace("roles enum", { workspace: ws, scope: "events" });
    expect(out.results[0]).toMatchObject({ kind: "event", eventId: e.id, threadId: "run-1", type: "decision" });
  });

  it("index redacts like a run does: a .env secret in a commit message or a file never reaches index.db", async () => {
    const ws = tempWorkspace();
    const secret = "plum-orchard-77-velvet";
    fs.writeFileSync(path.join(ws, ".env"), `BILLING_API_KEY=${secret}\n`);
    makeRepo(ws, [
      {
        message: "invoice totals: round per line",
        files: { "src/invoice.ts": "export function total(lines: number[]) {\n  return lines.reduce((a, b) => a + b, 0);\n}\n" },
      },
      {
        message: `invoice totals: sandbox account uses ${secret}`,
        files: {
          "src/invoice.ts": `// sandbox key ${secret}\nexport function total(lines: number[]) {\n  return lines.reduce((a, b) => a + Math.round(b), 0);\n}\n`,
        },
      },
    ]);
    await handleIndex({ workspace: ws });
    const out = await searchWorkspace("invoice totals sandbox account", { workspace: ws, k: 3 });
    const first = out.results[0]!;
    if (first.kind !== "code") throw new Error("expected a code hit");
    expect(first.sources.history).toContain("invoice totals: sandbox account uses [REDACTED]");
    expect(JSON.stringify(out)).not.toContain(secret);
    const db = new Database(path.join(ws, ".ledgerloop", "index.db"), { readonly: true });
    const subjects = JSON.stringify(db.prepare("SELECT subject FROM hist_commits").all());
    db.close();
    expect(subjects).toContain("[REDACTED]");
    expect(subjects).not.toContain(secret);
  });

  it("refuses bad input with usage errors", async () => {
    const ws = tempWorkspace(undefined, files);
    await expect(searchWorkspace("x", { workspace: ws, scope: "everything" })).rejects.toMatchObject({ exitCode: 2 });
    await expect(searchWorkspace("   ", { workspace: ws })).rejects.toBeInstanceOf(CliError);
    await expect(searchWorkspace("x", { workspace: ws, scope: "events" })).rejects.toThrow(/needs a ledger/);
    const err = await handleIndex({ workspace: ws, embedder: "xenova:nope/missing", modelsDir: path.join(ws, "models") }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CliError);
    expect((err as CliError).exitCode).toBe(2);
    expect((err as Error).message).toMatch(/missing config\.json/);
    await expect(handleIndex({ workspace: path.join(ws, "nope") })).rejects.toThrow(/does not exist/);
  });
});
