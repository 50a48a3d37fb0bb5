import test from "node:test";
import assert from "node:assert/strict";
import { apply } from "../src/commands.js";
import { createDocument, insert, remove, replaceAll } from "../src/document.js";
import { canRedo, canUndo, redo, transaction, undo } from "../src/history.js";

test("every edit is a step; undo and redo retrace them exactly", () => {
  const doc = createDocument("the cat sat");
  const seen = [doc.text];
  insert(doc, 0, ">> ");
  seen.push(doc.text);
  remove(doc, 3, 4);
  seen.push(doc.text);
  assert.equal(replaceAll(doc, "at", "og"), 2);
  seen.push(doc.text);
  assert.equal(doc.text, ">> cog sog");
  for (let i = seen.length - 2; i >= 0; i--) {
    assert.equal(undo(doc), true);
    assert.equal(doc.text, seen[i]);
  }
  assert.equal(undo(doc), false);
  assert.equal(doc.text, "the cat sat");
  assert.equal(canUndo(doc), false);
  for (let i = 1; i < seen.length; i++) {
    assert.equal(redo(doc), true);
    assert.equal(doc.text, seen[i]);
  }
  assert.equal(redo(doc), false);
  assert.equal(canRedo(doc), false);
});

test("replaceAll with longer, shorter and empty replacements undoes as one step", () => {
  const doc = createDocument("a-b-c-d");
  replaceAll(doc, "-", "<=>");
  assert.equal(doc.text, "a<=>b<=>c<=>d");
  replaceAll(doc, "<=>", "");
  assert.equal(doc.text, "abcd");
  undo(doc);
  assert.equal(doc.text, "a<=>b<=>c<=>d");
  undo(doc);
  assert.equal(doc.text, "a-b-c-d");
  assert.equal(replaceAll(doc, "zz", "y"), 0);
  assert.equal(canRedo(doc), true, "an edit that changes nothing is not recorded and keeps redo");
  assert.throws(() => replaceAll(doc, "", "x"), RangeError);
});

test("a new edit clears redo; no-op edits are not steps", () => {
  const doc = createDocument("12345");
  remove(doc, 1, 2);
  undo(doc);
  assert.equal(canRedo(doc), true);
  insert(doc, 5, "6");
  assert.equal(canRedo(doc), false);
  assert.equal(redo(doc), false);
  insert(doc, 0, "");
  remove(doc, 2, 0);
  undo(doc);
  assert.equal(doc.text, "12345");
  assert.equal(canUndo(doc), false);
});

test("bad positions throw RangeError and record nothing", () => {
  const doc = createDocument("abc");
  for (const [fn, args] of [
    [insert, [-1, "x"]],
    [insert, [4, "x"]],
    [insert, [1.5, "x"]],
    [insert, [NaN, "x"]],
    [remove, [2, 2]],
    [remove, [-1, 1]],
    [remove, [0, -1]],
    [remove, [0, 0.5]],
  ]) {
    assert.throws(() => fn(doc, ...args), RangeError, `${fn.name}(${args})`);
  }
  assert.equal(doc.text, "abc");
  assert.equal(canUndo(doc), false);
  insert(doc, 3, "d");
  remove(doc, 0, 4);
  assert.equal(doc.text, "");
});

test("transactions: one step, nesting joins the outer one, errors roll back", () => {
  const doc = createDocument("core");
  const r = transaction(doc, (d) => {
    insert(d, 0, "[");
    transaction(d, () => {
      insert(d, d.text.length, "]");
      replaceAll(d, "o", "0");
    });
    return "ok";
  });
  assert.equal(r, "ok");
  assert.equal(doc.text, "[c0re]");
  insert(doc, 0, "!");
  const boom = new Error("boom");
  assert.throws(
    () =>
      transaction(doc, () => {
        remove(doc, 0, 2);
        transaction(doc, () => insert(doc, 0, "zz"));
        throw boom;
      }),
    (e) => e === boom,
  );
  assert.equal(doc.text, "![c0re]");
  undo(doc);
  assert.equal(doc.text, "[c0re]");
  undo(doc);
  assert.equal(doc.text, "core");
  assert.equal(canUndo(doc), false);
  redo(doc);
  assert.equal(doc.text, "[c0re]");
});

test("an inner transaction that throws, caught by the outer one, undoes only its own edits", () => {
  const doc = createDocument("ab");
  transaction(doc, () => {
    insert(doc, 2, "c");
    try {
      transaction(doc, () => {
        insert(doc, 0, "X");
        throw new Error("inner");
      });
    } catch {
      // the outer transaction goes on
    }
    insert(doc, 3, "d");
  });
  assert.equal(doc.text, "abcd");
  undo(doc);
  assert.equal(doc.text, "ab");
});

test("history keeps only the newest historyLimit steps", () => {
  const doc = createDocument("", { historyLimit: 3 });
  for (const ch of "abcde") insert(doc, doc.text.length, ch);
  let n = 0;
  while (undo(doc)) n++;
  assert.equal(n, 3);
  assert.equal(doc.text, "ab");
  const plenty = createDocument("");
  for (let i = 0; i < 150; i++) insert(plenty, 0, "x");
  n = 0;
  while (undo(plenty)) n++;
  assert.equal(n, 100);
});

test("undo and redo as commands", () => {
  const doc = createDocument("hi");
  apply(doc, "insert 2 there you");
  apply(doc, "replace e E");
  apply(doc, "undo");
  assert.equal(doc.text, "hithere you");
  apply(doc, "undo");
  assert.equal(doc.text, "hi");
  apply(doc, "redo");
  assert.equal(doc.text, "hithere you");
  assert.throws(() => apply(doc, "delete 0 99"), RangeError);
});
