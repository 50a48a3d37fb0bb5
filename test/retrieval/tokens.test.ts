import { describe, expect, it } from "vitest";
import { ftsQuery, identifierParts, indexTerms, queryTerms, stem, wordsColumn } from "../../src/retrieval/tokens.js";

describe("identifier splitting", () => {
  it.each([
    ["UserRole", ["user", "role"]],
    ["user_role", ["user", "role"]],
    ["userRoles", ["user", "roles"]],
    ["USER_ROLE", ["user", "role"]],
    ["HTTPServer", ["http", "server"]],
    ["parseURL", ["parse", "url"]],
    ["sha256Hash", ["sha256", "hash"]],
    ["__init__", ["init"]],
    ["x", ["x"]],
  ])("%s → %j", (word, parts) => {
    expect(identifierParts(word)).toEqual(parts);
  });

  it("drops blob-sized pieces of a text, in time linear in its length (a capital run was quadratic)", () => {
    const before = process.cpuUsage();
    // Event texts and queries go through here whole; 200k capitals took about 30 s of CPU before.
    expect(identifierParts(`${"A".repeat(200_000)} getHTTPServer ${"b".repeat(65)}`)).toEqual(["get", "http", "server"]);
    const used = process.cpuUsage(before);
    expect((used.user + used.system) / 1000).toBeLessThan(5_000);
    expect(identifierParts("A".repeat(64))).toEqual(["a".repeat(64)]);
  });

  it("indexes identifiers whole and split, so every style meets the same words", () => {
    expect(indexTerms("class UserRole extends user_role")).toEqual(["class", "userrole", "user", "role", "extends", "userrole", "user", "role"]);
    expect(indexTerms("src/userRoles.ts")).toEqual(["src", "userroles", "user", "roles", "ts"]);
    expect(wordsColumn("a b")).toBe(" a b ");
    // Minified blobs and hashes are left out.
    expect(indexTerms("x".repeat(80))).toEqual([]);
  });
});

describe("stem", () => {
  it.each([
    ["parsing", "pars"],
    ["parser", "pars"],
    ["parses", "pars"],
    ["parse", "pars"],
    ["entries", "entr"],
    ["entry", "entr"],
    ["users", "user"],
    ["role", "role"],
    ["roles", "role"],
    ["string", "string"],
    ["utf8", "utf8"],
  ])("%s → %s", (w, s) => {
    expect(stem(w)).toBe(s);
  });
});

describe("queryTerms", () => {
  it("turns `user role` and `UserRole` into the same prefix terms, plus the whole identifier", () => {
    expect(queryTerms("user role")).toEqual([
      { text: "user", match: "prefix" },
      { text: "role", match: "prefix" },
    ]);
    expect(queryTerms("UserRole")).toEqual([
      { text: "userrole", match: "word" },
      { text: "user role", match: "prefix" },
      { text: "user", match: "prefix" },
      { text: "role", match: "prefix" },
    ]);
  });

  it("drops stop words, keeps short words whole, and phrases hyphenated compounds", () => {
    expect(queryTerms("where is the id of the trie-router").map((t) => `${t.match}:${t.text}`)).toEqual([
      "word:id",
      "prefix:trie rout",
      "prefix:trie",
      "prefix:rout",
    ]);
  });

  it("builds an FTS5 OR of space-anchored phrases, or null", () => {
    expect(ftsQuery(queryTerms("parse config"))).toBe('" pars" OR " config"');
    expect(ftsQuery(queryTerms("id"))).toBe('" id "');
    expect(ftsQuery(queryTerms("the of and"))).toBeNull();
    expect(ftsQuery(queryTerms('say "hi" loudly'))).toBe('" say " OR " hi " OR " loudl"');
  });
});
