import { test } from "node:test";
import assert from "node:assert/strict";
import { once } from "node:events";
import { createUsersServer } from "../services/users/server.js";
import { createOrdersServer } from "../services/orders/server.js";
import { collectHealth } from "../dashboard/aggregate.js";

async function start(server) {
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return `http://127.0.0.1:${server.address().port}`;
}

test("users service answers /health", async (t) => {
  const server = createUsersServer();
  t.after(() => server.close());
  const res = await fetch(`${await start(server)}/health`);
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), { status: "ok", service: "users" });
});

test("orders service answers /health", async (t) => {
  const server = createOrdersServer();
  t.after(() => server.close());
  const res = await fetch(`${await start(server)}/health`);
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), { status: "ok", service: "orders" });
});

test("dashboard aggregates the services' health", async (t) => {
  const users = createUsersServer();
  const orders = createOrdersServer();
  t.after(() => {
    users.close();
    orders.close();
  });
  const report = await collectHealth({ users: await start(users), orders: await start(orders) });
  assert.deepEqual(report, { overall: "ok", services: { users: "ok", orders: "ok" } });
});

test("dashboard reports a service that is down as degraded", async (t) => {
  const users = createUsersServer();
  t.after(() => users.close());
  const report = await collectHealth({ users: await start(users), orders: "http://127.0.0.1:9" });
  assert.deepEqual(report, { overall: "degraded", services: { users: "ok", orders: "down" } });
});
