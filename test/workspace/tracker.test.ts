import fs from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { trackCommand, WorkspaceTracker } from "../../src/workspace/tracker.js";
import { walkCounts } from "../../src/workspace/walk.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

afterEach(() => cleanupTemp());

const walksDuring = async <T>(fn: () => Promise<T>): Promise<{ value: T; walks: number }> => {
  const before = walkCounts.walks;
  const value = await fn();
  return { value, walks: walkCounts.walks - before };
};

describe("WorkspaceTracker: the walk shared by command feedback and revisions", () => {
  it("a command after a kept walk walks once, and its changes are exactly what it did", async () => {
    const ws = tempWorkspace(undefined, { "a.txt": "a\n", "gone.txt": "x\n", ".gitignore": "out/\n" });
    const tracker = new WorkspaceTracker(ws);
    await tracker.walk();
    const { value, walks } = await walksDuring(() =>
      trackCommand(ws, tracker, async () => {
        fs.writeFileSync(path.join(ws, "b.txt"), "b\n");
        fs.appendFileSync(path.join(ws, "a.txt"), "more\n");
        fs.rmSync(path.join(ws, "gone.txt"));
        fs.mkdirSync(path.join(ws, "out"));
        fs.writeFileSync(path.join(ws, "out/ignored.txt"), "i\n");
        return 7;
      }),
    );
    expect(walks).toBe(1);
    expect(value).toEqual({ result: 7, changes: { created: ["b.txt"], modified: ["a.txt"], deleted: ["gone.txt"] } });
    // The walk after the command is kept: the step's revision reads it without walking.
    const seq = tracker.seq;
    const { value: again, walks: w2 } = await walksDuring(() => tracker.current(seq - 1));
    expect(w2).toBe(0);
    expect(again.entries.map((e) => e.rel)).toEqual([".gitignore", "a.txt", "b.txt"]);
    // ... but not for a reader that needs a walk made after it.
    expect((await walksDuring(() => tracker.current(seq))).walks).toBe(1);
  });

  it("without a tracker walks before and after; a failing command drops the kept walk", async () => {
    const ws = tempWorkspace(undefined, { "a.txt": "a\n" });
    const { value, walks } = await walksDuring(() => trackCommand(ws, undefined, async () => fs.writeFileSync(path.join(ws, "n.txt"), "")));
    expect(walks).toBe(2);
    expect(value.changes.created).toEqual(["n.txt"]);
    const tracker = new WorkspaceTracker(ws);
    await tracker.walk();
    await expect(trackCommand(ws, tracker, async () => Promise.reject(new Error("spawn failed")))).rejects.toThrow("spawn failed");
    expect((await tracker.current()).reused).toBe(false);
  });

  it("touched() stats the paths a tool reported instead of walking; ignored ones stay out; .gitignore drops the walk", async () => {
    const ws = tempWorkspace(undefined, { "a.txt": "a\n", ".gitignore": "*.log\n", "old.txt": "o\n" });
    const tracker = new WorkspaceTracker(ws);
    await tracker.walk();
    fs.writeFileSync(path.join(ws, "new.txt"), "n\n");
    fs.writeFileSync(path.join(ws, "debug.log"), "l\n");
    fs.rmSync(path.join(ws, "old.txt"));
    tracker.touched(["new.txt", "debug.log", "old.txt"]);
    const kept = await tracker.current();
    expect(kept.reused).toBe(true);
    expect(kept.entries.map((e) => e.rel)).toEqual([".gitignore", "a.txt", "new.txt"]);
    expect(kept.entries.find((e) => e.rel === "new.txt")!.st.size).toBe(2);
    tracker.touched([".gitignore"]);
    expect((await tracker.current()).reused).toBe(false);
    tracker.invalidate();
    expect((await tracker.current()).reused).toBe(false);
  });
});
