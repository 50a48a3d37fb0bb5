import test from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { explain, loadConfig } from "../src/config.js";
import { ConfigError } from "../src/errors.js";

function jsonFile(data) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cfg-hidden-"));
  const file = path.join(dir, "app.json");
  fs.writeFileSync(file, typeof data === "string" ? data : JSON.stringify(data));
  return file;
}

function problems(opts) {
  try {
    loadConfig(opts);
  } catch (e) {
    assert.ok(e instanceof ConfigError, `expected ConfigError, got ${e}`);
    assert.ok(Array.isArray(e.errors));
    return e.errors;
  }
  assert.fail("loadConfig did not throw");
}

test("layers override in order: defaults < file < env < argv", () => {
  const file = jsonFile({ server: { host: "0.0.0.0", port: 8100 }, db: { poolSize: 2 } });
  const env = { APP_SERVER__PORT: "8200", APP_LOG__LEVEL: "warn", HOME: "/x", PATH: "/bin" };
  const c = loadConfig({ file, env, argv: ["--server.port=8300", "--db.url", "pg://db/app"] });
  assert.deepEqual(JSON.parse(JSON.stringify(c)), {
    server: { host: "0.0.0.0", port: 8300 },
    log: { level: "warn", json: false },
    db: { url: "pg://db/app", poolSize: 2 },
  });
  assert.deepEqual(explain(c, "server.host"), { value: "0.0.0.0", source: `file ${file}` });
  assert.deepEqual(explain(c, "server.port"), { value: 8300, source: "argv --server.port" });
  assert.deepEqual(explain(c, "log.level"), { value: "warn", source: "env APP_LOG__LEVEL" });
  assert.deepEqual(explain(c, "log.json"), { value: false, source: "default" });
  assert.deepEqual(explain(c, "db.url"), { value: "pg://db/app", source: "argv --db.url" });
});

test("env names map to camelCase keys and text is converted to the schema type", () => {
  const c = loadConfig({ env: { APP_DB__POOL_SIZE: "12", APP_LOG__JSON: "1" } });
  assert.strictEqual(c.db.poolSize, 12);
  assert.strictEqual(c.log.json, true);
  assert.deepEqual(explain(c, "db.poolSize"), { value: 12, source: "env APP_DB__POOL_SIZE" });
  const off = loadConfig({ env: { APP_LOG__JSON: "false" }, argv: [] });
  assert.strictEqual(off.log.json, false);
});

test("boolean flags: bare and --no- forms", () => {
  assert.strictEqual(loadConfig({ env: {}, argv: ["--log.json"] }).log.json, true);
  const c = loadConfig({ env: { APP_LOG__JSON: "true" }, argv: ["--no-log.json", "--server.port", "81"] });
  assert.strictEqual(c.log.json, false);
  assert.strictEqual(c.server.port, 81);
  assert.deepEqual(explain(c, "log.json"), { value: false, source: "argv --log.json" });
});

test("the result is deeply frozen and defaults are not shared between calls", () => {
  const a = loadConfig({ env: {}, argv: ["--server.port=1234"] });
  assert.ok(Object.isFrozen(a) && Object.isFrozen(a.server) && Object.isFrozen(a.db));
  assert.throws(() => {
    "use strict";
    a.server.port = 1;
  }, TypeError);
  assert.equal(loadConfig({ env: {} }).server.port, 8080);
});

test("bad values name the key and the layer, and every problem is reported at once", () => {
  const file = jsonFile({ server: { port: "80" }, log: { colour: true } });
  const errors = problems({
    file,
    env: { APP_DB__POOL_SIZE: "many", APP_SERVER__PORT: "70000" },
    argv: ["--log.level=loud", "leftover"],
  });
  assert.equal(errors.length, 6, errors.join("\n"));
  const has = (...parts) => assert.ok(errors.some((m) => parts.every((p) => m.includes(p))), `no message with ${parts.join(" + ")} in:\n${errors.join("\n")}`);
  has("server.port", `file ${file}`);
  has("log.colour", `file ${file}`);
  has("db.poolSize", "env APP_DB__POOL_SIZE");
  has("server.port", "env APP_SERVER__PORT");
  has("log.level", "argv --log.level");
  has("leftover");
});

test("ints must be whole numbers and ports in range", () => {
  assert.equal(problems({ env: {}, argv: ["--db.poolSize=2.5"] }).length, 1);
  assert.equal(problems({ env: {}, argv: ["--server.port=0"] }).length, 1);
  assert.equal(problems({ env: { APP_SERVER__PORT: "65536" } }).length, 1);
  assert.equal(loadConfig({ env: { APP_SERVER__PORT: "65535" } }).server.port, 65535);
  assert.equal(problems({ file: jsonFile({ db: { poolSize: 1.5 } }), env: {} }).length, 1);
});

test("unknown env keys are errors; other variables are ignored", () => {
  const errors = problems({ env: { APP_DB__POOL: "3", TERM: "xterm" } });
  assert.equal(errors.length, 1);
  assert.ok(errors[0].includes("env APP_DB__POOL"));
  assert.ok(errors[0].includes("db.pool"));
});

test("a missing or broken file is a ConfigError naming it", () => {
  const missing = path.join(os.tmpdir(), "cfg-hidden-none", "nope.json");
  assert.ok(problems({ file: missing, env: {} })[0].includes(`file ${missing}`));
  const broken = jsonFile("{ not json");
  assert.ok(problems({ file: broken, env: {} })[0].includes(`file ${broken}`));
});

test("explain rejects unknown keys", () => {
  const c = loadConfig({ env: {} });
  assert.throws(() => explain(c, "server.nope"), ConfigError);
});
