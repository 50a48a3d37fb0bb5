import test from "node:test";
import assert from "node:assert/strict";
import { totals, type Line } from "../src/invoice.js";
import { formatCents } from "../src/money.js";
import { renderInvoice } from "../src/render.js";

const line = (description: string, qty: number, unitCents: number, rate: Line["rate"] = "standard"): Line => ({ description, qty, unitCents, rate });

test("a single line: 20% VAT on top", () => {
  const t = totals([line("Consulting", 2, 5000)]);
  assert.deepEqual([t.netCents, t.taxCents, t.grossCents], [10000, 2000, 12000]);
});

test("every line of a rate is taxed", () => {
  const t = totals([line("Consulting", 1, 5000), line("Travel", 1, 2000), line("Books", 1, 1000, "zero")]);
  assert.equal(t.taxByRate.standard, 1400);
  assert.equal(t.grossCents, 9400);
});

test("amounts format with two decimals", () => {
  assert.equal(formatCents(123456), "1234.56");
  assert.equal(formatCents(5), "0.05");
});

test("a credit note renders negative amounts", () => {
  const text = renderInvoice([line("Refund", -1, 150)]);
  assert.match(text, /net -1\.50/);
  assert.match(text, /total -1\.80/);
});
