import test from "node:test";
import assert from "node:assert/strict";
import { createStore } from "../src/store.js";
import { listPage } from "../src/paginate.js";
import { exportAll } from "../src/export.js";

const T = 1_700_000_000_000;
// Bulk imports write many items with the same timestamp.
const items = [
  { id: "a", createdAt: T, kind: "note", text: "a" },
  { id: "b", createdAt: T + 1000, kind: "note", text: "b" },
  { id: "c", createdAt: T + 1000, kind: "note", text: "c" },
  { id: "d", createdAt: T + 1000, kind: "note", text: "d" },
  { id: "e", createdAt: T + 2000, kind: "note", text: "e" },
];

test("the first page has the oldest items", () => {
  const page = listPage(createStore(items), { limit: 2 });
  assert.deepEqual(page.items.map((i) => i.id), ["a", "b"]);
  assert.equal(typeof page.next, "string");
});

test("exportAll returns every item exactly once", () => {
  for (const pageSize of [1, 2, 3, 10]) {
    const ids = exportAll(createStore(items), { pageSize }).map((i) => i.id);
    assert.deepEqual([...ids].sort(), ["a", "b", "c", "d", "e"], `pageSize ${pageSize}`);
  }
});
