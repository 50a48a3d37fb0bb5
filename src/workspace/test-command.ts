import { readdir, stat } from "node:fs/promises";
import path from "node:path";
import { confined } from "./confined.js";

export interface DetectedTestCommand {
  command: string;
  /** The workspace-relative file or directory that decided the command. */
  source: string;
}

// What `npm init` writes; running it only reports that there are no tests.
const NPM_PLACEHOLDER = /no test specified/;

const PYTEST_COMMAND = "python3 -m pytest -q";

/** Guesses the command that runs a workspace's tests from its manifest and config files. */
export async function detectTestCommand(workspace: string): Promise<DetectedTestCommand | null> {
  return (
    (await fromPackageJson(workspace)) ??
    (await fromPytestConfig(workspace)) ??
    ((await isFile(path.join(workspace, "go.mod"))) ? { command: "go test ./...", source: "go.mod" } : null) ??
    ((await isFile(path.join(workspace, "Cargo.toml"))) ? { command: "cargo test", source: "Cargo.toml" } : null)
  );
}

async function fromPackageJson(workspace: string): Promise<DetectedTestCommand | null> {
  const text = readText(workspace, "package.json");
  if (text === null) return null;
  let manifest: unknown;
  try {
    manifest = JSON.parse(text);
  } catch {
    // A half-edited package.json is the model's work in progress, not a reason to fail here.
    return null;
  }
  if (!isRecord(manifest) || !isRecord(manifest.scripts)) return null;
  const script = manifest.scripts.test;
  if (typeof script !== "string" || script.trim() === "" || NPM_PLACEHOLDER.test(script)) return null;
  const manager = await packageManager(workspace, manifest.packageManager);
  return { command: manager === "npm" ? "npm test --silent" : `${manager} test`, source: "package.json" };
}

async function packageManager(workspace: string, declared: unknown): Promise<"npm" | "pnpm" | "yarn"> {
  if (await isFile(path.join(workspace, "pnpm-lock.yaml"))) return "pnpm";
  if (await isFile(path.join(workspace, "yarn.lock"))) return "yarn";
  if (await isFile(path.join(workspace, "package-lock.json"))) return "npm";
  // Corepack's field decides when no lockfile has been written yet.
  if (typeof declared === "string") {
    if (declared.startsWith("pnpm@")) return "pnpm";
    if (declared.startsWith("yarn@")) return "yarn";
  }
  return "npm";
}

async function fromPytestConfig(workspace: string): Promise<DetectedTestCommand | null> {
  const sectionFiles: Array<[file: string, section: RegExp]> = [
    ["pytest.ini", /^\s*\[pytest\]\s*$/m],
    // pytest 9 also reads a native [tool.pytest] table.
    ["pyproject.toml", /^\s*\[tool\.pytest(?:\.ini_options)?\]\s*$/m],
    ["setup.cfg", /^\s*\[tool:pytest\]\s*$/m],
    ["tox.ini", /^\s*\[pytest\]\s*$/m],
  ];
  for (const [file, section] of sectionFiles) {
    const text = readText(workspace, file);
    // pytest.ini counts even without its section header: its mere presence picks the rootdir.
    if (text !== null && (file === "pytest.ini" || section.test(text))) {
      return { command: PYTEST_COMMAND, source: file };
    }
  }
  if (await isFile(path.join(workspace, "conftest.py"))) return { command: PYTEST_COMMAND, source: "conftest.py" };
  if (await hasPythonTests(path.join(workspace, "tests"), 3)) return { command: PYTEST_COMMAND, source: "tests/" };
  return null;
}

async function hasPythonTests(dir: string, depth: number): Promise<boolean> {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return false;
  }
  if (entries.some((entry) => entry.isFile() && /^test_.*\.py$/.test(entry.name))) return true;
  if (depth <= 1) return false;
  for (const entry of entries) {
    if (entry.isDirectory() && !entry.name.startsWith(".") && entry.name !== "__pycache__") {
      if (await hasPythonTests(path.join(dir, entry.name), depth - 1)) return true;
    }
  }
  return false;
}

/** A manifest's text, read through the confined reader (a link to a host file is not read), or null. */
function readText(workspace: string, rel: string): string | null {
  try {
    return confined(workspace)
      .readFile(rel, { maxBytes: 4 * 1024 * 1024 })
      .toString("utf8");
  } catch {
    return null;
  }
}

async function isFile(file: string): Promise<boolean> {
  try {
    return (await stat(file)).isFile();
  } catch {
    return false;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
