import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { spawnSync } from "node:child_process";
import { Database } from "../../src/sqlite/driver.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEMO_TASK } from "../../src/cli/demo.js";
import { RunRegistry } from "../../src/ledger/runs.js";
import { detectCgroups } from "../../src/sandbox/limits.js";
import { runLogFile } from "../../src/workspace/location.js";
import { cliAsync, jsonLines } from "../helpers/cli.js";
import { UNBUNDLED_CLI } from "../helpers/packages-loaded.js";
import { DEMO_TRAJECTORY, DEMO_WORKSPACE, REPO, cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

// A real OTLP/HTTP receiver (JSON protocol, what the http exporters send) in the test process; the
// run is a real `ledgerloop run` child process of the demo task.

type AnyValue = { stringValue?: string; intValue?: number | string; doubleValue?: number; boolValue?: boolean };
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes: Array<{ key: string; value: AnyValue }>;
  status?: { code?: number };
}
interface Span {
  traceId: string;
  spanId: string;
  parent: string | null;
  name: string;
  attrs: Record<string, string | number | boolean>;
  status: number;
}

const received: Record<string, unknown[]> = {};
let server: http.Server;
let endpoint = "";

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8").on("data", (d: string) => (body += d));
    req.on("end", () => {
      (received[req.url ?? ""] ??= []).push({ contentType: req.headers["content-type"], body: JSON.parse(body) });
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((r) => server.close(r));
  cleanupTemp();
});

const value = (v: AnyValue) => v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : (v.doubleValue ?? v.boolValue ?? ""));

function spansOf(posts: unknown[]): Span[] {
  return posts.flatMap((p) =>
    (p as { body: { resourceSpans: Array<{ scopeSpans: Array<{ spans: OtlpSpan[] }> }> } }).body.resourceSpans.flatMap((rs) =>
      rs.scopeSpans.flatMap((ss) =>
        ss.spans.map((s) => ({
          traceId: s.traceId,
          spanId: s.spanId,
          parent: s.parentSpanId || null,
          name: s.name,
          attrs: Object.fromEntries(s.attributes.map((a) => [a.key, value(a.value)])),
          status: s.status?.code ?? 0,
        })),
      ),
    ),
  );
}

