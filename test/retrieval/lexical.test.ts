import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createLexicalSearcher, splitTerms } from "../../src/retrieval/lexical.js";

let tmp: string;

beforeEach(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "ledgerloop-lexical-")));
});

afterEach(() => {
  fs.rmSync(tmp, { recursive: true, force: true });
});

function write(files: Record<string, string | Buffer>): void {
  for (const [rel, content] of Object.entries(files)) {
    const abs = path.join(tmp, rel);
    fs.mkdirSync(path.dirname(abs), { recursive: true });
    fs.writeFileSync(abs, content);
  }
}

describe("splitTerms", () => {
  it.each([
    ["UserRole", ["user", "role"]],
    ["user_role", ["user", "role"]],
    ["user-role", ["user", "role"]],
    ["userRoles.ts", ["user", "roles", "ts"]],
    ["HTTPServer", ["http", "server"]],
    ["parseURL", ["parse", "url"]],
    ["get2FACode", ["get2", "fa", "code"]],
    ["a b c", []],
    ["", []],
  ])("%s → %j", (input, terms) => {
    expect(splitTerms(input)).toEqual(terms);
  });
});

describe("createLexicalSearcher", () => {
  it("finds identifiers in any casing convention and ranks by term hits", async () => {
    write({
      "src/roles.ts": "export enum UserRole {\n  Admin,\n}\nexport function roleOf(user: User): UserRole {}\n",
      "app/models.py": "user_role = 'viewer'\n",
      "src/other.ts": "const user = 1;\n",
      "src/none.ts": "nothing to see\n",
    });
    const hits = await createLexicalSearcher(tmp).search("user role", 10);
    expect(hits.map((h) => h.path)).toEqual(["src/roles.ts", "app/models.py", "src/other.ts"]);
    expect(hits[0]!.score).toBeGreaterThan(hits[1]!.score);
    expect(hits[0]!.startLine).toBe(1);
    // The window covers the whole 4-line file (endLine may count the empty piece after the last "\n").
    expect(hits[0]!.endLine).toBeGreaterThanOrEqual(4);
    expect(hits[0]!.preview.split("\n")[0]).toBe("1| export enum UserRole {");
  });

  it("scores path matches, so a file is found by its name", async () => {
    write({ "src/user-role.ts": "export {};\n", "src/misc.ts": "export {};\n" });
    const hits = await createLexicalSearcher(tmp).search("user role", 10);
    expect(hits.map((h) => h.path)).toEqual(["src/user-role.ts"]);
    expect(hits[0]!.score).toBe(4);
  });

  it("points the window at the best region of a long file", async () => {
    const lines = Array.from({ length: 100 }, (_, i) => `filler ${i}`);
    lines[70] = "class UserRole {";
    write({ "big.ts": lines.join("\n") });
    const [hit] = await createLexicalSearcher(tmp).search("UserRole", 5);
    expect(hit!.startLine).toBeLessThanOrEqual(71);
    expect(hit!.endLine).toBeGreaterThanOrEqual(71);
    expect(hit!.preview.split("\n")[0]).toBe("71| class UserRole {");
  });

  it("honours k, .gitignore and skips binary files", async () => {
    write({
      ".gitignore": "dist/\n",
      "dist/roles.js": "var UserRole;\n",
      "blob.bin": Buffer.concat([Buffer.from("UserRole"), Buffer.from([0, 1, 2])]),
      "a.ts": "UserRole\n",
      "b.ts": "UserRole\n",
      "c.ts": "UserRole\n",
    });
    const searcher = createLexicalSearcher(tmp);
    expect((await searcher.search("user role", 10)).map((h) => h.path)).toEqual(["a.ts", "b.ts", "c.ts"]);
    expect((await searcher.search("user role", 2)).map((h) => h.path)).toEqual(["a.ts", "b.ts"]);
  });

  it("returns nothing for a query without terms", async () => {
    write({ "a.ts": "x y z\n" });
    expect(await createLexicalSearcher(tmp).search("- ! ?", 10)).toEqual([]);
  });
});
