import test from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import { parse } from "../src/csv.js";
import { importStatement } from "../src/import.js";

test("simple records", () => {
  assert.deepEqual(parse("a,b\n1,2\n"), [["a", "b"], ["1", "2"]]);
});

test("a bank export", () => {
  const s = importStatement(fs.readFileSync("samples/march.csv", "utf8"));
  assert.deepEqual(s.rows.map((r) => r.description), ["Coffee, large", "Salary", 'Book "Dune"']);
  assert.equal(s.totalCents, -350 + 250000 - 1299);
});
