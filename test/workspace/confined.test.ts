import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { PathEscapeError } from "../../src/errors.js";
import { confined } from "../../src/workspace/confined.js";

let tmp: string;
let ws: string;
let outside: string;
const SECRET = "HOST-SECRET-7f3a";

beforeEach(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "ll-confined-")));
  ws = path.join(tmp, "ws");
  outside = path.join(tmp, "outside");
  fs.mkdirSync(path.join(ws, "src/deep"), { recursive: true });
  fs.mkdirSync(outside);
  fs.writeFileSync(path.join(ws, "src/a.ts"), "a\n");
  fs.writeFileSync(path.join(outside, "secret.txt"), SECRET);
});

afterEach(() => {
  fs.rmSync(tmp, { recursive: true, force: true });
});

function code(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    return (err as { code?: string }).code ?? String(err);
  }
  return "no error";
}

describe("reading", () => {
  it("reads files beneath the root, following symlinks that stay inside", () => {
    const c = confined(ws);
    fs.symlinkSync("../a.ts", path.join(ws, "src/deep/rel.ts"));
    fs.symlinkSync(path.join(ws, "src/a.ts"), path.join(ws, "abs.ts"));
    fs.symlinkSync("src", path.join(ws, "srcdir"));
    expect(c.readFile("src/a.ts").toString()).toBe("a\n");
    expect(c.readFile("src/deep/rel.ts").toString()).toBe("a\n");
    expect(c.readFile("abs.ts").toString()).toBe("a\n");
    expect(c.readFile("srcdir/deep/../a.ts").toString()).toBe("a\n");
    expect(c.readFile(path.join(ws, "src/a.ts")).toString()).toBe("a\n");
    expect(c.stat("srcdir").isDirectory()).toBe(true);
    expect(c.lstat("srcdir").isSymbolicLink()).toBe(true);
  });

  it("refuses symlinks that lead out, as the last component or along the way, and '..' above the root", () => {
    const c = confined(ws);
    fs.symlinkSync(path.join(outside, "secret.txt"), path.join(ws, "notes.txt"));
    fs.symlinkSync(outside, path.join(ws, "cache"));
    fs.symlinkSync("../../outside/secret.txt", path.join(ws, "src/up.txt"));
    fs.symlinkSync("/", path.join(ws, "rootlink"));
    for (const p of ["notes.txt", "cache/secret.txt", "src/up.txt", "../outside/secret.txt", path.join(outside, "secret.txt"), "rootlink/etc/hostname"]) {
      expect(() => c.readFile(p), p).toThrow(PathEscapeError);
    }
    // lstat describes the link itself, which is inside.
    expect(c.lstat("notes.txt").isSymbolicLink()).toBe(true);
  });

  it("tells a dangling link inside (ENOENT) from one leading out, and stops at a loop", () => {
    const c = confined(ws);
    fs.symlinkSync("missing.txt", path.join(ws, "dangling"));
    fs.symlinkSync(path.join(outside, "missing.txt"), path.join(ws, "dangling-out"));
    fs.symlinkSync("loop-b", path.join(ws, "loop-a"));
    fs.symlinkSync("loop-a", path.join(ws, "loop-b"));
    expect(code(() => c.readFile("dangling"))).toBe("ENOENT");
    expect(code(() => c.readFile("dangling-out"))).toBe("PATH_OUTSIDE_WORKSPACE");
    expect(() => c.readFile("loop-a")).toThrow(/too many levels of symlinks/);
    expect(code(() => c.readFile("src/a.ts/x"))).toBe("ENOTDIR");
  });

  it("refuses a FIFO without blocking, and a directory, and caps the size", () => {
    const c = confined(ws);
    spawnSync("mkfifo", [path.join(ws, "pipe")]);
    expect(code(() => c.readFile("pipe"))).toBe("NOT_A_REGULAR_FILE");
    expect(code(() => c.readFile("src"))).toBe("NOT_A_REGULAR_FILE");
    fs.writeFileSync(path.join(ws, "big"), Buffer.alloc(5000));
    expect(code(() => c.readFile("big", { maxBytes: 4999 }))).toBe("FILE_TOO_LARGE");
    expect(c.readFile("big", { maxBytes: 5000 }).length).toBe(5000);
  });

  it("keeps names that are not UTF-8 as bytes", () => {
    const c = confined(ws);
    const name = Buffer.from([0x66, 0xff, 0xfe, 0x2e, 0x74]); // "f\xff\xfe.t"
    const dir = Buffer.concat([Buffer.from("src/"), Buffer.from([0xc3, 0x28])]);
    c.mkdirp(dir);
    const file = Buffer.concat([dir, Buffer.from("/"), name]);
    c.writeFile(file, "bytes");
    expect(c.readFile(file).toString()).toBe("bytes");
    expect(c.readdir(dir).map((e) => e.name)).toEqual([name]);
    // The lossy string spelling names another file, which does not exist.
    expect(code(() => c.readFile(file.toString("utf8")))).toBe("ENOENT");
    c.rm(Buffer.from("src/\xc3\x28", "latin1"), { recursive: true });
    expect(fs.readdirSync(path.join(ws, "src")).sort()).toEqual(["a.ts", "deep"]);
  });

  it("with links 'never', refuses even a symlink that stays inside", () => {
    fs.symlinkSync("src", path.join(ws, "srcdir"));
    expect(code(() => confined(ws, { links: "never" }).readFile("srcdir/a.ts"))).toBe("PATH_OUTSIDE_WORKSPACE");
  });
});