describe("OpenTelemetry export of a run (OTLP/HTTP)", () => {
  let ws = "";
  let thread = "";
  beforeAll(async () => {
    ws = tempWorkspace(DEMO_WORKSPACE);
    const r = await cliAsync(["run", DEMO_TASK, "-w", ws, "--model", `scripted:${DEMO_TRAJECTORY}`, "--json", "-q"], {
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json", OTEL_SERVICE_NAME: "ll-test" },
      timeoutMs: 180_000,
    });
    expect(r.code, r.stderr).toBe(0);
    thread = (JSON.parse(r.stdout) as { thread: string }).thread;
  }, 200_000);

  it("exports one trace: the run's root span (ids from the run registry) → a span per node → model and tool spans", () => {
    const posts = received["/v1/traces"] ?? [];
    expect(posts.length).toBeGreaterThan(0);
    expect((posts[0] as { contentType: string }).contentType).toBe("application/json");
    const spans = spansOf(posts);
    const db = new Database(path.join(ws, ".ledgerloop/state.db"), { readonly: true });
    const trace = new RunRegistry(db).get(thread)!.trace!;
    const ledger = db.prepare("SELECT type, COUNT(*) AS n FROM ll_events WHERE thread_id = ? GROUP BY type").all(thread) as Array<{ type: string; n: number }>;
    db.close();
    expect(new Set(spans.map((s) => s.traceId))).toEqual(new Set([trace.traceId]));
    const root = spans.filter((s) => s.parent === null);
    expect(root.map((s) => [s.name, s.spanId])).toEqual([["ledgerloop run", trace.spanId]]);
    expect(root[0]!.attrs).toMatchObject({ "ledgerloop.thread": thread, "ledgerloop.status": "finished", "ledgerloop.steps": 10 });

    const byId = new Map(spans.map((s) => [s.spanId, s]));
    const nodes = spans.filter((s) => s.name.startsWith("node "));
    expect(nodes.every((s) => s.parent === trace.spanId)).toBe(true);
    expect(new Set(nodes.map((s) => s.name))).toEqual(new Set(["node plan", "node context", "node decide", "node act", "node observe", "node reflect"]));
    expect(nodes.every((s) => s.attrs["ledgerloop.thread"] === thread && typeof s.attrs["ledgerloop.step"] === "number")).toBe(true);
    expect(nodes.some((s) => s.attrs["ledgerloop.subtask"] === "users-health")).toBe(true);

    const models = spans.filter((s) => s.name.startsWith("model "));
    const n = (t: string) => ledger.find((c) => c.type === t)?.n ?? 0;
    expect(models.filter((s) => !s.attrs["ledgerloop.exhausted"])).toHaveLength(n("model_call"));
    for (const m of models) {
      const parent = byId.get(m.parent!)!;
      expect(parent.name).toBe(`node ${m.attrs["ledgerloop.node"]}`);
      expect(["plan", "decide", "reflect", "summarize"]).toContain(m.attrs["ledgerloop.node"]);
    }
    const decideCall = models.find((s) => s.attrs["ledgerloop.node"] === "decide")!;
    expect(decideCall.attrs).toMatchObject({
      "gen_ai.request.model": `scripted:${DEMO_TRAJECTORY}`,
      "gen_ai.usage.input_tokens": 0,
      "gen_ai.usage.output_tokens": 0,
      "ledgerloop.usage.cached_input_tokens": 0,
      "ledgerloop.cost_usd": 0,
      "ledgerloop.retries": 0,
    });

    const tools = spans.filter((s) => s.name.startsWith("tool "));
    expect(tools).toHaveLength(n("environment_feedback"));
    expect(tools.every((s) => byId.get(s.parent!)?.name === "node act")).toBe(true);
    const tests = tools.filter((s) => s.name === "tool run_tests");
    expect(
      tests.map((s) => [
        s.attrs["ledgerloop.tool.exit_code"],
        s.attrs["ledgerloop.tool.status"],
        s.attrs["error.type"] ?? null,
        s.attrs["ledgerloop.tool.risk"],
        s.status,
      ]),
    ).toEqual([
      [1, "error", "test_failure", "exec", 2],
      [0, "ok", null, "exec", 0],
    ]);
    expect(tests.every((s) => typeof s.attrs["ledgerloop.tool.duration_ms"] === "number")).toBe(true);
    // Shell commands carry what their cgroups measured; nothing stopped the demo's (no stop attribute).
    const cg = detectCgroups().parents;
    if (cg.cpuacct && cg.memory)
      expect(
        tests.every((s) => (s.attrs["ledgerloop.command.cpu_ms"] as number) > 0 && (s.attrs["ledgerloop.command.memory_peak_bytes"] as number) > 1 << 20),
      ).toBe(true);
    expect(tools.some((s) => "ledgerloop.command.stopped_by" in s.attrs || "ledgerloop.command.limit" in s.attrs)).toBe(false);
    expect(tools.find((s) => s.name === "tool read_file")?.attrs["ledgerloop.command.cpu_ms"]).toBeUndefined();
    expect(tools.find((s) => s.name === "tool read_file")?.attrs["ledgerloop.tool.risk"]).toBe("read");
  });

  it("exports metrics through the OTel metrics API: model calls, tokens, tool failures by error class, node durations", () => {
    const posts = (received["/v1/metrics"] ?? []) as Array<{
      body: {
        resourceMetrics: Array<{
          resource: { attributes: Array<{ key: string; value: AnyValue }> };
          scopeMetrics: Array<{
            metrics: Array<{
              name: string;
              sum?: { dataPoints: Array<{ asInt?: number | string; asDouble?: number; attributes: Array<{ key: string; value: AnyValue }> }> };
            }>;
          }>;
        }>;
      };
    }>;
    expect(posts.length).toBeGreaterThan(0);
    const metrics = posts.flatMap((p) => p.body.resourceMetrics.flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics)));
    const names = new Set(metrics.map((m) => m.name));
    for (const name of [
      "ledgerloop.model.calls",
      "ledgerloop.model.tokens",
      "ledgerloop.model.cost",
      "ledgerloop.tool.calls",
      "ledgerloop.tool.failures",
      "ledgerloop.node.duration",
    ])
      expect(names).toContain(name);
    const failures = metrics.find((m) => m.name === "ledgerloop.tool.failures")!.sum!.dataPoints;
    const testFailure = failures.find((d) => d.attributes.some((a) => a.key === "error_class" && a.value.stringValue === "test_failure"));
    expect(Number(testFailure?.asInt ?? testFailure?.asDouble)).toBe(1);
    const service = posts[0]!.body.resourceMetrics[0]!.resource.attributes.find((a) => a.key === "service.name");
    expect(service?.value.stringValue).toBe("ll-test");
  });

  it("with the variable unset, no OpenTelemetry module is loaded and nothing is sent", () => {
    const before = (received["/v1/traces"] ?? []).length;
    const ws2 = tempWorkspace(DEMO_WORKSPACE);
    const trace = path.join(tempWorkspace(), "imports.txt");
    fs.writeFileSync(trace, "");
    const env: NodeJS.ProcessEnv = { ...process.env, TRACE_FILE: trace };
    for (const k of Object.keys(env)) if (k.startsWith("OTEL_")) delete env[k];
    const r = spawnSync(
      process.execPath,
      [
        "--import",
        path.join(REPO, "test/helpers/trace-imports.mjs"),
        // The compiled CLI before bundling: the trace names its modules (the bin's bundle keeps the
        // same dynamic-import boundaries, and leaves OpenTelemetry external).
        UNBUNDLED_CLI,
        "run",
        DEMO_TASK,
        "-w",
        ws2,
        "--model",
        `scripted:${DEMO_TRAJECTORY}`,
        "-q",
        "--json",
      ],
      {
        encoding: "utf8",
        env,
        timeout: 180_000,
      },
    );
    expect(r.status, r.stderr).toBe(0);
    const loaded = fs.readFileSync(trace, "utf8");
    // The tracer works: the run's own modules and pino are in it.
    expect(loaded).toMatch(/src\/telemetry\/observer\.(ts|js)/);
    expect(loaded).toMatch(/node_modules\/pino\//);
    expect(loaded).not.toMatch(/@opentelemetry\//);
    expect((received["/v1/traces"] ?? []).length).toBe(before);
    const t = (JSON.parse(r.stdout) as { thread: string }).thread;
    expect(
      jsonLines<{ event: string; otel?: boolean }>(fs.readFileSync(runLogFile(path.join(ws2, ".ledgerloop"), t), "utf8")).find((l) => l.event === "run_start")
        ?.otel,
    ).toBe(false);
  }, 200_000);
});

