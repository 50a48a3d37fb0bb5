import test from "node:test";
import assert from "node:assert/strict";
import { TodoStore } from "../src/store.js";
import { run } from "../src/commands.js";

test("add, complete and list", () => {
  const s = new TodoStore();
  assert.equal(run(s, "add Buy milk"), "added [ ] 1 Buy milk");
  run(s, "add Write report");
  assert.equal(run(s, "done 1"), "completed [x] 1 Buy milk");
  assert.equal(run(s, "list"), "[x] 1 Buy milk\n[ ] 2 Write report");
});

test("an open todo cannot be added twice", () => {
  const s = new TodoStore();
  run(s, "add Tea");
  assert.throws(() => run(s, "add Tea"), /duplicate/);
});

test("unknown todos and commands are refused", () => {
  const s = new TodoStore();
  assert.throws(() => run(s, "done 9"), /no todo 9/);
  assert.throws(() => run(s, "fly away"), /unknown command/);
});