describe("writing", () => {
  it("replaces a symlink at the name instead of writing through it", () => {
    const c = confined(ws);
    fs.symlinkSync(path.join(outside, "secret.txt"), path.join(ws, "notes.txt"));
    c.writeFile("notes.txt", "mine", { mode: 0o640 });
    expect(fs.readFileSync(path.join(outside, "secret.txt"), "utf8")).toBe(SECRET);
    expect(fs.lstatSync(path.join(ws, "notes.txt")).isFile()).toBe(true);
    expect(fs.statSync(path.join(ws, "notes.txt")).mode & 0o777).toBe(0o640);
    // No temp file is left beside it.
    expect(fs.readdirSync(ws).filter((n) => n.includes("ll-write"))).toEqual([]);
  });

  it("makes real directories only: a symlinked directory on the way is refused, even one inside", () => {
    const c = confined(ws);
    fs.symlinkSync(outside, path.join(ws, "cache"));
    fs.symlinkSync("src", path.join(ws, "srcdir"));
    expect(code(() => c.writeFile("cache/authorized_keys", "ssh-ed25519 AAAA", { mkdirs: true }))).toBe("PATH_OUTSIDE_WORKSPACE");
    expect(code(() => c.mkdirp("cache/sub"))).toBe("PATH_OUTSIDE_WORKSPACE");
    expect(code(() => c.mkdirp("srcdir"))).toBe("PATH_OUTSIDE_WORKSPACE");
    expect(fs.readdirSync(outside)).toEqual(["secret.txt"]);
    c.writeFile("new/deeper/file.txt", "x", { mkdirs: true });
    expect(fs.readFileSync(path.join(ws, "new/deeper/file.txt"), "utf8")).toBe("x");
  });

  it("removes a tree without following the symlinks in it, and a link without its target", () => {
    const c = confined(ws);
    fs.mkdirSync(path.join(ws, "tree/sub"), { recursive: true });
    fs.symlinkSync(outside, path.join(ws, "tree/sub/out"));
    fs.symlinkSync(path.join(outside, "secret.txt"), path.join(ws, "link"));
    c.rm("tree", { recursive: true });
    c.rm("link");
    c.rm("gone", { force: true });
    expect(fs.existsSync(path.join(ws, "tree"))).toBe(false);
    expect(fs.existsSync(path.join(ws, "link"))).toBe(false);
    expect(fs.readFileSync(path.join(outside, "secret.txt"), "utf8")).toBe(SECRET);
    expect(code(() => c.rm("src"))).toBe("EISDIR");
    expect(code(() => c.rmdir("src"))).toBe("ENOTEMPTY");
    fs.symlinkSync(outside, path.join(ws, "out"));
    expect(c.readlink("out").toString()).toBe(outside);
    expect(code(() => c.rmdir("out"))).toBe("ENOTDIR");
    expect(code(() => c.rm("."))).toBe("PATH_OUTSIDE_WORKSPACE");
  });

  it("fchmod changes the file's own mode and leaves a symlink's target alone", () => {
    const c = confined(ws);
    fs.chmodSync(path.join(outside, "secret.txt"), 0o4755);
    fs.symlinkSync(path.join(outside, "secret.txt"), path.join(ws, "link"));
    fs.writeFileSync(path.join(ws, "tool"), "x");
    fs.chmodSync(path.join(ws, "tool"), 0o4755);
    expect(c.fchmod("link", () => 0o777)).toBeNull();
    expect(c.fchmod("tool", (st) => st.mode & 0o1777)?.isFile()).toBe(true);
    expect(fs.statSync(path.join(outside, "secret.txt")).mode & 0o7777).toBe(0o4755);
    expect(fs.statSync(path.join(ws, "tool")).mode & 0o7777).toBe(0o755);
  });
});

