import fs from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser, Page } from "playwright-core";
import { detectCgroups } from "../../src/sandbox/limits.js";
import { startViewer, type Viewer } from "../../src/web/server.js";
import { cleanupTemp } from "../helpers/workspace.js";
import {
  demoRun,
  HOSTILE_DECISION,
  HOSTILE_ECHO,
  HOSTILE_GOAL,
  hostileRun,
  longRun,
  pausedRun,
  pricedRun,
  processRun,
  slowRun,
  smallWorkspace,
  stoppedRun,
} from "./fixtures.js";

const CHROMIUM = process.env.LEDGERLOOP_CHROMIUM ?? "/usr/bin/chromium";
const hasChromium = fs.existsSync(CHROMIUM);
if (!hasChromium) console.warn(`skipping the run viewer's browser tests: no Chromium at ${CHROMIUM} (apt-get install chromium)`);

const SCREENSHOT = "/tmp/ledgerloop-web-demo.png";
/** Steps of the long run; the page draws the last 100 at first and 100 more per "load earlier". */
const LONG_STEPS = 250;

describe.skipIf(!hasChromium)(`run viewer in Chromium (${CHROMIUM})`, () => {
  let browser: Browser;
  let demo: { workspace: string; thread: string; viewer: Viewer };
  let other: { hostile: string; paused: string; viewer: Viewer };
  let long: { thread: string; viewer: Viewer };
  const viewers: Viewer[] = [];

  beforeAll(async () => {
    const { chromium } = await import("playwright-core");
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
        "--disable-quic",
        "--disable-sync",
      ],
    });
    const d = await demoRun();
    demo = { ...d, viewer: await startViewer({ workspace: d.workspace }) };
    const { workspace, scripts } = smallWorkspace();
    const hostile = await hostileRun(workspace, scripts);
    const paused = await pausedRun(workspace, scripts);
    other = { hostile, paused, viewer: await startViewer({ workspace }) };
    const l = smallWorkspace();
    long = { thread: await longRun(l.workspace, l.scripts, LONG_STEPS), viewer: await startViewer({ workspace: l.workspace }) };
    viewers.push(demo.viewer, other.viewer, long.viewer);
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    for (const v of viewers) await v.close();
    cleanupTemp();
  });

  /**
   * Makes a run in a new small workspace (`make` returns its thread), serves that workspace, opens the
   * run's page and hands it to `check`; the page fails the test on any script error.
   */
  async function onNewRun(make: (workspace: string, scripts: string) => Promise<string>, check: (page: Page) => Promise<void>): Promise<void> {
    const { workspace, scripts } = smallWorkspace();
    const thread = await make(workspace, scripts);
    const v = await startViewer({ workspace });
    viewers.push(v);
    const { page, problems } = await open(`${v.url}#/t/${encodeURIComponent(thread)}`);
    try {
      await check(page);
      expect(problems).toEqual([]);
    } finally {
      await page.close();
    }
  }

  /** A page that fails the test on any script error or CSP violation. */
  async function open(url: string, beforeLoad?: (page: Page) => void): Promise<{ page: Page; problems: string[] }> {
    const page = await browser.newPage({ viewport: { width: 1480, height: 940 } });
    beforeLoad?.(page);
    const problems: string[] = [];
    page.on("pageerror", (e) => problems.push(`pageerror: ${e.message}`));
    page.on("console", (m) => {
      if (m.type() === "error") problems.push(`console: ${m.text()}`);
    });
    await page.goto(url);
    return { page, problems };
  }

  it("lists the demo run; a run shows its 10 steps and its plan; a step shows what the model saw", async () => {
    const { page, problems } = await open(demo.viewer.url);
    try {
      const item = page.locator(`.thread-item[data-thread="${demo.thread}"]`);
      await item.waitFor();
      await expect(item.textContent()).resolves.toMatch(/finished[\s\S]*GET \/health/);
      await item.click();

      await page.locator(".step").nth(9).waitFor();
      expect(await page.locator(".step").count()).toBe(10);
      // A short run is drawn whole: nothing earlier to load, and the task's plan comes first.
      expect(await page.locator("#load-earlier").count()).toBe(0);
      expect(await page.locator("#timeline > li").first().getAttribute("class")).toBe("interludes before");
      expect(await page.locator("#thread-header .pill").first().textContent()).toBe("finished");
      expect(await page.locator("#plan .subtask").count()).toBe(4);
      expect(await page.locator('#plan .subtask[data-status="completed"]').count()).toBe(4);
      expect(await page.locator(".decision-list li").textContent()).toMatch(/step 3.*Health endpoints answer/);

      // Step 6: the failing test run, in red, with its counts and the failing tests' names.
      const s6 = page.locator("#step-6");
      expect(await s6.getAttribute("class")).toContain("outcome-error");
      expect(await s6.locator(".action").getAttribute("data-status")).toBe("error");
      expect(await s6.locator(".action .tests").textContent()).toBe("2 passed2 failed");
      expect(await s6.locator(".failing-test").allTextContents()).toEqual(["orders service answers /health", "dashboard aggregates the services' health"]);
      // It ended by itself (no stop named); what it used shows where cgroups measured it.
      expect(await s6.locator(".stopped").count()).toBe(0);
      if (detectCgroups().parents.cpuacct && detectCgroups().parents.memory)
        expect(await s6.locator(".usage").textContent()).toMatch(/^cpu \d[\d.]* (ms|s) · [\d.]+ (KiB|MiB) peak$/);
      // Step 7: the sed command and the file it changed; its stdout opens on demand.
      const s7 = page.locator("#step-7");
      expect(await s7.locator(".tool").textContent()).toBe("run_command");
      expect(await s7.locator(".file").allTextContents()).toEqual(["~ services/orders/server.js"]);
      await s7.locator("details.out summary", { hasText: "stdout" }).click();
      await expect(s7.locator("details.out[open] pre").first().textContent()).resolves.toContain("/health");

      await s7.locator(".step-head").click();
      const panel = page.locator("#panel");
      await panel.locator(".sections").waitFor();
      expect(await panel.isVisible()).toBe(true);
      expect(await panel.locator(".panel-title").textContent()).toBe("Step 7 · what the model saw");
      expect(await panel.locator(".section-name").allTextContents()).toEqual(expect.arrayContaining(["system", "goal", "plan", "recent"]));
      const visibleText = await panel.innerText();
      expect(visibleText).toMatch(/[\d,]+ tokens\s+of [\d,]+/);
      expect(page.url()).toMatch(/#\/t\/.+\/s\/7$/);

      await page.screenshot({ path: SCREENSHOT });

      // Another step's context from the panel's own link; Escape closes it. The failing tests of
      // step 6 reached step 7's prompt in the recent turns (the cache layout keeps them in the log).
      await panel.locator("details.section summary", { hasText: "recent" }).click();
      const recentText = await panel.innerText();
      expect(recentText).toContain("orders service answers /health");
      expect(recentText).toContain("dashboard aggregates the services' health");
      await panel.locator("a.source", { hasText: "step 6" }).click();
      await panel.locator(".panel-title", { hasText: "Step 6 · what the model saw" }).waitFor();
      await page.keyboard.press("Escape");
      await panel.waitFor({ state: "hidden" });

      // The raw ledger and the checkpoints.
      await page.locator(".tab", { hasText: "Ledger" }).click();
      await page.locator("table.ledger tbody tr.ledger-row").first().waitFor();
      expect(await page.locator("table.ledger tbody tr.ledger-row").count()).toBeGreaterThan(50);
      // All events fit one page: no "load more", and no stray text where it would be (Element.append
      // writes a left-out null as "null"; the type check of app/*.js found that).
      expect(await page.locator("#tab-body").evaluate((el) => [...el.childNodes].filter((n) => n.nodeType === 3).map((n) => n.textContent))).toEqual([]);
      await page.locator(".tab", { hasText: "Checkpoints" }).click();
      await page.locator("table.checkpoints tbody tr").first().waitFor();
      expect(await page.locator("table.checkpoints tbody tr").count()).toBeGreaterThan(10);
      expect(problems).toEqual([]);
    } finally {
      await page.close();
    }
  });

  /** The step numbers drawn in the timeline, top to bottom. */
  const drawnSteps = (page: Page): Promise<number[]> =>
    page.evaluate(`[...document.querySelectorAll("#timeline > li.step")].map((li) => Number(li.dataset.step))`) as Promise<number[]>;
  const selectedSteps = (page: Page): Promise<string[]> =>
    page.evaluate(`[...document.querySelectorAll(".step.selected")].map((li) => li.id)`) as Promise<string[]>;
  const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
  const topOf = (page: Page, sel: string): Promise<number> =>
    page.evaluate(`document.querySelector(${JSON.stringify(sel)}).getBoundingClientRect().top`) as Promise<number>;

  it("draws a long run's last steps first and loads earlier ones above, keeping the place and the selection", async () => {
    const stepRequests: string[] = [];
    const { page, problems } = await open(`${long.viewer.url}#/t/${encodeURIComponent(long.thread)}`, (p) =>
      p.on("request", (r) => {
        const u = new URL(r.url());
        if (u.pathname.endsWith("/steps")) stepRequests.push(u.search);
      }),
    );
    try {
      await page.locator(`#step-${LONG_STEPS}`).waitFor();
      expect(await drawnSteps(page)).toEqual(range(151, 250));
      expect(await page.locator("#thread-header .pill").first().textContent()).toBe("finished");
      const control = page.locator("#load-earlier");
      expect(await control.innerText()).toMatch(/Load 100 earlier steps[\s\S]*100 steps of 250 shown; 150 earlier not loaded/);
      expect(await page.locator("#timeline > li.before").count()).toBe(0);
      expect(await page.locator("#step-250 .interlude.il-run_status").innerText()).toMatch(/Run finished after 250 steps/);

      // Select a step of the first page: its context opens.
      await page.locator("#step-200 .step-head").click();
      const panel = page.locator("#panel");
      await panel.locator(".panel-title", { hasText: "Step 200 · what the model saw" }).waitFor();
      await panel.locator(".sections").waitFor();
      expect(page.url()).toMatch(/\/s\/200$/);

      // Load the page before: drawn above, in order, with step 151 left where the reader saw it.
      await page.evaluate(`document.getElementById("main").scrollTop = 0`);
      const before = await topOf(page, "#step-151");
      await control.locator("button").click();
      await page.locator("#step-51").waitFor();
      expect(await drawnSteps(page)).toEqual(range(51, 250));
      expect(Math.abs((await topOf(page, "#step-151")) - before)).toBeLessThanOrEqual(1);
      expect(await page.evaluate(`document.getElementById("main").scrollTop`)).toBeGreaterThan(0);
      expect(await control.innerText()).toMatch(/Load 50 earlier steps[\s\S]*200 steps of 250 shown; 50 earlier not loaded/);
      // The selection and its panel stayed.
      expect(await selectedSteps(page)).toEqual(["step-200"]);
      expect(await panel.locator(".panel-title").textContent()).toBe("Step 200 · what the model saw");

      // A step of the loaded page is selectable like any other.
      await page.locator("#step-60 .step-head").click();
      await panel.locator(".panel-title", { hasText: "Step 60 · what the model saw" }).waitFor();
      expect(await selectedSteps(page)).toEqual(["step-60"]);
      expect(await page.locator("#step-60 .action .action-args").textContent()).toBe("README.md");
      expect(await page.locator("#step-60 .model-text").textContent()).toBe("Reading the readme, pass 60.");

      // The last page reaches step 1: the control gives way to what came before it (the plan).
      await control.locator("button").click();
      await page.locator("#step-1").waitFor();
      expect(await drawnSteps(page)).toEqual(range(1, 250));
      expect(await page.locator("#load-earlier").count()).toBe(0);
      expect(await page.locator("#timeline > li").first().getAttribute("class")).toBe("interludes before");
      expect(await page.locator("#step-60").getAttribute("class")).toContain("selected");

      expect(stepRequests).toEqual(["?last=100", "?to=150&last=100", "?to=50&last=100"]);
      expect(problems).toEqual([]);
    } finally {
      await page.close();
    }
  });

  it("opens a link to a step before the last page by loading the steps down to it", async () => {
    const { page, problems } = await open(`${long.viewer.url}#/t/${encodeURIComponent(long.thread)}/s/20`);
    try {
      await page.locator("#panel .panel-title", { hasText: "Step 20 · what the model saw" }).waitFor();
      await page.locator("#step-20").waitFor();
      expect(await drawnSteps(page)).toEqual(range(20, 250));
      expect(await page.locator("#step-20").getAttribute("class")).toContain("selected");
      expect(await page.locator("#load-earlier").innerText()).toMatch(/Load 19 earlier steps/);
      await page.locator("#load-earlier button").click();
      await page.locator("#step-1").waitFor();
      expect(await drawnSteps(page)).toEqual(range(1, 250));
      expect(problems).toEqual([]);
    } finally {
      await page.close();
    }
  });

  it("shows markup from the ledger as text and never runs it", async () => {
    const { page, problems } = await open(`${other.viewer.url}#/t/${encodeURIComponent(other.hostile)}`);
    try {
      await page.locator(".step").nth(2).waitFor();
      // Open every output so that all recorded text is rendered.
      await page.evaluate(`document.querySelectorAll("details").forEach((d) => (d.open = true))`);
      const main = await page.locator("#main").innerText();
      expect(main).toContain(HOSTILE_ECHO);
      expect(main).toContain(HOSTILE_DECISION);
      expect(main).toContain(HOSTILE_GOAL);
      expect(main).toContain("Printing <em>markup</em>");
      await page.locator("#step-2 .step-head").click();
      await page.locator("#panel .sections").waitFor();
      await page.evaluate(`document.querySelectorAll("#panel details").forEach((d) => (d.open = true))`);
      expect(await page.locator("#panel").innerText()).toContain(HOSTILE_ECHO);
      await page.locator(".tab", { hasText: "Ledger" }).click();
      await page.locator("table.ledger tbody tr.ledger-row").first().waitFor();
      await page.evaluate(`document.querySelectorAll("tr.ledger-detail").forEach((r) => (r.hidden = false))`);
      await page.locator(".thread-item").first().hover();
      // Give any injected handler every chance to fire.
      await page.waitForTimeout(300);
      // (Browser-side code as strings: the project's TypeScript has no DOM types.)
      const verdict = await page.evaluate(`({
        pwned: window.__pwned,
        imgs: document.querySelectorAll("img").length,
        scripts: [...document.querySelectorAll("script")].map((s) => s.getAttribute("src")),
        bold: document.querySelectorAll("#main b, #main em").length,
      })`);
      expect(verdict).toEqual({ pwned: undefined, imgs: 0, scripts: ["/app.js"], bold: 0 });
      expect(problems).toEqual([]);
    } finally {
      await page.close();
    }
  });

  it("shows a run paused for approval with the command it waits on", async () => {
    const { page, problems } = await open(`${other.viewer.url}#/t/${encodeURIComponent(other.paused)}`);
    try {
      await page.locator(".approval-wait").waitFor();
      expect(await page.locator(".approval-wait").innerText()).toMatch(/Waiting for approval: frobnicate --now/);
      expect(await page.locator("#thread-header .pill").first().textContent()).toBe("awaiting approval");
      expect(await page.locator("#step-1 .action").getAttribute("data-status")).toBe("waiting");
      expect(await page.locator("#step-1 .action .status").textContent()).toBe("awaiting approval");
      expect(problems).toEqual([]);
    } finally {
      await page.close();
    }
  });

  it("shows what the model calls cost: the run, each subtask and each step", async () => {
    await onNewRun(pricedRun, async (page) => {
      await page.locator("#step-2").waitFor();
      const facts = await page.locator("#thread-header .facts").innerText();
      expect(facts).toMatch(/model spend\s+3.60k tok · \$0\.0030 in 3 calls/i);
      expect(await page.locator("#plan .sub-cost").innerText()).toBe("2.40k tok · $0.0020");
      expect(await page.locator("#step-1 .step-cost").innerText()).toBe("1.20k tok · $0.0010");
      expect(await page.locator("#step-2 .step-cost").innerText()).toBe("1.20k tok · $0.0010");
    });
  });

  it("says what stopped a command that did not end by itself, beside its status", async () => {
    await onNewRun(stoppedRun, async (page) => {
      await page.locator("#step-2").waitFor();
      const action = page.locator("#step-1 .action");
      expect(await action.locator(".status").textContent()).toBe("error · timeout");
      expect(await action.locator(".stopped").textContent()).toBe("timed out");
      expect(await page.locator("#step-2 .stopped").count()).toBe(0);
      // The header counts the one command; what it used shows where cgroups measured it.
      const cg = detectCgroups().parents;
      expect(await page.locator("#thread-header .facts").innerText()).toMatch(
        cg.cpuacct && cg.memory ? /commands\s+1 · cpu \d[\d.]* (ms|s) · peak [\d.]+ (KiB|MiB) \(step 1\)/i : /commands\s+1(\s|$)/i,
      );
    });
  });

  it("shows a run's background processes: their last state in the header, each start, ready and stop in the timeline", async () => {
    await onNewRun(processRun, async (page) => {
      await page.locator("#step-3").waitFor();
      expect(await page.locator("#thread-header .facts").innerText()).toMatch(/processes\s+api stopped/i);
      const titles = await page.locator(".il-process .il-title").allInnerTexts();
      expect(titles.map((t) => t.replace(/\s+\d\d:\d\d:\d\d$/, "").trim())).toEqual(
        expect.arrayContaining([
          expect.stringMatching(/^Process api started/),
          expect.stringMatching(/^Process api ready in \d+ ms/),
          expect.stringMatching(/^Process api stopped/),
        ]),
      );
    });
  });

  it("follows a running run: new steps appear and the status turns finished without a reload", async () => {
    const { workspace, scripts } = smallWorkspace();
    const viewer = await startViewer({ workspace });
    viewers.push(viewer);
    const run = slowRun(workspace, scripts, 5);
    // Wait until the run has recorded its first step, then watch it.
    let thread: string | undefined;
    for (let i = 0; i < 200 && !thread; i++) {
      const r = (await (await fetch(new URL("/api/threads", viewer.url))).json()) as { threads: Array<{ thread: string; steps: number | null }> };
      thread = r.threads.find((t) => (t.steps ?? 0) >= 1)?.thread;
      if (!thread) await new Promise((res) => setTimeout(res, 100));
    }
    expect(thread).toBeDefined();
    const { page, problems } = await open(`${viewer.url}#/t/${encodeURIComponent(thread!)}`);
    try {
      await page.locator("#thread-header").waitFor();
      expect(await page.locator("#thread-header .pill").first().textContent()).toBe("running");
      expect(await page.locator("#live").isVisible()).toBe(true);
      await page.evaluate(`window.__samePage = 1`);
      const requests: string[] = [];
      page.on("request", (r) => requests.push(new URL(r.url()).pathname + new URL(r.url()).search));
      await run;
      await page.locator("#thread-header .pill", { hasText: /^finished$/ }).waitFor({ timeout: 20_000 });
      expect(await page.locator(".step").count()).toBe(4);
      expect(await page.locator("#step-3 .action-args").textContent()).toBe("echo after the wait");
      expect(await page.evaluate(`window.__samePage`)).toBe(1);
      // Polls asked only for events after the last one seen, and refetched steps from the last one shown.
      expect(requests.some((r) => /\/events\?after=[1-9]\d*&limit=/.test(r))).toBe(true);
      expect(requests.filter((r) => /\/steps$/.test(r))).toEqual([]);
      expect(await page.locator("#live").isVisible()).toBe(false);
      expect(problems).toEqual([]);
    } finally {
      await page.close();
    }
  }, 60_000);
});
