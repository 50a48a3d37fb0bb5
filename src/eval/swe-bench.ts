import fs from "node:fs";
import path from "node:path";
import { confined } from "../workspace/confined.js";
import type { HostRepo } from "../workspace/host-git.js";
import { changedPaths, diffAgainst, isRemote } from "./checkout.js";
import { EvalSuiteError, TaskLimits, type EvalTask } from "./task.js";

// `ledgerloop eval TASKS --format swe-bench`: a SWE-bench-style task list (JSON array or JSONL of
// instances with instance_id, repo, base_commit, problem_statement) run as eval tasks, and the
// predictions file the official harness scores: one JSON line per instance with instance_id,
// model_name_or_path and model_patch, the workspace's diff against the base commit without the
// files the agent added only for its own testing (see {@link patchPaths}).

/** One instance of a SWE-bench-style task list (other fields are ignored). */
export interface SweBenchInstance {
  instance_id: string;
  /** "owner/name" (a GitHub repository), a URL, or a path (relative to the list's folder). */
  repo: string;
  base_commit: string;
  problem_statement: string;
}

/** One line of the predictions file. */
export interface Prediction {
  instance_id: string;
  model_name_or_path: string;
  model_patch: string;
}

const REQUIRED = ["instance_id", "repo", "base_commit", "problem_statement"] as const;

