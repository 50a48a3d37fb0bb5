import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { detectTestCommand } from "../../src/workspace/test-command.js";

const tempDirs: string[] = [];
afterEach(async () => {
  await Promise.all(tempDirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

async function workspace(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "ledgerloop-test-command-"));
  tempDirs.push(dir);
  for (const [name, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, name)), { recursive: true });
    await writeFile(path.join(dir, name), content);
  }
  return dir;
}

const pkg = (scripts: Record<string, string>, extra: Record<string, unknown> = {}) => JSON.stringify({ name: "demo", version: "1.0.0", scripts, ...extra });

describe("detectTestCommand", () => {
  it("uses npm for a package.json test script", async () => {
    const dir = await workspace({ "package.json": pkg({ test: "vitest run" }), "package-lock.json": "{}" });
    expect(await detectTestCommand(dir)).toEqual({ command: "npm test --silent", source: "package.json" });
  });

  it("follows the lockfile to pnpm or yarn", async () => {
    const pnpm = await workspace({ "package.json": pkg({ test: "vitest run" }), "pnpm-lock.yaml": "lockfileVersion: '9.0'\n" });
    expect(await detectTestCommand(pnpm)).toEqual({ command: "pnpm test", source: "package.json" });
    const yarn = await workspace({ "package.json": pkg({ test: "jest" }), "yarn.lock": "# yarn lockfile v1\n" });
    expect(await detectTestCommand(yarn)).toEqual({ command: "yarn test", source: "package.json" });
  });

  it("falls back to the packageManager field when there is no lockfile", async () => {
    const dir = await workspace({ "package.json": pkg({ test: "vitest run" }, { packageManager: "pnpm@9.12.0" }) });
    expect(await detectTestCommand(dir)).toEqual({ command: "pnpm test", source: "package.json" });
  });

  it("skips npm's placeholder script and moves on", async () => {
    const placeholder = pkg({ test: 'echo "Error: no test specified" && exit 1' });
    expect(await detectTestCommand(await workspace({ "package.json": placeholder }))).toBeNull();
    const withGo = await workspace({ "package.json": placeholder, "go.mod": "module example.com/x\n\ngo 1.22\n" });
    expect(await detectTestCommand(withGo)).toEqual({ command: "go test ./...", source: "go.mod" });
  });

  it("skips a malformed package.json without throwing", async () => {
    const dir = await workspace({ "package.json": '{ "scripts": { "test": "vitest" ', "Cargo.toml": '[package]\nname = "x"\n' });
    expect(await detectTestCommand(dir)).toEqual({ command: "cargo test", source: "Cargo.toml" });
    expect(await detectTestCommand(await workspace({ "package.json": "[1, 2]" }))).toBeNull();
  });

  it.each([
    ["pytest.ini", { "pytest.ini": "[pytest]\naddopts = -q\n" }],
    ["pyproject.toml", { "pyproject.toml": '[project]\nname = "x"\n\n[tool.pytest.ini_options]\ntestpaths = ["tests"]\n' }],
    ["setup.cfg", { "setup.cfg": "[metadata]\nname = x\n\n[tool:pytest]\naddopts = -q\n" }],
    ["tox.ini", { "tox.ini": "[tox]\nenvlist = py311\n\n[pytest]\naddopts = -q\n" }],
    ["conftest.py", { "conftest.py": "import pytest\n" }],
    ["tests/", { "tests/unit/test_math.py": "def test_a():\n    pass\n" }],
  ])("detects pytest from %s", async (source, files) => {
    expect(await detectTestCommand(await workspace(files))).toEqual({ command: "python3 -m pytest -q", source });
  });

  it("ignores Python config that does not configure pytest", async () => {
    const dir = await workspace({
      "pyproject.toml": '[project]\nname = "x"\n\n[tool.ruff]\nline-length = 100\n',
      "setup.cfg": "[flake8]\nmax-line-length = 100\n",
      "tox.ini": "[tox]\nenvlist = py311\n",
      "tests/helpers.py": "X = 1\n",
    });
    expect(await detectTestCommand(dir)).toBeNull();
  });

  it("prefers package.json, then pytest, then go.mod, then Cargo.toml", async () => {
    const all = {
      "package.json": pkg({ test: "node --test" }),
      "pytest.ini": "[pytest]\n",
      "go.mod": "module example.com/x\n",
      "Cargo.toml": '[package]\nname = "x"\n',
    };
    expect((await detectTestCommand(await workspace(all)))?.source).toBe("package.json");
    const { "package.json": _pkg, ...noNode } = all;
    expect((await detectTestCommand(await workspace(noNode)))?.source).toBe("pytest.ini");
    const { "pytest.ini": _ini, ...noPython } = noNode;
    expect((await detectTestCommand(await workspace(noPython)))?.source).toBe("go.mod");
    const { "go.mod": _mod, ...rustOnly } = noPython;
    expect((await detectTestCommand(await workspace(rustOnly)))?.source).toBe("Cargo.toml");
  });

  it("returns null for an empty or missing workspace", async () => {
    expect(await detectTestCommand(await workspace({}))).toBeNull();
    expect(await detectTestCommand(path.join(os.tmpdir(), "ledgerloop-does-not-exist-xyz"))).toBeNull();
  });
});
