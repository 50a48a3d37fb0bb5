import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ensureBuilt } from "../helpers/build.js";
import { jsonLines } from "../helpers/cli.js";
import { cleanupTemp, REPO, tempWorkspace } from "../helpers/workspace.js";

afterAll(() => cleanupTemp());

/** Names of the installed packages that declare an install-time script. */
function installScripts(nodeModules: string): string[] {
  const names: string[] = [];
  for (const entry of fs.readdirSync(nodeModules)) {
    if (entry.startsWith(".")) continue;
    const dirs = entry.startsWith("@") ? fs.readdirSync(path.join(nodeModules, entry)).map((e) => `${entry}/${e}`) : [entry];
    for (const name of dirs) {
      const file = path.join(nodeModules, name, "package.json");
      if (!fs.existsSync(file)) continue;
      const scripts = (JSON.parse(fs.readFileSync(file, "utf8")) as { scripts?: Record<string, string> }).scripts ?? {};
      if (scripts.preinstall || scripts.install || scripts.postinstall) names.push(name);
    }
  }
  return names;
}

// What a user gets from the registry: `npm pack`, then the tarball installed in an empty directory
// with plain npm (dependencies from npm's cache). Nothing is compiled: SQLite's driver (libsql) comes
// with its compiled module as a per-platform package from the registry.
describe("the packed package", () => {
  it("installs from its tarball in an empty directory, runs the demo and imports in a script", () => {
    ensureBuilt();
    const out = tempWorkspace();
    const packed = JSON.parse(
      execFileSync("npm", ["pack", "--json", "--ignore-scripts", "--pack-destination", out], { cwd: REPO, encoding: "utf8", timeout: 120_000 }),
    ) as Array<{ filename: string; files: Array<{ path: string }> }>;
    const files = packed[0]!.files.map((f) => f.path);
    expect(files).toContain("dist/src/index.js");
    expect(files).toContain("dist/src/index.d.ts");
    expect(files).toContain("dist/src/web/page.html");
    // The viewer's page script and the ES modules it imports, as written (not compiled).
    expect(files).toContain("dist/src/web/app.js");
    expect(files).toContain("dist/src/web/app/dom.js");
    expect(files).toContain("examples/demo/trajectory.json");
    expect(files).toContain("langgraph.json");
    expect(files.some((f) => f.startsWith("test/"))).toBe(false);

    const app = path.join(out, "app");
    fs.mkdirSync(app);
    // A newcomer's project: no overrides, no allowScripts, plain `npm install`. The heavy parts
    // (Chroma's native binding, @xenova/transformers with sharp and onnxruntime, the OTLP
    // exporters) are optional peers, so nothing here downloads at install time.
    fs.writeFileSync(path.join(app, "package.json"), JSON.stringify({ name: "app", private: true, type: "module" }));
    const t0 = Date.now();
    execFileSync("npm", ["install", path.join(out, packed[0]!.filename), "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"], {
      cwd: app,
      encoding: "utf8",
      timeout: 900_000,
      stdio: ["ignore", "pipe", "pipe"],
    });
    // Not asserted: the machine is shared with the other tests.
    console.log(`npm install of the tarball: ${((Date.now() - t0) / 1000).toFixed(0)} s`);
    const installed = fs.readdirSync(path.join(app, "node_modules"));
    // No TypeScript loader came with it, nor any optional heavy part.
    // Nor a SQLite driver that compiles at install (better-sqlite3: a minute of CPU where its binary
    // cannot be downloaded), nor LangGraph's SQLite checkpointer, which requires that one.
    for (const absent of ["tsx", "chromadb", "sharp", "onnxruntime-node", "protobufjs", "@xenova", "better-sqlite3"]) expect(installed).not.toContain(absent);
    expect(fs.existsSync(path.join(app, "node_modules/@langchain/langgraph-checkpoint-sqlite"))).toBe(false);
    // The only install scripts: the grammars', which find the prebuilt binaries they ship.
    expect(installScripts(path.join(app, "node_modules")).sort()).toEqual(["tree-sitter-javascript", "tree-sitter-python", "tree-sitter-typescript"]);

    const bin = path.join(app, "node_modules/.bin/ledgerloop");
    const ws = path.join(out, "demo");
    const demo = spawnSync(bin, ["demo", "-w", ws, "--json", "-q"], { cwd: out, encoding: "utf8", timeout: 180_000 });
    expect(demo.status, demo.stderr).toBe(0);
    // Vectors are off without chromadb, quietly: the default embedder was not a choice.
    expect(demo.stderr).not.toMatch(/vector|chromadb/i);
    const result = jsonLines<{ thread: string; status: string }>(demo.stdout)[0]!;
    expect(result.status).toBe("finished");

    fs.writeFileSync(
      path.join(app, "read.mjs"),
      `import { getHistory, listThreads, TaskState } from "ledgerloop";\n` +
        `const [t] = await listThreads({ workspace: process.argv[2] });\n` +
        `const h = await getHistory(t.thread, { workspace: process.argv[2] });\n` +
        `console.log(JSON.stringify({ thread: t.thread, status: t.status, checkpoints: h.length, state: typeof TaskState }));\n`,
    );
    const script = spawnSync(process.execPath, [path.join(app, "read.mjs"), ws], { cwd: app, encoding: "utf8", timeout: 60_000 });
    expect(script.status, script.stderr).toBe(0);
    const read = JSON.parse(script.stdout) as { thread: string; status: string; checkpoints: number; state: string };
    expect(read).toMatchObject({ thread: result.thread, status: "finished", state: "object" });
    expect(read.checkpoints).toBeGreaterThan(30);

    // A feature whose package is missing says, in one line, what to install.
    const xenova = spawnSync(bin, ["search", "health", "-w", ws, "--embedder", "xenova:Xenova/all-MiniLM-L6-v2"], {
      cwd: out,
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(xenova.status).toBe(2);
    expect(xenova.stderr.trim().split("\n")).toEqual([expect.stringContaining("run `npm install @xenova/transformers@2.17.2`")]);
    // Asking for a Chroma server without chromadb: one warning naming it; search goes on.
    const shared = spawnSync(bin, ["search", "health", "-w", ws], {
      cwd: out,
      encoding: "utf8",
      timeout: 60_000,
      env: { ...process.env, CHROMA_URL: "http://127.0.0.1:9" },
    });
    expect(shared.status, shared.stderr).toBe(0);
    expect(shared.stderr.trim().split("\n")).toEqual([
      expect.stringContaining(
        "vector search is off: the Chroma vector store needs chromadb, which ledgerloop does not install: run `npm install chromadb@3.5.0`",
      ),
    ]);
    expect(shared.stdout).toMatch(/server\.js/);
    const doctor = spawnSync(bin, ["doctor", "-w", ws, "--json"], { cwd: out, encoding: "utf8", timeout: 60_000 });
    const chroma = (JSON.parse(doctor.stdout) as { checks: Array<{ name: string; ok: boolean; detail: string }> }).checks.find((c) => c.name === "chroma");
    expect(chroma).toMatchObject({ ok: true, detail: expect.stringContaining("npm install chromadb@3.5.0") });
    // A shared server asked for without the client package no run could use it with: a failed check, not ok.
    const doctorShared = spawnSync(bin, ["doctor", "-w", ws, "--json"], {
      cwd: out,
      encoding: "utf8",
      timeout: 60_000,
      env: { ...process.env, CHROMA_URL: "http://127.0.0.1:9" },
    });
    const chromaShared = (JSON.parse(doctorShared.stdout) as { checks: Array<{ name: string; ok: boolean; detail: string }> }).checks.find(
      (c) => c.name === "chroma",
    );
    expect(chromaShared).toMatchObject({
      ok: false,
      detail: expect.stringMatching(/^CHROMA_URL is set but chromadb is not installed.*npm install chromadb@3\.5\.0/),
    });

    // The shipped declarations compile in a strict consumer that checks library files too.
    fs.writeFileSync(
      path.join(app, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: { target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", strict: true, skipLibCheck: false, noEmit: true },
        files: ["use.ts"],
      }),
    );
    fs.writeFileSync(
      path.join(app, "use.ts"),
      `import { getHistory, listThreads, openAgent, TaskState } from "ledgerloop";\n` +
        `import * as graph from "ledgerloop/graph";\n` +
        `import { createCodingAgent, recursionLimitFor } from "ledgerloop/graph";\n` +
        `import { chatModelFromInstance, createModel, isToolCallingChatModel, LangChainChatModel } from "ledgerloop/models";\n` +
        `export const parts: unknown[] = [getHistory, listThreads, openAgent, graph, createCodingAgent, recursionLimitFor];\n` +
        `export const models: unknown[] = [chatModelFromInstance, createModel, isToolCallingChatModel, LangChainChatModel];\n` +
        `export type State = typeof TaskState;\n`,
    );
    const tsc = spawnSync(process.execPath, [path.join(REPO, "node_modules/typescript/bin/tsc"), "-p", app], { cwd: app, encoding: "utf8", timeout: 300_000 });
    expect(tsc.stdout + tsc.stderr).toBe("");
    expect(tsc.status).toBe(0);
  }, 1_200_000);
});
