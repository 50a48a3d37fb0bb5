import { createHash } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Database } from "../../src/sqlite/driver.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { handleWeb } from "../../src/cli/web.js";
import { detectCgroups } from "../../src/sandbox/limits.js";
import { startViewer, type Viewer } from "../../src/web/server.js";
import { cleanupTemp } from "../helpers/workspace.js";
import { demoRun, HOSTILE_DECISION, HOSTILE_ECHO, hostileRun, pausedRun, pricedRun, processRun, smallWorkspace } from "./fixtures.js";

let demo: { workspace: string; thread: string };
let viewer: Viewer;
let other: { workspace: string; hostile: string; paused: string; viewer: Viewer };

beforeAll(async () => {
  demo = await demoRun();
  viewer = await startViewer({ workspace: demo.workspace });
  const { workspace, scripts } = smallWorkspace();
  const hostile = await hostileRun(workspace, scripts);
  const paused = await pausedRun(workspace, scripts);
  other = { workspace, hostile, paused, viewer: await startViewer({ workspace }) };
}, 120_000);

afterAll(async () => {
  await viewer?.close();
  await other?.viewer.close();
  cleanupTemp();
});

async function get(v: Viewer, p: string): Promise<{ status: number; body: any; headers: Headers }> {
  const res = await fetch(new URL(p, v.url));
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // HTML and assets stay text
  }
  return { status: res.status, body, headers: res.headers };
}

/** A raw request, for what fetch will not send (another Host, another method). */
function raw(
  v: Viewer,
  p: string,
  opts: { method?: string; host?: string } = {},
): Promise<{ status: number; body: string; headers: http.IncomingHttpHeaders }> {
  const u = new URL(p, v.url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { hostname: u.hostname, port: u.port, path: u.pathname + u.search, method: opts.method ?? "GET", headers: opts.host ? { host: opts.host } : {} },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (c) => (body += c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
      },
    );
    req.on("error", reject);
    req.end();
  });
}

/** The page's ES modules (app.js imports them). */
const WEB_APP_DIR = fileURLToPath(new URL("../../src/web/app", import.meta.url));

const tp = (thread: string) => `/api/threads/${encodeURIComponent(thread)}`;

