import test from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createStore } from "../src/store.js";

function startServer() {
  const child = spawn(process.execPath, ["server.js"], { env: { ...process.env, PORT: "0" }, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout.on("data", (d) => (out += d));
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  const ready = new Promise((resolve, reject) => {
    const poll = setInterval(() => {
      const m = /listening on (\d+)/.exec(out);
      if (m) {
        clearInterval(poll);
        resolve(Number(m[1]));
      }
    }, 20);
    exited.then(() => reject(new Error(`server exited early: ${out}`)));
    setTimeout(() => reject(new Error("server did not start")), 5000);
  });
  return ready.then((port) => ({ base: `http://127.0.0.1:${port}`, child, exited, output: () => out }));
}

test("the store versions each key and lists keys by prefix", () => {
  const s = createStore();
  assert.equal(s.put("b", "x"), 1);
  assert.equal(s.put("b", "y"), 2);
  assert.equal(s.put("a.1", "z"), 1);
  assert.deepEqual(s.get("b"), { value: "y", version: 2 });
  assert.equal(s.get("nope"), undefined);
  assert.deepEqual(s.list(), [{ key: "a.1", version: 1 }, { key: "b", version: 2 }]);
  assert.deepEqual(s.list("a"), [{ key: "a.1", version: 1 }]);
  assert.equal(s.delete("b"), true);
  assert.equal(s.delete("b"), false);
  assert.equal(s.put("b", "again"), 1, "a deleted key starts over");
});

test("conditional requests against the running server; SIGTERM ends it cleanly", async () => {
  const s = await startServer();
  const url = (k) => `${s.base}/kv/${k}`;
  const put = (k, body, headers = {}) => fetch(url(k), { method: "PUT", body, headers });
  try {
    let r = await put("doc", "v1");
    assert.equal(r.status, 201);
    assert.equal(r.headers.get("etag"), '"1"');
    assert.deepEqual(await r.json(), { key: "doc", version: 1 });

    r = await put("doc", "v2");
    assert.equal(r.status, 200);
    assert.equal(r.headers.get("etag"), '"2"');
    assert.deepEqual(await r.json(), { key: "doc", version: 2 });

    r = await fetch(url("doc"));
    assert.equal(r.status, 200);
    assert.equal(r.headers.get("etag"), '"2"');
    assert.equal(await r.text(), "v2");

    r = await fetch(url("doc"), { headers: { "if-none-match": '"7", "2"' } });
    assert.equal(r.status, 304);
    assert.equal(r.headers.get("etag"), '"2"');
    assert.equal(await r.text(), "");
    assert.equal((await fetch(url("doc"), { headers: { "if-none-match": '"1"' } })).status, 200);

    r = await put("doc", "lost update", { "if-match": '"1"' });
    assert.equal(r.status, 412);
    assert.deepEqual(await r.json(), { error: "precondition failed" });
    assert.equal(await (await fetch(url("doc"))).text(), "v2", "a failed condition changes nothing");

    r = await put("doc", "v3", { "if-match": '"1", "2"' });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get("etag"), '"3"');

    assert.equal((await put("doc", "again", { "if-none-match": "*" })).status, 412);
    assert.equal((await put("fresh", "new", { "if-none-match": "*" })).status, 201);
    assert.equal((await put("ghost", "x", { "if-match": "*" })).status, 412, "If-Match on a missing key fails");
    assert.equal((await fetch(url("ghost"))).status, 404);

    assert.equal((await fetch(url("doc"), { method: "DELETE", headers: { "if-match": '"2"' } })).status, 412);
    assert.equal((await fetch(url("doc"))).status, 200);
    assert.equal((await fetch(url("doc"), { method: "DELETE", headers: { "if-match": '"3"' } })).status, 204);
    assert.equal((await fetch(url("doc"), { method: "DELETE" })).status, 404);
    assert.equal((await fetch(url("doc"), { method: "DELETE", headers: { "if-match": "*" } })).status, 412);

    await put("doc", "reborn");
    await put("a-first", "1");
    await put("do", "x");
    r = await fetch(`${s.base}/kv?prefix=do`);
    assert.equal(r.status, 200);
    assert.deepEqual(await r.json(), { keys: [{ key: "do", version: 1 }, { key: "doc", version: 1 }] });
    r = await fetch(`${s.base}/kv`);
    assert.deepEqual((await r.json()).keys.map((k) => k.key), ["a-first", "do", "doc", "fresh"]);
  } finally {
    s.child.kill("SIGTERM");
  }
  const { code, signal } = await s.exited;
  assert.equal(signal, null, "the server handles SIGTERM itself");
  assert.equal(code, 0);
  assert.match(s.output(), /\bbye\b/);
});
