import test from "node:test";
import assert from "node:assert/strict";
import { createCart, addItem } from "../src/cart.js";
import { checkout } from "../src/checkout.js";

test("a cart's total is its subtotal plus 8% tax", () => {
  const cart = addItem(addItem(createCart(), "TEA-01", 2), "MUG-01");
  const r = checkout(cart);
  assert.equal(r.subtotalCents, 1750);
  assert.equal(r.taxCents, 140);
  assert.equal(r.totalCents, 1890);
});

test("unknown products are refused", () => {
  assert.throws(() => addItem(createCart(), "NOPE"), /unknown product NOPE/);
});
