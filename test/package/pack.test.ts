import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ensureBuilt } from "../helpers/build.js";
import { jsonLines } from "../helpers/cli.js";
import { cleanupTemp, REPO, tempWorkspace } from "../helpers/workspace.js";

afterAll(() => cleanupTemp());

// What a user gets from the registry: `npm pack`, then the tarball installed in an empty directory
// (dependencies from npm's cache; better-sqlite3 compiles when it is not cached as built). Slow:
// minutes, mostly that install.
describe("the packed package", () => {
  it(
    "installs from its tarball in an empty directory, runs the demo and imports in a script",
    () => {
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
      // The same overrides and allowScripts as ours, as the README tells users: npm applies only the
      // root project's (sharp 0.32 would download libvips; newer Chroma bindings need glibc 2.38; npm
      // 12 skips the install scripts, better-sqlite3's build among them, that allowScripts does not approve).
      const { overrides, allowScripts } = JSON.parse(fs.readFileSync(path.join(REPO, "package.json"), "utf8")) as {
        overrides: Record<string, string>;
        allowScripts: Record<string, boolean>;
      };
      expect(allowScripts["better-sqlite3"]).toBe(true);
      fs.writeFileSync(path.join(app, "package.json"), JSON.stringify({ name: "app", private: true, type: "module", overrides, allowScripts }));
      const t0 = Date.now();
      execFileSync("npm", ["install", path.join(out, packed[0]!.filename), "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"], {
        cwd: app,
        encoding: "utf8",
        timeout: 900_000,
        stdio: ["ignore", "pipe", "pipe"],
      });
      console.log(`npm install of the tarball: ${((Date.now() - t0) / 1000).toFixed(0)} s`);
      // No TypeScript loader came with it.
      expect(fs.existsSync(path.join(app, "node_modules/tsx"))).toBe(false);

      const bin = path.join(app, "node_modules/.bin/ledgerloop");
      const ws = path.join(out, "demo");
      const demo = spawnSync(bin, ["demo", "-w", ws, "--json", "-q"], { cwd: out, encoding: "utf8", timeout: 180_000 });
      expect(demo.status, demo.stderr).toBe(0);
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
    },
    1_200_000,
  );
});
