import test from "node:test";
import assert from "node:assert/strict";
import { createApp } from "../src/app.js";

async function withServer(fn) {
  const server = createApp();
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  try {
    await fn(`http://127.0.0.1:${server.address().port}`);
  } finally {
    server.close();
  }
}

test("put, get and delete a value", () =>
  withServer(async (base) => {
    assert.equal((await fetch(`${base}/kv/greeting`, { method: "PUT", body: "hello" })).status, 200);
    assert.equal(await (await fetch(`${base}/kv/greeting`)).text(), "hello");
    assert.equal((await fetch(`${base}/kv/greeting`, { method: "DELETE" })).status, 204);
    assert.equal((await fetch(`${base}/kv/greeting`)).status, 404);
  }));
