import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { searchWorkspace } from "../../src/inspect/search.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

// A search refreshes the index first and takes an unchanged file's word for it from one lstat (size
// and mtime as indexed); whatever changed is read again through the confined reader.

afterAll(() => cleanupTemp());

const paths = async (ws: string, q: string) =>
  (await searchWorkspace(q, { workspace: ws, embedder: "hashed" })).results.flatMap((r) => (r.kind === "code" ? [`${r.path}:${r.preview}`] : []));

/** Moves a file's mtime on, as a later edit would (a rewrite in the same millisecond keeps it). */
function later(file: string): void {
  const t = fs.statSync(file).mtime.getTime() / 1000 + 5;
  fs.utimesSync(file, t, t);
}

describe("search sees every change since the last index", () => {
  it("finds new content of an edited file of the same size, of a grown one, of a new one, and drops a deleted one", async () => {
    const ws = tempWorkspace(undefined, {
      "src/a.ts": "export function alphaWidget() {\n  return 1;\n}\n",
      "src/b.ts": "export const betaGadget = 2;\n",
      "src/c.ts": "export const gammaThing = 3;\n",
    });
    expect((await paths(ws, "alphaWidget")).some((p) => p.startsWith("src/a.ts"))).toBe(true);

    const a = path.join(ws, "src/a.ts");
    fs.writeFileSync(a, "export function omegaWidget() {\n  return 1;\n}\n"); // same length as before
    later(a);
    fs.appendFileSync(path.join(ws, "src/b.ts"), "export const deltaSprocket = 4;\n");
    later(path.join(ws, "src/b.ts"));
    fs.writeFileSync(path.join(ws, "src/d.ts"), "export const epsilonCog = 5;\n");
    fs.rmSync(path.join(ws, "src/c.ts"));

    expect((await paths(ws, "omegaWidget")).filter((p) => p.includes("omegaWidget"))).toEqual([expect.stringMatching(/^src\/a\.ts:/)]);
    expect((await paths(ws, "alphaWidget")).filter((p) => p.includes("alphaWidget"))).toEqual([]);
    expect((await paths(ws, "deltaSprocket")).some((p) => p.startsWith("src/b.ts") && p.includes("deltaSprocket"))).toBe(true);
    expect((await paths(ws, "epsilonCog")).some((p) => p.startsWith("src/d.ts"))).toBe(true);
    expect((await paths(ws, "gammaThing")).filter((p) => p.startsWith("src/c.ts"))).toEqual([]);
  }, 60_000);

  it("a file swapped for a link to a host file of the same size and mtime is not indexed", async () => {
    const secret = "export const hostOnlySecretWord = 7;\n";
    const ws = tempWorkspace(undefined, { "src/e.ts": "export const plainOldContent = 77;\n".padEnd(secret.length, " ") });
    await paths(ws, "plainOldContent");
    const e = path.join(ws, "src/e.ts");
    const host = fs.mkdtempSync(path.join(os.tmpdir(), "ll-host-"));
    try {
      const outside = path.join(host, "secret.ts");
      fs.writeFileSync(outside, secret);
      const st = fs.statSync(e);
      expect(st.size).toBe(secret.length);
      fs.utimesSync(outside, st.atime, st.mtime);
      fs.rmSync(e);
      fs.symlinkSync(outside, e);
      expect(await paths(ws, "hostOnlySecretWord")).toEqual([]);
      // The link leads out of the workspace: the walk leaves it out and its indexed content goes.
      expect((await paths(ws, "plainOldContent")).filter((p) => p.startsWith("src/e.ts"))).toEqual([]);
    } finally {
      fs.rmSync(host, { recursive: true, force: true });
    }
  }, 60_000);
});