describe("run viewer API on the demo run", () => {
  it("lists the workspace's threads", async () => {
    const { status, body } = await get(viewer, "/api/threads");
    expect(status).toBe(200);
    expect(body.workspace).toBe(fs.realpathSync(demo.workspace));
    expect(body.threads).toEqual([
      expect.objectContaining({ thread: demo.thread, status: "finished", steps: 10, goal: expect.stringMatching(/GET \/health/) }),
    ]);
    expect(body.threads[0].events).toBeGreaterThan(50);
    expect(body.threads[0].checkpoints).toBeGreaterThan(10);
  });

  it("gives a thread's header: goal, status, plan, decisions, steps, sandbox", async () => {
    const { status, body } = await get(viewer, tp(demo.thread));
    expect(status).toBe(200);
    expect(body).toMatchObject({ thread: demo.thread, status: "finished", steps: 10, maxSteps: 30, awaitingApproval: null });
    expect(body.goal).toMatch(/collectHealth/);
    expect(body.plan.map((s: { id: string; status: string }) => [s.id, s.status])).toEqual([
      ["users-health", "completed"],
      ["orders-health", "completed"],
      ["dashboard", "completed"],
      ["verify", "completed"],
    ]);
    expect(body.decisions).toEqual([expect.objectContaining({ step: 3, text: expect.stringMatching(/^Health endpoints answer GET \/health/) })]);
    expect(["bwrap", "unshare", "none"]).toContain(body.sandbox.level);
    expect(body.lastTests).toMatchObject({ passed: 4, failed: 0, step: 8 });
    expect(body.filesTouched).toEqual(["dashboard/aggregate.js", "services/orders/server.js", "services/users/server.js"]);
    // Three shell commands (two test runs and the sed), added up where their cgroups measured them.
    expect(body.commands.count).toBe(3);
    const cg = detectCgroups().parents;
    if (cg.cpuacct && cg.memory) {
      expect(body.commands).toMatchObject({ measured: 3, mostCpu: { command: "npm test --silent" }, highestPeak: { command: "npm test --silent" } });
      expect(body.commands.cpuMs).toBeGreaterThan(body.commands.mostCpu.cpuMs);
    } else {
      expect(body.commands.mostCpu).toBeNull();
    }
    expect(body.finishSummary).toMatch(/4 passed/);
  });

  it("gives one entry per decide step with actions, feedback, tests and files", async () => {
    const { status, body } = await get(viewer, `${tp(demo.thread)}/steps`);
    expect(status).toBe(200);
    expect(body.steps.map((s: { step: number }) => s.step)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(body.before.map((e: { type: string }) => e.type)).toEqual(["task_spec"]);

    const s6 = body.steps[5];
    expect(s6.outcome).toBe("error");
    expect(s6.model.content).toMatch(/Running the tests/);
    expect(s6.actions).toHaveLength(1);
    // A mismatch says how the command ended: the engine's own first lines and the end of stderr.
    const fb6 = s6.actions[0].feedback;
    const ended = {
      signal: fb6.signal,
      output: String(fb6.output?.text ?? "")
        .split("\n")
        .slice(0, 3),
      stderr: String(fb6.stderr?.text ?? "").slice(-600),
    };
    expect(s6.actions[0], `step 6's run_tests: ${JSON.stringify(ended)}`).toMatchObject({
      tool: "run_tests",
      feedback: { status: "error", errorClass: "test_failure", exitCode: 1 },
    });
    expect(s6.actions[0].feedback.tests).toMatchObject({ passed: 2, failed: 2 });
    expect(s6.actions[0].feedback.tests.failedTests).toEqual(["orders service answers /health", "dashboard aggregates the services' health"]);
    expect(s6.actions[0].feedback.stdout.text).toMatch(/not ok 2 - orders service answers \/health/);
    // Failing tests are not a stop: the command ended by itself. Its CPU and memory show where cgroups measured them.
    expect(fb6).toMatchObject({ stoppedBy: null, limit: null });
    if (detectCgroups().parents.cpuacct) expect(fb6.usage.cpuMs).toBeGreaterThan(0);
    else expect(fb6.usage === null || fb6.usage.cpuMs === null).toBe(true);
    expect(s6.context).toMatchObject({ tokens: expect.any(Number), budget: expect.any(Number) });

    const s7 = body.steps[6];
    expect(s7.outcome).toBe("ok");
    expect(s7.actions[0]).toMatchObject({ tool: "run_command", feedback: { status: "ok", exitCode: 0 } });
    expect(s7.actions[0].feedback.filesChanged.modified).toEqual(["services/orders/server.js"]);
    expect(s7.filesChanged.modified).toEqual(["services/orders/server.js"]);

    expect(body.steps[7].tests).toMatchObject({ passed: 4, failed: 0 });
    expect(body.steps[2].after.map((e: { type: string }) => e.type)).toEqual(["decision"]);
    expect(body.steps[8].after.map((e: { type: string }) => e.type)).toEqual(["plan_update", "reflection"]);
    expect(body.steps[9].after.at(-1)).toMatchObject({ type: "run_status", payload: { status: "finished", steps: 10 } });

    const later = await get(viewer, `${tp(demo.thread)}/steps?from=9`);
    expect(later.body.steps.map((s: { step: number }) => s.step)).toEqual([9, 10]);
    expect(later.body.before).toEqual([]);
  });

  it("pages steps from the end: the last N, the page before it, and how many there are", async () => {
    const stepsOf = (b: { steps: Array<{ step: number }> }) => b.steps.map((s) => s.step);
    const all = await get(viewer, `${tp(demo.thread)}/steps`);
    expect(all.body).toMatchObject({ total: 10, earlier: 0 });

    const end = await get(viewer, `${tp(demo.thread)}/steps?last=4`);
    expect(end.status).toBe(200);
    expect(stepsOf(end.body)).toEqual([7, 8, 9, 10]);
    expect(end.body).toMatchObject({ total: 10, earlier: 6, before: [] });
    // Each page is the same as in the full listing.
    expect(end.body.steps[1]).toEqual(all.body.steps[7]);

    const previous = await get(viewer, `${tp(demo.thread)}/steps?to=6&last=4`);
    expect(stepsOf(previous.body)).toEqual([3, 4, 5, 6]);
    expect(previous.body).toMatchObject({ total: 10, earlier: 2, before: [] });

    // The first page carries what came before step 1 (the task spec).
    const first = await get(viewer, `${tp(demo.thread)}/steps?to=2&last=4`);
    expect(stepsOf(first.body)).toEqual([1, 2]);
    expect(first.body.earlier).toBe(0);
    expect(first.body.before.map((e: { type: string }) => e.type)).toEqual(["task_spec"]);

    const middle = await get(viewer, `${tp(demo.thread)}/steps?from=2&to=8&last=3`);
    expect(stepsOf(middle.body)).toEqual([6, 7, 8]);
    expect(middle.body.earlier).toBe(5);
    const more = await get(viewer, `${tp(demo.thread)}/steps?last=1000`);
    expect(stepsOf(more.body)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(more.body.before).toHaveLength(1);
    const none = await get(viewer, `${tp(demo.thread)}/steps?from=11`);
    expect(none.body).toMatchObject({ steps: [], total: 10, earlier: 10, before: [] });
  });

  it("shows the context audit of a step, with the failing tests the model was told about", async () => {
    const { status, body } = await get(viewer, `${tp(demo.thread)}/context/7`);
    expect(status).toBe(200);
    expect(body.step).toBe(7);
    expect(body.tokens).toBeGreaterThan(0);
    expect(body.tokens).toBeLessThanOrEqual(body.budget);
    expect(body.items.length).toBeGreaterThan(5);
    expect(body.sections.map((s: { section: string }) => s.section)).toEqual(expect.arrayContaining(["system", "goal", "plan", "recent"]));
    expect(body.sections.reduce((n: number, s: { tokens: number }) => n + s.tokens, 0)).toBe(
      body.items.reduce((n: number, i: { tokens: number }) => n + i.tokens, 0),
    );
    expect(Array.isArray(body.omitted)).toBe(true);
    const prompt = body.messages.map((m: { content: string }) => m.content).join("\n");
    expect(prompt).toContain("orders service answers /health");
    expect(prompt).toContain("dashboard aggregates the services' health");
    expect(body.messages[0].role).toBe("system");
  });

  it("pages through the raw ledger by type and seq", async () => {
    const first = await get(viewer, `${tp(demo.thread)}/events?limit=5`);
    expect(first.status).toBe(200);
    expect(first.body.events.map((e: { seq: number }) => e.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(first.body).toMatchObject({ next: 5, more: true });
    const next = await get(viewer, `${tp(demo.thread)}/events?after=5&limit=2`);
    expect(next.body.events.map((e: { seq: number }) => e.seq)).toEqual([6, 7]);
    const fb = await get(viewer, `${tp(demo.thread)}/events?type=environment_feedback,decision`);
    expect(new Set(fb.body.events.map((e: { type: string }) => e.type))).toEqual(new Set(["environment_feedback", "decision"]));
    expect(fb.body.events).toHaveLength(13);
    const all = await get(viewer, `${tp(demo.thread)}/events?limit=1000`);
    const tail = await get(viewer, `${tp(demo.thread)}/events?after=${all.body.next}`);
    expect(tail.body).toMatchObject({ events: [], next: all.body.next, more: false });
    const one = await get(viewer, `${tp(demo.thread)}/events/${all.body.events[0].id}`);
    expect(one.body).toMatchObject({ seq: 1, threadId: demo.thread });
  });

  it("lists checkpoints newest first", async () => {
    const { status, body } = await get(viewer, `${tp(demo.thread)}/checkpoints`);
    expect(status).toBe(200);
    expect(body.checkpoints.length).toBeGreaterThan(10);
    expect(body.checkpoints[0]).toMatchObject({ status: "finished", agentStep: 10, next: [], interrupted: false });
    const ids = body.checkpoints.map((c: { checkpointId: string }) => c.checkpointId);
    expect([...ids].sort().reverse()).toEqual(ids);
    const page = await get(viewer, `${tp(demo.thread)}/checkpoints?limit=3&before=${ids[2]}`);
    expect(page.body.checkpoints.map((c: { checkpointId: string }) => c.checkpointId)).toEqual(ids.slice(3, 6));
  });

  it("answers an unknown thread with 404 and bad input with 400, as JSON without a stack", async () => {
    const cases: Array<[string, number, RegExp]> = [
      ["/api/threads/no-such-run", 404, /unknown thread "no-such-run"/],
      ["/api/threads/no-such-run/steps", 404, /unknown thread/],
      ["/api/threads/no-such-run/context/1", 404, /unknown thread/],
      [`${tp(demo.thread)}/context/abc`, 400, /step must be a positive integer/],
      [`${tp(demo.thread)}/context/0`, 400, /step must be a positive integer/],
      [`${tp(demo.thread)}/context/-3`, 400, /step must be a positive integer/],
      [`${tp(demo.thread)}/context/99`, 404, /no prompt for step 99; steps with prompts: 1-10/],
      [`${tp(demo.thread)}/steps?last=0`, 400, /^last must be between 1 and 1000, got 0$/],
      [`${tp(demo.thread)}/steps?last=1001`, 400, /^last must be between 1 and 1000/],
      [`${tp(demo.thread)}/steps?last=ten`, 400, /^last must be an integer, got "ten"$/],
      [`${tp(demo.thread)}/steps?last=-5`, 400, /^last must be between 1 and 1000/],
      [`${tp(demo.thread)}/steps?last=2.5`, 400, /^last must be an integer/],
      [`${tp(demo.thread)}/steps?from=x&last=3`, 400, /^from must be an integer/],
      [`${tp(demo.thread)}/steps?to=-1`, 400, /^to must be between 0 and/],
      [`${tp(demo.thread)}/steps?from=8&to=3`, 400, /^from \(8\) must not be greater than to \(3\)$/],
      [`${tp(demo.thread)}/events?after=abc`, 400, /after must be an integer/],
      [`${tp(demo.thread)}/events?limit=0`, 400, /limit must be between/],
      [`${tp(demo.thread)}/events?type=nonsense`, 400, /unknown event type "nonsense"/],
      [`${tp(demo.thread)}/events/00000000-0000-0000-0000-000000000000`, 404, /no event/],
      ["/api/threads/%E0%A4%A", 400, /malformed thread id/],
      ["/api/threads/a%20b", 400, /invalid thread id/],
      ["/api/threads/x/unknown", 404, /no such API route/],
      ["/api/whatever", 404, /no such API route/],
      ["/nowhere", 404, /not found/],
    ];
    for (const [p, code, msg] of cases) {
      const { status, body, headers } = await get(viewer, p);
      expect([p, status]).toEqual([p, code]);
      expect(headers.get("content-type")).toMatch(/^application\/json/);
      expect(body.error).toMatch(msg);
      expect(JSON.stringify(body)).not.toMatch(/\n\s+at |\.ts:\d+/);
    }
  });

  it("is read-only: other methods get 405", async () => {
    for (const method of ["POST", "PUT", "DELETE", "PATCH"]) {
      const r = await raw(viewer, "/api/threads", { method });
      expect(r.status).toBe(405);
      expect(r.headers.allow).toBe("GET");
    }
  });

  it("refuses a foreign Host header (DNS rebinding) and accepts loopback names", async () => {
    const port = new URL(viewer.url).port;
    const evil = await raw(viewer, "/api/threads", { host: `evil.example:${port}` });
    expect(evil.status).toBe(403);
    expect(evil.body).not.toContain(demo.thread);
    expect((await raw(viewer, "/", { host: `attacker.test` })).status).toBe(403);
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`]) {
      expect((await raw(viewer, "/api/threads", { host })).status).toBe(200);
    }
  });

  it("lifts the Host guard only when the host was chosen explicitly", async () => {
    const open = await startViewer({ workspace: demo.workspace, host: "127.0.0.1" });
    try {
      expect((await raw(open, "/api/threads", { host: "viewer.lan:1234" })).status).toBe(200);
    } finally {
      await open.close();
    }
  });

  it("sends a strict Content-Security-Policy and the page's assets", async () => {
    const page = await get(viewer, "/");
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    const csp = page.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval/);
    expect(page.headers.get("x-content-type-options")).toBe("nosniff");
    expect(page.body).toContain('src="/app.js"');
    expect(page.body).not.toMatch(/<script>|\son\w+=/);
    for (const [p, type] of [
      ["/app.js", /javascript/],
      ["/style.css", /css/],
    ] as const) {
      const a = await get(viewer, p);
      expect(a.status).toBe(200);
      expect(a.headers.get("content-type")).toMatch(type);
      expect(a.headers.get("content-security-policy")).toBe(csp);
    }
    const apiRes = await get(viewer, "/api/threads");
    expect(apiRes.headers.get("content-security-policy")).toBe(csp);
    // The page's ES modules: each served as JavaScript under the same policy, and everything they
    // import is served (a module the server does not know would leave the page blank).
    const modules = fs.readdirSync(WEB_APP_DIR).filter((f) => f.endsWith(".js"));
    expect(modules).toContain("dom.js");
    const scripts = [path.join(WEB_APP_DIR, "../app.js"), ...modules.map((f) => path.join(WEB_APP_DIR, f))];
    for (const file of scripts) {
      const route = file.endsWith("/web/app.js") ? "/app.js" : `/app/${path.basename(file)}`;
      const a = await get(viewer, route);
      expect(a.status, route).toBe(200);
      expect(a.headers.get("content-type"), route).toMatch(/javascript/);
      expect(a.headers.get("content-security-policy")).toBe(csp);
      const text = fs.readFileSync(file, "utf8");
      expect(a.body).toBe(text);
      for (const [, spec] of text.matchAll(/^import .* from "(\.[^"]+)";$/gm)) {
        const target = new URL(spec!, `http://x${route}`).pathname;
        expect((await get(viewer, target)).status, `${route} imports ${target}`).toBe(200);
      }
      // Type-checked by the project's tsc.
      expect(text.startsWith("// @ts-check\n"), `${route} starts with // @ts-check`).toBe(true);
      // The page builds text nodes only: no HTML sinks in its script.
      expect(text, route).not.toMatch(/\.(inner|outer)HTML\s*=|insertAdjacentHTML|document\.write|\beval\(|new Function/);
    }
    expect((await get(viewer, "/app/nope.js")).status).toBe(404);
  });

  it("never writes to the state database", async () => {
    const dbPath = path.join(demo.workspace, ".ledgerloop", "state.db");
    const digest = (f: string) => (fs.existsSync(f) ? createHash("sha256").update(fs.readFileSync(f)).digest("hex") : "absent");
    const before = [digest(dbPath), digest(`${dbPath}-wal`)];
    for (const p of [
      "/api/threads",
      tp(demo.thread),
      `${tp(demo.thread)}/steps`,
      `${tp(demo.thread)}/context/3`,
      `${tp(demo.thread)}/events`,
      `${tp(demo.thread)}/checkpoints`,
    ]) {
      expect((await get(viewer, p)).status).toBe(200);
    }
    expect([digest(dbPath), digest(`${dbPath}-wal`)]).toEqual(before);
  });

  it("is not blocked by a run holding the write lock", async () => {
    const dbPath = path.join(demo.workspace, ".ledgerloop", "state.db");
    const writer = new Database(dbPath);
    writer.pragma("busy_timeout = 0");
    writer.prepare("BEGIN IMMEDIATE").run();
    try {
      const t0 = Date.now();
      for (const p of [
        "/api/threads",
        tp(demo.thread),
        `${tp(demo.thread)}/steps`,
        `${tp(demo.thread)}/context/3`,
        `${tp(demo.thread)}/events`,
        `${tp(demo.thread)}/checkpoints`,
      ]) {
        expect((await get(viewer, p)).status).toBe(200);
      }
      expect(Date.now() - t0).toBeLessThan(5000);
    } finally {
      writer.prepare("ROLLBACK").run();
      writer.close();
    }
  });

  it("serves an empty list for a workspace without runs", async () => {
    const { workspace } = smallWorkspace();
    const v = await startViewer({ workspace });
    try {
      expect((await get(v, "/api/threads")).body).toEqual({ workspace: fs.realpathSync(workspace), backend: "sqlite", threads: [] });
      expect((await get(v, "/api/threads/anything")).status).toBe(404);
      expect(fs.existsSync(path.join(workspace, ".ledgerloop"))).toBe(false);
    } finally {
      await v.close();
    }
  });
});

describe("run viewer API on a run whose model reports usage", () => {
  it("gives the run's spend, its spend per subtask, and each step's", async () => {
    const { workspace, scripts } = smallWorkspace();
    const thread = await pricedRun(workspace, scripts);
    const v = await startViewer({ workspace });
    try {
      // Each call: 200 fresh input at $1, 800 cached at $0.5, 200 output at $2 per million = $0.001.
      const d = (await get(v, tp(thread))).body;
      expect(d.usage).toMatchObject({ modelCalls: 3, inputTokens: 3000, cachedInputTokens: 2400, outputTokens: 600 });
      expect(d.usage.costUsd).toBeCloseTo(0.003, 10);
      expect(d.usage.bySubtask.map((s: { subtask: string | null; calls: number; tokens: number }) => [s.subtask, s.calls, s.tokens])).toEqual([
        [null, 1, 1200],
        ["greet", 2, 2400],
      ]);
      const steps = (await get(v, `${tp(thread)}/steps`)).body.steps as Array<{ step: number; spend: { tokens: number; costUsd: number } | null }>;
      expect(steps.map((s) => s.step)).toEqual([1, 2]);
      for (const s of steps) {
        expect(s.spend?.tokens).toBe(1200);
        expect(s.spend?.costUsd).toBeCloseTo(0.001, 10);
      }
    } finally {
      await v.close();
    }
  });
});

describe("run viewer API on a run with a background process", () => {
  it("lists the run's processes with their last state and shows each start, ready and stop between the steps", async () => {
    const { workspace, scripts } = smallWorkspace();
    const thread = await processRun(workspace, scripts);
    const v = await startViewer({ workspace });
    try {
      const d = (await get(v, tp(thread))).body;
      expect(d.processes).toEqual([expect.objectContaining({ name: "api", command: "node server.js", status: "stopped" })]);
      const steps = (await get(v, `${tp(thread)}/steps`)).body.steps as Array<{
        step: number;
        after: Array<{ type: string; payload: { kind: string; name: string } }>;
      }>;
      const kinds = steps.flatMap((s) => s.after.filter((i) => i.type === "process").map((i) => `${s.step}:${i.payload.kind}:${i.payload.name}`));
      expect(kinds).toEqual(expect.arrayContaining(["1:start:api", "1:ready:api", "3:stop:api"]));
    } finally {
      await v.close();
    }
  }, 180_000);
});

describe("run viewer API on hostile and paused runs", () => {
  it("returns ledger text verbatim as JSON data (escaping is the page's job)", async () => {
    const { body } = await get(other.viewer, `${tp(other.hostile)}/steps`);
    const fb = body.steps[0].actions[0].feedback;
    expect(fb.stdout.text).toContain(HOSTILE_ECHO);
    expect((await get(other.viewer, tp(other.hostile))).body.decisions[0].text).toBe(HOSTILE_DECISION);
  });

  it("shows a run paused for approval as awaiting_approval, with the command it waits on", async () => {
    const list = await get(other.viewer, "/api/threads");
    expect(list.body.threads.map((t: { thread: string }) => t.thread).sort()).toEqual([other.hostile, other.paused].sort());
    const { body } = await get(other.viewer, tp(other.paused));
    expect(body.status).toBe("awaiting_approval");
    expect(body.awaitingApproval).toMatchObject({ command: "frobnicate --now", tool: "run_command" });
    const steps = await get(other.viewer, `${tp(other.paused)}/steps`);
    expect(steps.body.steps[0]).toMatchObject({ outcome: "running", actions: [{ tool: "run_command", feedback: null }] });
    const cps = await get(other.viewer, `${tp(other.paused)}/checkpoints`);
    expect(cps.body.checkpoints[0].interrupted).toBe(true);
  });
});

describe("ledgerloop web", () => {
  it("handleWeb serves the workspace on a free loopback port and prints the URL on stderr", async () => {
    const lines: string[] = [];
    const orig = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((chunk: string | Uint8Array) => {
      lines.push(String(chunk));
      return true;
    }) as typeof process.stderr.write;
    let v: Viewer | undefined;
    try {
      v = await handleWeb({ workspace: demo.workspace });
    } finally {
      process.stderr.write = orig;
    }
    try {
      expect(v.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
      expect(lines.join("")).toContain(v.url);
      expect((await get(v, "/api/threads")).body.threads).toHaveLength(1);
    } finally {
      await v.close();
    }
  });

  it("says so when the port is taken", async () => {
    const port = Number(new URL(viewer.url).port);
    await expect(startViewer({ workspace: demo.workspace, port })).rejects.toThrow(`127.0.0.1:${port} is already in use`);
  });

  it("refuses a workspace that does not exist", async () => {
    await expect(handleWeb({ workspace: path.join(demo.workspace, "nope") })).rejects.toThrow(/does not exist/);
  });
});
