import test from "node:test";
import assert from "node:assert/strict";
import { add, complete, emptyStore, list, remove, type Store } from "../src/store.js";
import { run, runScript } from "../src/commands.js";
import { err, ok, type Result } from "../src/result.js";
import * as storeModule from "../src/store.js";

function value<T>(r: Result<T>): T {
  if (!r.ok) throw new Error(`expected ok, got ${r.error.code}: ${r.error.message}`);
  return r.value;
}
function code<T>(r: Result<T>): string {
  assert.equal(r.ok, false);
  return r.ok ? "" : r.error.code;
}

test("the helpers build both shapes of Result", () => {
  assert.deepEqual(ok(3), { ok: true, value: 3 });
  assert.deepEqual(err("NOT_FOUND", "no todo 4"), { ok: false, error: { code: "NOT_FOUND", message: "no todo 4" } });
  assert.equal("TodoStore" in storeModule, false);
});

test("operations return new stores and leave the given one and its todos untouched", () => {
  const s0 = emptyStore();
  const { store: s1, todo } = value(add(s0, "  Buy milk "));
  assert.deepEqual(todo, { id: 1, title: "Buy milk", done: false });
  const before = JSON.stringify(list(s1));
  const { store: s2, todo: doneTodo } = value(complete(s1, 1));
  assert.equal(doneTodo.done, true);
  assert.equal(JSON.stringify(list(s1)), before);
  assert.equal(list(s1)[0]!.done, false);
  assert.equal(list(s0).length, 0);
  assert.deepEqual(list(value(complete(s2, 1)).store), [{ id: 1, title: "Buy milk", done: true }]);
  const { store: s3 } = value(remove(s2, 1));
  assert.equal(list(s3).length, 0);
  assert.equal(list(s2).length, 1);
});

test("ids are never reused and list is in id order", () => {
  let s: Store = emptyStore();
  for (const t of ["a", "b", "c"]) s = value(add(s, t)).store;
  s = value(remove(s, 3)).store;
  s = value(remove(s, 1)).store;
  const { todo } = value(add(s, "d"));
  assert.equal(todo.id, 4);
  assert.deepEqual(list(value(add(s, "d")).store).map((t) => t.id), [2, 4]);
});

test("expected errors are values with their code", () => {
  const s = value(add(emptyStore(), "Tea")).store;
  assert.equal(code(add(s, "   ")), "EMPTY_TITLE");
  assert.equal(code(add(s, "Tea")), "DUPLICATE");
  assert.equal(code(complete(s, 7)), "NOT_FOUND");
  assert.equal(code(remove(s, 7)), "NOT_FOUND");
  const again = value(add(value(complete(s, 1)).store, "Tea"));
  assert.equal(again.todo.id, 2);
  for (const line of ["done x", "rm 0", "done -1", "rm 1.5", "fly away", ""]) assert.equal(code(run(s, line)), "BAD_COMMAND", line);
  assert.equal(code(run(s, "done 5")), "NOT_FOUND");
});

test("run keeps the outputs and returns the next store", () => {
  let s = emptyStore();
  const step = (line: string) => {
    const r = value(run(s, line));
    s = r.store;
    return r.output;
  };
  assert.equal(step("add Buy milk"), "added [ ] 1 Buy milk");
  step("add Write report");
  assert.equal(step("done 1"), "completed [x] 1 Buy milk");
  assert.equal(step("rm 2"), "removed 2");
  assert.equal(step("list"), "[x] 1 Buy milk");
});

test("runScript applies every line or none, naming the failing line", () => {
  const base = value(run(emptyStore(), "add Tea")).store;
  const good = value(runScript(base, ["add Milk", "", "done 1", "list"]));
  assert.deepEqual(good.outputs, ["added [ ] 2 Milk", "completed [x] 1 Tea", "[x] 1 Tea\n[ ] 2 Milk"]);
  const bad = runScript(base, ["add Bread", "done 1", "", "rm 9", "add Jam"]);
  assert.equal(bad.ok, false);
  if (!bad.ok) {
    assert.equal(bad.error.code, "NOT_FOUND");
    assert.ok(bad.error.message.startsWith("line 4: "), bad.error.message);
  }
  assert.deepEqual(list(base), [{ id: 1, title: "Tea", done: false }]);
  assert.equal(code(runScript(base, ["add Tea"])), "DUPLICATE");
});
