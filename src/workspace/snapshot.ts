import { confined } from "./confined.js";

/** A compact file-tree summary: each top-level directory with its file count, then root files. */
export function treeSummary(files: Iterable<string>, maxEntries = 40): string {
  const dirs = new Map<string, number>();
  const rootFiles: string[] = [];
  for (const f of files) {
    const i = f.indexOf("/");
    if (i === -1) rootFiles.push(f);
    else dirs.set(f.slice(0, i), (dirs.get(f.slice(0, i)) ?? 0) + 1);
  }
  const parts = [...dirs].sort((a, b) => a[0].localeCompare(b[0])).map(([d, n]) => `${d}/ (${n})`);
  const all = [...parts, ...rootFiles.sort()];
  return all.length > maxEntries ? `${all.slice(0, maxEntries).join(", ")}, … (${all.length - maxEntries} more)` : all.join(", ");
}

function read(workspace: string, rel: string): string | null {
  try {
    // The agent's files: a manifest swapped for a link to a host file is not read.
    return confined(workspace)
      .readFile(rel, { maxBytes: 512 * 1024 })
      .toString("utf8");
  } catch {
    return null;
  }
}

/**
 * Declared dependencies (name and version spec) from the workspace's manifests: package.json,
 * requirements*.txt, pyproject.toml, go.mod, Cargo.toml. What a model needs to know to import the
 * right thing; lockfile resolution is deliberately not attempted.
 */
export function declaredPackages(workspace: string, max = 120): string[] {
  const out: string[] = [];
  const pkg = read(workspace, "package.json");
  if (pkg) {
    try {
      const j = JSON.parse(pkg) as Record<string, Record<string, string> | undefined>;
      for (const field of ["dependencies", "devDependencies", "peerDependencies"]) {
        for (const [n, v] of Object.entries(j[field] ?? {})) out.push(`npm:${n}@${v}${field === "devDependencies" ? " (dev)" : ""}`);
      }
    } catch {
      /* a broken package.json is reported by the tools that use it */
    }
  }
  for (const rel of ["requirements.txt", "requirements-dev.txt", "dev-requirements.txt"]) {
    for (const line of (read(workspace, rel) ?? "").split("\n")) {
      const m = line.trim().match(/^([A-Za-z0-9_.\-[\]]+)\s*([<>=!~].*)?$/);
      if (m && !line.trim().startsWith("#")) out.push(`pypi:${m[1]}${m[2] ? m[2].trim() : ""}`);
    }
  }
  const pyproject = read(workspace, "pyproject.toml");
  const deps = pyproject?.match(/^dependencies\s*=\s*\[([\s\S]*?)\]/m)?.[1];
  for (const m of deps?.matchAll(/"([^"]+)"/g) ?? []) out.push(`pypi:${m[1]}`);
  for (const m of (read(workspace, "go.mod") ?? "").matchAll(/^\s*(?:require\s+)?([\w.\-/]+\.[\w.\-/]+)\s+(v[\w.\-+]+)/gm)) out.push(`go:${m[1]}@${m[2]}`);
  const cargo = read(workspace, "Cargo.toml")?.match(/\[dependencies\]([\s\S]*?)(\n\[|$)/)?.[1];
  for (const m of cargo?.matchAll(/^\s*([\w-]+)\s*=\s*(?:"([^"]+)"|\{[^}]*version\s*=\s*"([^"]+)")/gm) ?? []) out.push(`cargo:${m[1]}@${m[2] ?? m[3]}`);
  return [...new Set(out)].slice(0, max);
}

/** Names (never values) of environment variables the project expects: from .env.example-style files. */
export function expectedEnvNames(workspace: string): string[] {
  const names = new Set<string>();
  for (const rel of [".env.example", ".env.sample", ".env.template", "example.env"]) {
    for (const line of (read(workspace, rel) ?? "").split("\n")) {
      const m = line.match(/^\s*(?:export\s+)?([A-Z_][A-Z0-9_]*)\s*=/);
      if (m) names.add(m[1]!);
    }
  }
  return [...names].sort();
}
