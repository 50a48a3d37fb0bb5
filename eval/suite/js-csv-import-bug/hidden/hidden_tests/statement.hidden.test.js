import test from "node:test";
import assert from "node:assert/strict";
import { CsvError, parse, stringify } from "../src/csv.js";
import { importStatement } from "../src/import.js";

const lineOf = (fn) => {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof CsvError, `expected CsvError, got ${e}`);
    return e.line;
  }
  assert.fail("no error thrown");
};

test("RFC 4180 records: CRLF, quoted commas, doubled quotes, line breaks inside quotes", () => {
  const text = 'id,note,qty\r\n1,"a, b",2\r\n2,"he said ""no""",3\r\n3,"first\r\nsecond\nthird",4\r\n';
  assert.deepEqual(parse(text), [
    ["id", "note", "qty"],
    ["1", "a, b", "2"],
    ["2", 'he said "no"', "3"],
    ["3", "first\r\nsecond\nthird", "4"],
  ]);
});

test("empty fields, empty quoted fields, no trailing newline, BOM", () => {
  assert.deepEqual(parse('\uFEFFa,,""\n"",x,'), [["a", "", ""], ["", "x", ""]]);
  assert.deepEqual(parse(""), []);
  assert.deepEqual(parse("one"), [["one"]]);
});

test("stringify quotes what needs it and round-trips", () => {
  const rows = [["plain", "with,comma", 'with "quote"'], ["multi\nline", "cr\rhere", ""], ["", "", "end"]];
  const text = stringify(rows);
  assert.equal(text.split("\r\n")[0], 'plain,"with,comma","with ""quote"""');
  assert.ok(text.endsWith("\r\n"));
  assert.deepEqual(parse(text), rows);
});

test("an unterminated quote names the line where the field started", () => {
  assert.equal(lineOf(() => parse('a,b\r\n1,2\r\n3,"never\r\nclosed,4\r\n')), 3);
  assert.equal(lineOf(() => parse('"x\n"\n5,"oops')), 3);
});

test("statements: columns in any order, thousands separators, parentheses for negatives", () => {
  const text = '\uFEFF Amount ,Description,DATE\r\n"1,234.50",Salary,2024-04-01\r\n(12.00),"Fee, monthly",2024-04-02\r\n-0.99,"App ""Pro""",2024-04-03\r\n7,Refund,2024-04-04\r\n';
  const s = importStatement(text);
  assert.deepEqual(s.rows, [
    { date: "2024-04-01", description: "Salary", amountCents: 123450 },
    { date: "2024-04-02", description: "Fee, monthly", amountCents: -1200 },
    { date: "2024-04-03", description: 'App "Pro"', amountCents: -99 },
    { date: "2024-04-04", description: "Refund", amountCents: 700 },
  ]);
  assert.equal(s.totalCents, 123450 - 1200 - 99 + 700);
});

test("amounts add up exactly over many rows", () => {
  const lines = ["date,description,amount"];
  for (let i = 0; i < 1000; i++) lines.push(`2024-05-01,item ${i},0.10`);
  assert.equal(importStatement(lines.join("\n")).totalCents, 10000);
});

test("bad rows are CsvErrors naming their line, counting line breaks inside quotes", () => {
  const wrongCount = 'date,description,amount\n2024-01-01,"two\nlines",1.00\n2024-01-02,short\n';
  assert.equal(lineOf(() => importStatement(wrongCount)), 4);
  assert.equal(lineOf(() => importStatement("date,description,amount\n2024-01-01,x,1.00\n2024-01-02,y,abc\n")), 3);
  assert.equal(lineOf(() => importStatement("date,description,amount\n2024-01-01,x,1.234\n")), 2);
  assert.equal(lineOf(() => importStatement("when,description,amount\n2024-01-01,x,1.00\n")), 1);
});
