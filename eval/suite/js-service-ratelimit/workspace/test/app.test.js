import test from "node:test";
import assert from "node:assert/strict";
import { createApp } from "../src/app.js";

test("notes can be added and listed", async () => {
  const server = createApp();
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const base = `http://127.0.0.1:${server.address().port}`;
  try {
    const created = await fetch(`${base}/notes`, { method: "POST", body: JSON.stringify({ text: "hi" }), headers: { "x-api-key": "k1" } });
    assert.equal(created.status, 201);
    const list = await (await fetch(`${base}/notes`, { headers: { "x-api-key": "k1" } })).json();
    assert.deepEqual(list, [{ id: 1, text: "hi" }]);
  } finally {
    server.close();
  }
});
