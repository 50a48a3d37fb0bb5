import http from "node:http";
import net from "node:net";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { checkLangSmith, langSmithTracingOn } from "../../src/telemetry/langsmith.js";
import { cliAsync } from "../helpers/cli.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

afterAll(() => cleanupTemp());

// LangSmith tracing is LangChain's, switched on by the environment. Against a local server that
// speaks enough of LangSmith's API it traces the demo; against an endpoint nobody answers it is
// switched off with one line instead of a failed upload per step.

/** A port nothing listens on (bound, then closed). */
async function closedPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", () => r()));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

const ENV = {
  LANGSMITH_API_KEY: "lsv2_pt_test0123456789abcdef",
  LANGSMITH_PROJECT: "ledgerloop-test",
  LANGCHAIN_TRACING_V2: undefined,
  LANGCHAIN_ENDPOINT: undefined,
};

describe("LangSmith tracing", () => {
  it("is off unless the environment turns it on, and then asks nothing", async () => {
    expect(langSmithTracingOn({})).toBe(false);
    expect(langSmithTracingOn({ LANGCHAIN_TRACING_V2: "true" })).toBe(true);
    const warnings: string[] = [];
    expect(await checkLangSmith((m) => warnings.push(m), {})).toBe(false);
    expect(warnings).toEqual([]);
  });

  it("offline: the demo finishes with one warning line, and no failed upload is reported", async () => {
    const dir = path.join(tempWorkspace(), "demo");
    const r = await cliAsync(["demo", "-w", dir, "--json", "-q"], {
      env: { ...ENV, LANGSMITH_TRACING: "true", LANGSMITH_ENDPOINT: `http://127.0.0.1:${await closedPort()}` },
      timeoutMs: 240_000,
    });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: "finished" });
    expect(r.stderr.match(/LangSmith tracing is on but .* cannot be reached .*: tracing is off for this run/g)).toHaveLength(1);
    expect(r.stderr).not.toMatch(/\[LANGSMITH\]|fetch failed/);
  }, 300_000);

  it("online: the demo's graph steps reach the endpoint", async () => {
    const posted: string[] = [];
    const server = http.createServer((req, res) => {
      let body = "";
      req.setEncoding("latin1");
      req.on("data", (c) => (body += c));
      req.on("end", () => {
        if (req.method === "POST") posted.push(`${req.url} ${body}`);
        res.setHeader("content-type", "application/json");
        res.end(req.url?.startsWith("/info") ? JSON.stringify({ version: "0.0.0", batch_ingest_config: { use_multipart_endpoint: false } }) : "{}");
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    try {
      const dir = path.join(tempWorkspace(), "demo");
      const r = await cliAsync(["demo", "-w", dir, "--json", "-q"], {
        env: { ...ENV, LANGSMITH_TRACING: "true", LANGSMITH_ENDPOINT: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}` },
        timeoutMs: 240_000,
      });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).not.toMatch(/LangSmith tracing is on but/);
      // The runs the client uploaded name the graph's nodes.
      const all = posted.join("\n");
      expect(posted.length).toBeGreaterThan(0);
      expect(all).toMatch(/"name":"decide"/);
      expect(all).toMatch(/"name":"act"/);
    } finally {
      await new Promise((r) => server.close(r));
    }
  }, 300_000);
});
