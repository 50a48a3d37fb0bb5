import test from "node:test";
import assert from "node:assert/strict";
import { createStore, add } from "../src/store.js";
import { listPage } from "../src/paginate.js";
import { exportAll } from "../src/export.js";
import { InvalidCursor } from "../src/cursor.js";

// A deterministic feed with heavy ties: 60 items over 7 timestamps, inserted out of order.
function feed() {
  let seed = 42;
  const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const s = createStore();
  for (let n = 0; n < 60; n++) add(s, { id: `id${String(n).padStart(3, "0")}`, createdAt: 1000 * Math.floor(rnd() * 7), kind: "k", text: String(n) });
  return s;
}

const key = (i) => `${String(i.createdAt).padStart(8, "0")}/${i.id}`;

for (const order of ["asc", "desc"]) {
  test(`exportAll (${order}) returns every item once, in (createdAt, id) order, for every page size`, () => {
    const s = feed();
    const expected = [...s.items].map(key).sort();
    if (order === "desc") expected.reverse();
    for (let pageSize = 1; pageSize <= 13; pageSize++) {
      assert.deepEqual(exportAll(s, { pageSize, order }).map(key), expected, `pageSize ${pageSize}`);
    }
  });
}

test("pages are stable: the same cursor gives the same page", () => {
  const s = feed();
  const first = listPage(s, { limit: 7 });
  assert.deepEqual(listPage(s, { limit: 7, cursor: first.next }), listPage(s, { limit: 7, cursor: first.next }));
  assert.equal(typeof first.next, "string");
});

test("the last page has next = null, also when it is exactly full", () => {
  const s = createStore([1, 2, 3, 4].map((n) => ({ id: `x${n}`, createdAt: 5, kind: "k", text: "" })));
  const p1 = listPage(s, { limit: 2 });
  const p2 = listPage(s, { limit: 2, cursor: p1.next });
  assert.deepEqual(p2.items.map((i) => i.id), ["x3", "x4"]);
  assert.equal(p2.next, null);
});

test("an item added behind the cursor does not shift the next page", () => {
  const s = createStore([1, 2, 3, 4].map((n) => ({ id: `m${n}`, createdAt: 10, kind: "k", text: "" })));
  const p1 = listPage(s, { limit: 2 });
  add(s, { id: "m0", createdAt: 10, kind: "k", text: "" });
  assert.deepEqual(listPage(s, { limit: 2, cursor: p1.next }).items.map((i) => i.id), ["m3", "m4"]);
});

test("garbage cursors throw InvalidCursor", () => {
  const s = feed();
  for (const c of ["not-a-cursor", Buffer.from("{}").toString("base64url"), Buffer.from("[1]").toString("base64url")]) {
    assert.throws(() => listPage(s, { cursor: c }), InvalidCursor, c);
  }
});

test("limits outside 1..100 are refused", () => {
  for (const limit of [0, -3, 101, 2.5]) assert.throws(() => listPage(feed(), { limit }), RangeError, String(limit));
});
