import test from "node:test";
import assert from "node:assert/strict";
import { totals, type Line } from "../src/invoice.js";
import { formatCents, percentOf } from "../src/money.js";
import { renderInvoice } from "../src/render.js";
import { parseLines, InvoiceError } from "../src/parse.js";

const mk = (description: string, qty: number, unitCents: number, rate: Line["rate"] = "standard"): Line => ({ description, qty, unitCents, rate });

test("VAT is computed per rate on that rate's summed net, not per line", () => {
  const t = totals([mk("a", 1, 333, "reduced"), mk("b", 1, 333, "reduced"), mk("c", 1, 333, "reduced"), mk("d", 2, 1000)]);
  assert.deepEqual(t.taxByRate, { standard: 400, reduced: 50, zero: 0 });
  assert.deepEqual([t.netCents, t.taxCents, t.grossCents], [2999, 450, 3449]);
});

test("halves round away from zero, for credits too", () => {
  assert.equal(percentOf(50, 5), 3);
  assert.equal(percentOf(-50, 5), -3);
  assert.equal(percentOf(-49, 5), -2);
  const credit = totals([mk("Refund", -1, 50, "reduced")]);
  assert.deepEqual([credit.netCents, credit.taxCents, credit.grossCents], [-50, -3, -53]);
});

test("negative and small amounts format as a sign, whole units and two decimals", () => {
  assert.deepEqual([-5, -150, 0, -100000, 7, 99].map(formatCents), ["-0.05", "-1.50", "0.00", "-1000.00", "0.07", "0.99"]);
  const text = renderInvoice([mk("Refund", -2, 75, "zero")]);
  assert.match(text, /Refund  -2 x 0\.75 = -1\.50/);
  assert.match(text, /total -1\.50/);
});

test("parseLines reads the CSV with quoted descriptions and exact decimal units", () => {
  const csv = 'description,qty,unit,rate\n"Widget, large",3,19.99,standard\n\nTea,2,0.1,reduced\n"Say ""hi""",-1,7,zero\n';
  assert.deepEqual(parseLines(csv), [mk("Widget, large", 3, 1999), mk("Tea", 2, 10, "reduced"), mk('Say "hi"', -1, 700, "zero")]);
  const t = totals(parseLines("description,qty,unit,rate\nA,1,1.15,standard\nB,1,1.15,standard\n"));
  assert.deepEqual([t.netCents, t.taxCents], [230, 46]);
});

test("parseLines refuses bad input with InvoiceError naming the 1-based line", () => {
  const bad: Array<[string, number]> = [
    ["desc,qty,unit,rate\nA,1,1,standard\n", 1],
    ["description,qty,unit,rate\nA,1,1.005,standard\n", 2],
    ["description,qty,unit,rate\nA,1,-3,standard\n", 2],
    ["description,qty,unit,rate\nA,1,abc,standard\n", 2],
    ["description,qty,unit,rate\n\nA,0,1,standard\n", 3],
    ["description,qty,unit,rate\nA,1,1,standard\nB,1.5,1,standard\n", 3],
    ["description,qty,unit,rate\nA,1,1,super\n", 2],
    ["description,qty,unit,rate\nA,1,1\n", 2],
    ["description,qty,unit,rate\nA,1,1,standard,extra\n", 2],
  ];
  for (const [csv, lineNo] of bad) {
    assert.throws(
      () => parseLines(csv),
      (e: unknown) => e instanceof InvoiceError && e.line === lineNo && e.message.startsWith(`line ${lineNo}: `),
      JSON.stringify(csv),
    );
  }
});
