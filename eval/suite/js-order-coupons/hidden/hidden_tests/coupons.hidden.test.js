import test from "node:test";
import assert from "node:assert/strict";
import { createCart, addItem } from "../src/cart.js";
import { checkout } from "../src/checkout.js";
import { parseCoupon, InvalidCoupon } from "../src/coupons.js";

const cart = (...items) => items.reduce((c, [sku, qty]) => addItem(c, sku, qty), createCart());

test("no coupon: the breakdown has a zero discount and per-line discounts", () => {
  const r = checkout(cart(["TEA-01", 2], ["MUG-01", 1]));
  assert.deepEqual([r.subtotalCents, r.discountCents, r.taxCents, r.totalCents], [1750, 0, 140, 1890]);
  assert.equal(r.lines.length, 2);
  assert.ok(r.lines.every((l) => l.discountCents === 0));
});

test("PCT<n>-<category> takes n% off that category's lines, rounded half up per line", () => {
  // 3 x 399 = 1197 -> 15% = 179.55 -> 180; coffee 1299 -> 194.85 -> 195; the kettle is not a drink.
  const r = checkout(cart(["TEA-02", 3], ["COF-01", 1], ["KET-01", 1]), { coupon: "PCT15-drinks" });
  assert.equal(r.subtotalCents, 1197 + 1299 + 3999);
  assert.equal(r.discountCents, 375);
  assert.deepEqual(r.lines.map((l) => l.discountCents), [180, 195, 0]);
  const taxable = r.subtotalCents - 375;
  assert.equal(r.taxCents, Math.floor((taxable * 8 + 50) / 100));
  assert.equal(r.totalCents, taxable + r.taxCents);
});

test("OFF<amount>-OVER<threshold> applies only at or above the threshold", () => {
  const below = checkout(cart(["KET-01", 1]), { coupon: "OFF5-OVER50" });
  assert.equal(below.discountCents, 0);
  const at = checkout(cart(["KET-01", 1], ["MUG-01", 1], ["BIS-01", 1]), { coupon: "OFF5-OVER50" });
  assert.equal(at.subtotalCents, 5124);
  assert.equal(at.discountCents, 500);
  assert.equal(at.taxCents, Math.floor(((5124 - 500) * 8 + 50) / 100));
});

test("a discount never exceeds the subtotal", () => {
  const r = checkout(cart(["BIS-01", 1]), { coupon: "OFF10-OVER0" });
  assert.equal(r.discountCents, 275);
  assert.equal(r.taxCents, 0);
  assert.equal(r.totalCents, 0);
});

test("B2G1-<sku> makes every third unit of that sku free", () => {
  const r = checkout(cart(["BIS-01", 7], ["TEA-01", 3]), { coupon: "B2G1-BIS-01" });
  assert.equal(r.discountCents, 2 * 275);
  assert.deepEqual(r.lines.map((l) => l.discountCents), [550, 0]);
});

test("tax is 8% of the discounted amount, rounded half up without float drift", () => {
  // 1.5 cents of tax exactly would round to 2; 0.08 * 1275 = 102 exact, 0.08 * 2 ... use a half case:
  const r = checkout(cart(["TEA-01", 1], ["BIS-01", 1]), {}); // 725 -> 58
  assert.equal(r.taxCents, 58);
  const half = checkout(cart(["MUG-01", 1], ["BIS-01", 1]), { coupon: "PCT1-kitchen" }); // 850-9=841+275=1116 -> 89.28 -> 89
  assert.equal(half.discountCents, 9);
  assert.equal(half.taxCents, 89);
});

test("invalid coupons throw InvalidCoupon naming the code", () => {
  for (const code of ["FREE", "PCT0-drinks", "PCT95-drinks", "PCT10-toys", "OFF-OVER5", "B2G1-tea"]) {
    assert.throws(() => parseCoupon(code), (e) => e instanceof InvalidCoupon && e.message.includes(code), code);
    assert.throws(() => checkout(cart(["TEA-01", 1]), { coupon: code }), InvalidCoupon, code);
  }
});

test("quantities must be positive integers", () => {
  for (const q of [0, -1, 1.5, Number.NaN]) assert.throws(() => addItem(createCart(), "TEA-01", q), RangeError);
  assert.throws(() => addItem(createCart(), "NOPE", 1), /unknown product NOPE/);
});
