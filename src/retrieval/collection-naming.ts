import { createHash } from "node:crypto";
import { gitHead, gitOutput } from "./git-log.js";

/**
 * Names of the Chroma collections on a shared server (CHROMA_URL, one server for every worker).
 * Vectors are keyed by what they were computed from, not by where a worker keeps its copy: the
 * repository (so workers on different machines and paths cloning it share one set of vectors) and
 * the revision line (so forks, branches and a rewound thread never read each other's stale
 * vectors of the same paths). Chunk ids are workspace-relative paths and line ranges, the same in
 * every clone.
 */

/** The default revision line: a run that is not a fork of another. */
export const DEFAULT_VECTOR_LINE = "main";

/** What identifies the repository of a workspace, and how it was found. */
export interface RepositoryIdentity {
  /** git-roots: the root commit(s); origin: the normalised origin URL; path: the workspace path (not a git repository). */
  kind: "git-roots" | "origin" | "path";
  /** The identity itself (hashed into collection names). */
  value: string;
}

/**
 * `git@host:a/b.git`, `ssh://git@host/a/b`, `https://user:tok@host/a/b.git/` all become
 * `host/a/b`: one repository however a worker cloned it (and no credentials in the identity).
 */
export function normaliseRemoteUrl(url: string): string {
  let u = url.trim();
  const scp = /^(?:[^@/]+@)?([^:/]+):(?!\/)(.+)$/.exec(u);
  if (scp && !/^[a-z][a-z0-9+.-]*:\/\//i.test(u)) u = `${scp[1]}/${scp[2]}`;
  else {
    try {
      const p = new URL(u);
      u = p.protocol === "file:" ? p.pathname : `${p.hostname}${p.port && !["22", "80", "443", "9418"].includes(p.port) ? `:${p.port}` : ""}${p.pathname}`;
    } catch {
      // a local path: kept as it is
    }
  }
  return u
    .replace(/\/+$/, "")
    .replace(/\.git$/i, "")
    .replace(/\/+$/, "")
    .toLowerCase();
}

/**
 * The repository a workspace holds: its root commit(s) in a full clone (the same for every clone
 * and fork, whatever the remote is called), the normalised origin URL in a shallow clone (whose
 * oldest commit depends on the depth) or a repository without commits, else the workspace path.
 * A workspace below the repository's top level adds its place in it (its relative paths differ).
 */
export async function repositoryIdentity(workspace: string): Promise<RepositoryIdentity> {
  const head = await gitHead(workspace);
  const prefix = (await gitOutput(workspace, ["rev-parse", "--show-prefix"]))?.trim().replace(/\/+$/, "") ?? "";
  const sub = prefix ? `:${prefix}` : "";
  if (head.head !== null && !head.shallow) {
    const roots = (await gitOutput(workspace, ["rev-list", "--max-parents=0", "HEAD"]))
      ?.split("\n")
      .map((l) => l.trim())
      .filter(Boolean)
      .sort();
    if (roots?.length) return { kind: "git-roots", value: `${roots.join(",")}${sub}` };
  }
  const origin = (await gitOutput(workspace, ["config", "--get", "remote.origin.url"]))?.trim();
  if (origin) return { kind: "origin", value: `${normaliseRemoteUrl(origin)}${sub}` };
  return { kind: "path", value: workspace };
}

const short = (text: string, n: number) => createHash("sha256").update(text).digest("hex").slice(0, n);

/**
 * The prefix of a shared server's collections for a repository and line:
 * `ll_<repository hash>_<line hash>`; the embedder and the space follow (see chroma-index.ts).
 */
export function sharedCollectionPrefix(identity: RepositoryIdentity, line: string = DEFAULT_VECTOR_LINE): string {
  return `ll_${short(`${identity.kind}\0${identity.value}`, 16)}_${short(line, 12)}`;
}
