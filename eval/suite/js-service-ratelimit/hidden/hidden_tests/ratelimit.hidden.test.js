import test from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createLimiter } from "../src/ratelimit.js";

test("token buckets: per key, capped, refilled by the injected clock", () => {
  let t = 0;
  const l = createLimiter({ capacity: 3, refillPerSec: 0.5, now: () => t });
  for (let i = 0; i < 3; i++) assert.equal(l.take("a").ok, true);
  const no = l.take("a");
  assert.equal(no.ok, false);
  assert.equal(no.retryAfterSec, 2);
  assert.equal(l.take("b").ok, true, "keys have their own buckets");
  t = 2000;
  assert.equal(l.take("a").ok, true);
  assert.equal(l.take("a").ok, false);
  t = 60_000;
  assert.equal(l.peek("a").remaining, 3, "never above capacity");
});

async function startServer(env) {
  const child = spawn(process.execPath, ["server.js"], { env: { ...process.env, PORT: "0", ...env }, stdio: ["ignore", "pipe", "pipe"] });
  const port = await new Promise((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (d) => {
      out += d;
      const m = /listening on (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.on("exit", (c) => reject(new Error(`server exited ${c}`)));
    setTimeout(() => reject(new Error("server did not start")), 5000);
  });
  return { base: `http://127.0.0.1:${port}`, stop: () => child.kill() };
}

test("the server limits each API key, says when to retry, and reports usage", async () => {
  const s = await startServer({ RATE_LIMIT: "3/1" });
  try {
    assert.equal((await fetch(`${s.base}/notes`)).status, 401);
    const k = { "x-api-key": "alice" };
    const usage0 = await (await fetch(`${s.base}/usage`, { headers: k })).json();
    assert.deepEqual(usage0, { key: "alice", remaining: 3, capacity: 3 });
    for (let i = 0; i < 3; i++) assert.equal((await fetch(`${s.base}/notes`, { headers: k })).status, 200);
    const limited = await fetch(`${s.base}/notes`, { headers: k });
    assert.equal(limited.status, 429);
    assert.deepEqual(await limited.json(), { error: "rate limited" });
    assert.ok(Number(limited.headers.get("retry-after")) >= 1);
    assert.equal((await (await fetch(`${s.base}/usage`, { headers: k })).json()).remaining, 0, "usage does not consume");
    assert.equal((await fetch(`${s.base}/notes`, { headers: { "x-api-key": "bob" } })).status, 200);
    await new Promise((r) => setTimeout(r, 1100));
    assert.equal((await fetch(`${s.base}/notes`, { method: "POST", headers: k, body: JSON.stringify({ text: "x" }) })).status, 201);
  } finally {
    s.stop();
  }
});

test("the default limit is 10 per key", async () => {
  const s = await startServer({ RATE_LIMIT: "" });
  try {
    const k = { "x-api-key": "carol" };
    assert.deepEqual(await (await fetch(`${s.base}/usage`, { headers: k })).json(), { key: "carol", remaining: 10, capacity: 10 });
  } finally {
    s.stop();
  }
});
