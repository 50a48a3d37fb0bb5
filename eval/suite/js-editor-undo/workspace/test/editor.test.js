import test from "node:test";
import assert from "node:assert/strict";
import { apply } from "../src/commands.js";
import { createDocument, insert, remove, replaceAll } from "../src/document.js";

test("edits", () => {
  const doc = createDocument("hello world");
  insert(doc, 5, ",");
  assert.equal(doc.text, "hello, world");
  remove(doc, 0, 1);
  assert.equal(doc.text, "ello, world");
  assert.equal(replaceAll(doc, "o", "0"), 2);
  assert.equal(doc.text, "ell0, w0rld");
});

test("commands", () => {
  const doc = createDocument("abc");
  apply(doc, "insert 1 x y");
  apply(doc, "delete 0 1");
  apply(doc, "replace c C");
  assert.equal(doc.text, "x ybC");
});