describe("races: a directory swapped for a symlink while ledgerloop works", () => {
  let swapper: ChildProcess | undefined;
  afterEach(() => {
    swapper?.kill("SIGKILL");
    swapper = undefined;
  });

  /** Starts a loop that keeps exchanging ws/<dir> (a real directory) with a symlink to `target`. */
  function swapLoop(dir: string, target: string): ChildProcess {
    const py = `
import os
os.chdir(${JSON.stringify(ws)})
os.symlink(${JSON.stringify(target)}, "${dir}.link")
while True:
    os.rename("${dir}", "${dir}.real"); os.rename("${dir}.link", "${dir}")
    os.rename("${dir}", "${dir}.link"); os.rename("${dir}.real", "${dir}")
`;
    return spawn("python3", ["-c", py], { stdio: "ignore" });
  }

  /** Waits until the swap loop runs (python starts slowly on a loaded machine): its link exists. */
  async function swapping(dir: string): Promise<void> {
    for (let waited = 0; waited < 30_000; waited += 20) {
      if (fs.existsSync(path.join(ws, `${dir}.link`)) || fs.existsSync(path.join(ws, `${dir}.real`))) return;
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error("the swap loop did not start within 30 s");
  }

  it("a read never returns a file outside the workspace (swapped for a symlink to /)", async () => {
    const hostname = fs.readFileSync("/etc/hostname", "utf8");
    fs.mkdirSync(path.join(ws, "d/etc"), { recursive: true });
    fs.writeFileSync(path.join(ws, "d/etc/hostname"), "INSIDE");
    swapper = swapLoop("d", "/");
    await swapping("d");
    const c = confined(ws);
    let inside = 0;
    let refused = 0;
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline && (refused < 20 || inside < 20)) {
      try {
        const got = c.readFile("d/etc/hostname").toString();
        expect(got).toBe("INSIDE");
        inside++;
      } catch (err) {
        // Caught mid-swap: refused (the link leads out) or missing (between two renames).
        expect(["PATH_OUTSIDE_WORKSPACE", "ENOENT"]).toContain((err as { code?: string }).code);
        if ((err as { code?: string }).code === "PATH_OUTSIDE_WORKSPACE") refused++;
      }
    }
    // The swap really raced the reads: some saw the symlink, some the directory.
    expect(refused).toBeGreaterThan(0);
    expect(inside).toBeGreaterThan(0);
    expect(hostname).not.toBe("INSIDE");
  });

  it("a write never lands outside (the parent swapped for a symlink to a host directory)", async () => {
    fs.mkdirSync(path.join(ws, "cache"));
    swapper = swapLoop("cache", outside);
    await swapping("cache");
    const c = confined(ws);
    let written = 0;
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline && written < 200) {
      try {
        c.writeFile(`cache/f${written}`, "x", { mkdirs: true });
        written++;
      } catch (err) {
        expect(["PATH_OUTSIDE_WORKSPACE", "ENOENT"]).toContain((err as { code?: string }).code);
      }
    }
    expect(written).toBeGreaterThan(0);
    expect(fs.readdirSync(outside)).toEqual(["secret.txt"]);
  });
});
