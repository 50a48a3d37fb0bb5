import { afterEach, describe, expect, it } from "vitest";
import { probeEndpoint } from "../../src/models/probe.js";
import { cliAsync } from "../helpers/cli.js";
import { deadBaseURL, startOpenAIStub, type OpenAIStub } from "../helpers/openai-stub.js";

const KEY = "sk-test-Qw3Er5Ty7Ui9Op1As2Df4Gh6";
let stub: OpenAIStub | undefined;
afterEach(async () => {
  await stub?.close();
  stub = undefined;
});

describe("probeEndpoint (GET <base>/models before a run)", () => {
  it("passes when the server serves the model, and names what it serves when it does not", async () => {
    stub = await startOpenAIStub({ models: ["qwen2.5-coder:7b", "llama3.1:8b"], requireKey: KEY });
    expect(await probeEndpoint({ baseURL: stub.url, apiKey: KEY, model: "qwen2.5-coder:7b" })).toEqual({
      ok: true,
      detail: `${stub.url} serves "qwen2.5-coder:7b" (2 models listed)`,
    });
    const typo = await probeEndpoint({ baseURL: stub.url, apiKey: KEY, model: "qwen2.5-coder:7" });
    expect(typo.ok).toBe(false);
    expect(typo.detail).toBe(`${stub.url} does not serve "qwen2.5-coder:7"; it serves: qwen2.5-coder:7b, llama3.1:8b`);
  });

  it("reports a rejected key without showing it, even when the server echoes it", async () => {
    stub = await startOpenAIStub({ models: ["m"], requireKey: KEY });
    const wrong = `${KEY.slice(0, -4)}XXXX`;
    const r = await probeEndpoint({ baseURL: stub.url, apiKey: wrong, model: "m" });
    expect(r).toEqual({ ok: false, detail: `${stub.url} refused the API key (HTTP 401); check OPENAI_API_KEY` });
  });

  it("passes a server without a /models route, saying the name is checked later", async () => {
    stub = await startOpenAIStub();
    const r = await probeEndpoint({ baseURL: stub.url, model: "m" });
    expect(r.ok).toBe(true);
    expect(r.detail).toMatch(/lists no models \(HTTP 404 on \/models\)/);
  });

  it("reports a dead server as unreachable, naming the URL", async () => {
    const url = await deadBaseURL();
    const r = await probeEndpoint({ baseURL: url, apiKey: KEY, model: "m", timeoutMs: 2000 });
    expect(r.ok).toBe(false);
    expect(r.detail).toMatch(new RegExp(`^${url.replace(/[.:/]/g, "\\$&")} is unreachable \\(.*ECONNREFUSED`));
  });

  it("ledgerloop doctor --model openai:<name> adds the endpoint check and fails on a misspelt model", async () => {
    stub = await startOpenAIStub({ models: ["served-model"], requireKey: KEY });
    const env = { OPENAI_BASE_URL: stub.url, OPENAI_API_KEY: KEY };
    const good = await cliAsync(["doctor", "--model", "openai:served-model", "--json"], { env });
    const endpoint = (out: string) =>
      (JSON.parse(out) as { checks: Array<{ name: string; ok: boolean; detail: string }> }).checks.find((c) => c.name === "endpoint");
    expect(good.code, good.stdout).toBe(0);
    expect(endpoint(good.stdout)).toMatchObject({ ok: true });
    const bad = await cliAsync(["doctor", "--json"], { env: { ...env, LEDGERLOOP_MODEL: "openai:servd-model" } });
    expect(bad.code).toBe(1);
    expect(endpoint(bad.stdout)).toMatchObject({ ok: false, detail: expect.stringContaining('does not serve "servd-model"') });
    expect(bad.stdout + bad.stderr).not.toContain(KEY);
  }, 60_000);
});
