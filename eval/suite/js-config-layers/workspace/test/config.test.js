import test from "node:test";
import assert from "node:assert/strict";
import { loadConfig } from "../src/config.js";

test("defaults", () => {
  const c = loadConfig();
  assert.equal(c.server.port, 8080);
  assert.equal(c.log.level, "info");
});

test("a file overrides the defaults key by key", () => {
  const c = loadConfig({ file: "config/example.json" });
  assert.equal(c.server.port, 9000);
  assert.equal(c.server.host, "127.0.0.1");
  assert.equal(c.log.level, "debug");
});
