import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { cliAsync, jsonLines } from "../helpers/cli.js";
import { describePg, pgQuery, useTestDatabase } from "../helpers/postgres.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";
import { exitOf, spawnWorker, until, writeTrajectory, type WorkerProc } from "../queue/queue-fixtures.js";

// Two real `ledgerloop worker` processes export to a real OTLP/HTTP receiver in the test process:
// worker X is stopped (SIGSTOP) while it drives a run, worker Y takes the run over, X resumes and
// finds it lost. Each worker's metrics must say so, with queue gauges that match the database.

type AnyValue = { stringValue?: string; intValue?: number | string; doubleValue?: number };
interface Point {
  asInt?: number | string;
  asDouble?: number;
  timeUnixNano: string;
  attributes?: Array<{ key: string; value: AnyValue }>;
}
interface Metric {
  name: string;
  gauge?: { dataPoints: Point[] };
  sum?: { dataPoints: Point[] };
}
interface Export {
  resourceMetrics: Array<{ resource: { attributes: Array<{ key: string; value: AnyValue }> }; scopeMetrics: Array<{ metrics: Metric[] }> }>;
}

const posts: Export[] = [];
let server: http.Server;
let endpoint = "";
beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8").on("data", (d: string) => (body += d));
    req.on("end", () => {
      if (req.url === "/v1/metrics") posts.push(JSON.parse(body) as Export);
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

/** Every data point of `name` exported by service `service`, in export order, as [value, attributes]. */
function points(service: string, name: string): Array<{ v: number; a: Record<string, string> }> {
  const out: Array<{ v: number; a: Record<string, string>; t: bigint }> = [];
  for (const p of posts)
    for (const rm of p.resourceMetrics) {
      if (rm.resource.attributes.find((a) => a.key === "service.name")?.value.stringValue !== service) continue;
      for (const sm of rm.scopeMetrics)
        for (const m of sm.metrics.filter((x) => x.name === name))
          for (const d of (m.gauge ?? m.sum)!.dataPoints)
            out.push({
              v: Number(d.asInt ?? d.asDouble),
              a: Object.fromEntries((d.attributes ?? []).map((a) => [a.key, String(a.value.stringValue ?? a.value.intValue ?? a.value.doubleValue)])),
              t: BigInt(d.timeUnixNano),
            });
    }
  return out.sort((x, y) => (x.t < y.t ? -1 : x.t > y.t ? 1 : 0)).map(({ v, a }) => ({ v, a }));
}
const last = (ps: Array<{ v: number; a: Record<string, string> }>, where: Record<string, string> = {}) =>
  ps.filter((p) => Object.entries(where).every(([k, v]) => p.a[k] === v)).at(-1)?.v;

describePg("the queue worker's OpenTelemetry metrics (OTLP/HTTP)", () => {
  const db = useTestDatabase("queue_metrics");
  const otel = (service: string) => ({
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
    OTEL_SERVICE_NAME: service,
    OTEL_METRIC_EXPORT_INTERVAL: "500",
  });

  it("queue depth, runs by state, takeovers, lease losses, jobs and pool connections arrive with the fleet's values", async () => {
    const scratch = tempWorkspace();
    const submit = (thread: string, steps: number, priority = 0) =>
      cliAsync(
        [
          "submit",
          "go",
          "--workspace",
          tempWorkspace(undefined, { "README.md": "x\n" }),
          "--state",
          db.url,
          "--model",
          `scripted:${writeTrajectory(scratch, steps)}`,
        ].concat(["--retrieval", "lexical", "--thread", thread, "--priority", String(priority)]),
      );
    // Everything is queued before X starts: X (one slot, "long" first by priority) must still be in
    // "long" when it is stopped, however fast the machine runs 16 scripted steps against a submit.
    expect((await submit("long", 16, 10)).code).toBe(0);
    for (const t of ["a", "b", "c"]) expect((await submit(t, 2)).code).toBe(0);
    expect((await cliAsync(["cancel", "c", "--state", db.url])).code).toBe(0);
    const x = spawnWorker(db.url, path.join(scratch, "x"), ["--concurrency", "1"], otel("wx"));
    const holder = async () => (await pgQuery<{ worker: string | null }>(db.url, "SELECT worker FROM ll_run_leases WHERE thread_id = 'long'"))[0]?.worker ?? "";
    const actions = async () =>
      Number((await pgQuery<{ n: string }>(db.url, "SELECT COUNT(*) AS n FROM ll_events WHERE thread_id = 'long' AND type = 'agent_action'"))[0]!.n);
    const stderrs = (...ws: WorkerProc[]) => ws.map((w) => `worker ${w.child.pid}:\n${w.err().slice(-3000)}`).join("\n");
    await until(async () => (await holder()).includes(`:${x.child.pid}:`) && (await actions()) >= 2, 250, { ms: 60_000, why: () => stderrs(x) });

    x.child.kill("SIGSTOP");
    const y = spawnWorker(db.url, path.join(scratch, "y"), ["--concurrency", "1"], otel("wy"));
    try {
      // Y's reaper hands the expired lease to the queue (a takeover). Y may not hold "long" for long
      // while X lives: X's workspace lease on this host stands until X notices its loss.
      const takeovers = async () =>
        Number((await pgQuery<{ n: number }>(db.url, "SELECT takeovers AS n FROM ll_run_leases WHERE thread_id = 'long'"))[0]?.n ?? 0);
      await until(async () => (await takeovers()) >= 1, 200, { ms: 60_000, why: () => stderrs(x, y) });
    } finally {
      x.child.kill("SIGCONT");
    }
    expect(await exitOf(y, 60_000), y.err()).toEqual({ code: 0, signal: null });
    expect(await exitOf(x, 30_000), x.err()).toEqual({ code: 0, signal: null });
    const outcomes = (w: typeof x) => jsonLines<{ thread: string; outcome: string }>(w.out());
    // X, resumed, finds "long" lost; whichever worker takes its new job runs it to the end, once.
    expect(outcomes(x)[0]).toMatchObject({ thread: "long", outcome: "lost" });
    const ran = (w: typeof x) => outcomes(w).filter((o) => o.outcome === "ran");
    expect([...ran(x), ...ran(y)].map((o) => o.thread).sort()).toEqual(["a", "b", "long"]);

    // Y: one takeover, no loss; the queue filled and emptied; its last export matches the database.
    expect(last(points("wy", "ledgerloop.worker.takeovers"))).toBe(1);
    expect(points("wy", "ledgerloop.worker.lease_losses")).toEqual([]);
    expect(last(points("wy", "ledgerloop.worker.jobs"), { outcome: "ran" })).toBe(ran(y).length);
    const depth = points("wy", "ledgerloop.queue.depth").map((p) => p.v);
    expect(Math.max(...depth)).toBeGreaterThanOrEqual(1);
    expect(depth.at(-1)).toBe(0);
    const runs = points("wy", "ledgerloop.queue.runs");
    const final = Object.fromEntries(["queued", "held", "paused", "done", "failed", "cancelled"].map((s) => [s, last(runs, { state: s })]));
    expect(final).toEqual({ queued: 0, held: 0, paused: 0, done: 3, failed: 0, cancelled: 1 });
    const active = points("wy", "ledgerloop.worker.active_runs").map((p) => p.v);
    expect([Math.max(...active), active.at(-1)]).toEqual([1, 0]);
    const conns = points("wy", "ledgerloop.worker.pool.connections");
    expect(conns.every((p) => Number.isInteger(p.v) && p.v >= 0)).toBe(true);
    expect(Math.max(...conns.filter((p) => p.a.state !== "waiting").map((p) => p.v))).toBeGreaterThanOrEqual(1);

    // X: the run it lost, counted once, and no takeover.
    expect(last(points("wx", "ledgerloop.worker.lease_losses"))).toBe(1);
    expect(last(points("wx", "ledgerloop.worker.jobs"), { outcome: "lost" })).toBe(1);
    expect(points("wx", "ledgerloop.worker.takeovers")).toEqual([]);
  });
});