describe("a run paused for approval and resumed in another process", () => {
  it("stays one trace: the resuming process parents its spans to the run's root span, and the log shows the pause", async () => {
    const ws = tempWorkspace(undefined, { "README.md": "x\n" });
    const script = path.join(tempWorkspace(), "t.json");
    fs.writeFileSync(
      script,
      JSON.stringify({
        decide: [
          { content: "", tool_calls: [{ name: "run_command", args: { command: "frobnicate --now" } }] },
          { content: "", tool_calls: [{ name: "finish", args: { summary: "done" } }] },
        ],
      }),
    );
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint };
    const first = await cliAsync(["run", "try frobnicate", "-w", ws, "--model", `scripted:${script}`, "--approve", "ask", "--json", "-q"], {
      env,
      timeoutMs: 120_000,
    });
    const paused = JSON.parse(first.stdout) as { thread: string; status: string };
    expect(paused.status, first.stderr).toBe("awaiting_approval");
    const second = await cliAsync(["resume", paused.thread, "-w", ws, "--approve", "--json", "-q"], { env, timeoutMs: 120_000 });
    expect(JSON.parse(second.stdout).status, second.stderr).toBe("finished");

    const db = new Database(path.join(ws, ".ledgerloop/state.db"), { readonly: true });
    const trace = new RunRegistry(db).get(paused.thread)!.trace!;
    db.close();
    const spans = spansOf(received["/v1/traces"] ?? []).filter((s) => s.attrs["ledgerloop.thread"] === paused.thread);
    expect(new Set(spans.map((s) => s.traceId))).toEqual(new Set([trace.traceId]));
    const roots = spans.filter((s) => s.name === "ledgerloop run" || s.name === "ledgerloop resume");
    expect(roots.map((s) => [s.name, s.parent, s.attrs["ledgerloop.status"]])).toEqual([
      ["ledgerloop run", null, "awaiting_approval"],
      ["ledgerloop resume", trace.spanId, "finished"],
    ]);
    const pausedAct = spans.find((s) => s.name === "node act" && s.attrs["ledgerloop.status"] === "paused");
    expect(pausedAct?.parent).toBe(roots[0]!.spanId);
    const ran = spans.find((s) => s.name === "tool run_command")!;
    expect(spans.find((s) => s.spanId === ran.parent)?.parent).toBe(roots[1]!.spanId);
    expect(ran.attrs["ledgerloop.tool.exit_code"]).toBe(127);

    const log = jsonLines<{ event: string; reason?: string; traceId: string; pid?: number }>(
      fs.readFileSync(runLogFile(path.join(ws, ".ledgerloop"), paused.thread), "utf8"),
    );
    expect(log.filter((l) => l.event === "pause").map((l) => l.reason)).toEqual(["approval"]);
    expect(log.filter((l) => l.event === "run_start")).toHaveLength(2);
    expect(new Set(log.map((l) => l.traceId))).toEqual(new Set([trace.traceId]));
  }, 200_000);
});