/** Reads a task list (a JSON array, or one JSON object per line); errors name the line or index and the field. */
export function loadSweBench(file: string): SweBenchInstance[] {
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch (err) {
    throw new EvalSuiteError(`task list ${file}: cannot read it (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  const where: string[] = [];
  let items: unknown[];
  if (text.trimStart().startsWith("[")) {
    try {
      items = JSON.parse(text) as unknown[];
    } catch (err) {
      throw new EvalSuiteError(`task list ${file}: not JSON (${(err as Error).message})`);
    }
    items.forEach((_, i) => where.push(`item ${i}`));
  } else {
    items = [];
    text.split("\n").forEach((line, i) => {
      if (!line.trim()) return;
      try {
        items.push(JSON.parse(line));
      } catch (err) {
        throw new EvalSuiteError(`task list ${file}: line ${i + 1} is not JSON (${(err as Error).message})`);
      }
      where.push(`line ${i + 1}`);
    });
  }
  if (items.length === 0) throw new EvalSuiteError(`task list ${file} has no instances`);
  const seen = new Set<string>();
  return items.map((raw, i) => {
    const o = raw as Record<string, unknown>;
    for (const k of REQUIRED) {
      if (typeof o?.[k] !== "string" || !(o[k] as string).trim()) throw new EvalSuiteError(`task list ${file}: ${where[i]}: "${k}" is missing or not a non-empty string`);
    }
    const id = o.instance_id as string;
    if (seen.has(id)) throw new EvalSuiteError(`task list ${file}: ${where[i]}: instance_id "${id}" appears twice`);
    seen.add(id);
    if (!/^[0-9a-f]{7,40}$/i.test(o.base_commit as string)) throw new EvalSuiteError(`task list ${file}: ${where[i]}: base_commit "${o.base_commit}" is not a commit id`);
    return { instance_id: id, repo: o.repo as string, base_commit: o.base_commit as string, problem_statement: o.problem_statement as string };
  });
}

/** A name for an instance's files and results: its id, lower-cased, with what a file name cannot hold replaced. */
export function instanceKey(id: string): string {
  return id.toLowerCase().replace(/[^a-z0-9._-]/g, "-").replace(/^[^a-z0-9]+/, "").slice(0, 80) || "instance";
}

/** Where an instance's repository is cloned from: GitHub for "owner/name", else the URL or path as given. */
export function repoLocation(repo: string, listDir: string): string {
  if (isRemote(repo)) return repo;
  const local = path.resolve(listDir, repo);
  if (fs.existsSync(local)) return local;
  if (/^[\w.-]+\/[\w.-]+$/.test(repo)) return `https://github.com/${repo}.git`;
  throw new EvalSuiteError(`repository "${repo}" is neither "owner/name", a URL, nor a path that exists (from ${listDir})`);
}

/** The instances as eval tasks: the problem statement is the goal; no hidden tests (the official harness scores). */
export function sweBenchTasks(file: string): Array<EvalTask & { instanceId: string }> {
  const listDir = path.dirname(path.resolve(file));
  const keys = new Set<string>();
  return loadSweBench(file).map((inst) => {
    const key = instanceKey(inst.instance_id);
    if (keys.has(key)) throw new EvalSuiteError(`task list ${file}: two instance ids make the same file name "${key}"`);
    keys.add(key);
    return {
      id: key,
      instanceId: inst.instance_id,
      goal: `Resolve this issue in the repository (your workspace is a checkout of it):\n\n${inst.problem_statement}`,
      language: "other",
      toolchain: [],
      hiddenTestTimeoutSec: 120,
      limits: TaskLimits.parse({}),
      dir: listDir,
      workspaceDir: null,
      source: { repo: repoLocation(inst.repo, listDir), commit: inst.base_commit },
      hiddenDir: null,
      hiddenTest: null,
      oracleFile: null,
    };
  });
}

/** Folders whose new files are tests, and names that say a file is a test. */
const TEST_DIR = /(^|\/)(tests?|testing|__tests__|spec)\//i;
const TEST_NAME = /(^|\/)(test_[^/]*|[^/]*_tests?\.[^/.]+|[^/]*\.(test|spec)\.[^/]+|conftest\.py)$/i;
const MAX_READ = 1024 * 1024;

/**
 * Which changed paths go into model_patch. Every change to a file of the base commit (modified or
 * deleted) goes in. A file the agent added goes in only if it is part of the change: not a test
 * (under a tests/, test/, testing/, __tests__/ or spec/ folder, or named test_*, *_test.*,
 * *.test.*, *.spec.*, conftest.py) and referred to by name (its file name without extension, as
 * an import or include would) from a modified file or from another added file that goes in. So
 * reproduction scripts, scratch files and the agent's own tests stay out (the official harness
 * runs the instance's own tests), and a new module the fix imports goes in.
 */
export function patchPaths(workspace: string, changed: { added: string[]; modified: string[]; deleted: string[] }): { include: string[]; excluded: string[] } {
  const ws = confined(workspace, { links: "never" });
  const text = (rel: string): string => {
    try {
      return ws.readFile(rel, { maxBytes: MAX_READ }).toString("utf8");
    } catch {
      return "";
    }
  };
  const kept = new Set([...changed.modified, ...changed.deleted]);
  const texts = changed.modified.map(text);
  const candidates = changed.added.filter((f) => !TEST_DIR.test(f) && !TEST_NAME.test(f));
  for (let grew = true; grew; ) {
    grew = false;
    for (const f of candidates) {
      if (kept.has(f)) continue;
      const stem = path.basename(f).replace(/\.[^.]+$/, "");
      const ref = new RegExp(`(^|[^\\w-])${stem.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}([^\\w-]|$)`);
      if (stem && texts.some((t) => ref.test(t))) {
        kept.add(f);
        texts.push(text(f));
        grew = true;
      }
    }
  }
  const all = [...changed.modified, ...changed.deleted, ...changed.added].sort();
  return { include: all.filter((f) => kept.has(f)), excluded: all.filter((f) => !kept.has(f)) };
}

/** The instance's model_patch from its workspace and the repository pinned to it, and what was left out. */
export async function predictionPatch(repo: HostRepo, commit: string, workspace: string): Promise<{ patch: string; excluded: string[] }> {
  const changed = await changedPaths(repo, commit);
  const { include, excluded } = patchPaths(workspace, changed);
  return { patch: await diffAgainst(repo, commit, include), excluded };
}
