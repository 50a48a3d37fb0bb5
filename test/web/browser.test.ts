import fs from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser, Page } from "playwright-core";
import { startViewer, type Viewer } from "../../src/web/server.js";
import { cleanupTemp } from "../helpers/workspace.js";
import { demoRun, HOSTILE_DECISION, HOSTILE_ECHO, HOSTILE_GOAL, hostileRun, pausedRun, slowRun, smallWorkspace } from "./fixtures.js";

const CHROMIUM = process.env.LEDGERLOOP_CHROMIUM ?? "/usr/bin/chromium";
const hasChromium = fs.existsSync(CHROMIUM);
if (!hasChromium) console.warn(`skipping the run viewer's browser tests: no Chromium at ${CHROMIUM} (apt-get install chromium)`);

const SCREENSHOT = "/tmp/ledgerloop-web-demo.png";

describe.skipIf(!hasChromium)(`run viewer in Chromium (${CHROMIUM})`, () => {
  let browser: Browser;
  let demo: { workspace: string; thread: string; viewer: Viewer };
  let other: { hostile: string; paused: string; viewer: Viewer };
  const viewers: Viewer[] = [];

  beforeAll(async () => {
    const { chromium } = await import("playwright-core");
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run", "--disable-quic", "--disable-sync"],
    });
    const d = await demoRun();
    demo = { ...d, viewer: await startViewer({ workspace: d.workspace }) };
    const { workspace, scripts } = smallWorkspace();
    const hostile = await hostileRun(workspace, scripts);
    const paused = await pausedRun(workspace, scripts);
    other = { hostile, paused, viewer: await startViewer({ workspace }) };
    viewers.push(demo.viewer, other.viewer);
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    for (const v of viewers) await v.close();
    cleanupTemp();
  });

  /** A page that fails the test on any script error or CSP violation. */
  async function open(url: string): Promise<{ page: Page; problems: string[] }> {
    const page = await browser.newPage({ viewport: { width: 1480, height: 940 } });
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
      expect(visibleText).toContain("orders service answers /health");
      expect(visibleText).toContain("dashboard aggregates the services' health");
      expect(visibleText).toMatch(/[\d,]+ tokens\s+of [\d,]+/);
      expect(page.url()).toMatch(/#\/t\/.+\/s\/7$/);

      await page.screenshot({ path: SCREENSHOT });

      // Another step's context from the panel's own link; Escape closes it.
      await panel.locator("details.section summary", { hasText: "recent" }).click();
      await panel.locator("a.source", { hasText: "step 6" }).click();
      await panel.locator(".panel-title", { hasText: "Step 6 · what the model saw" }).waitFor();
      await page.keyboard.press("Escape");
      await panel.waitFor({ state: "hidden" });

      // The raw ledger and the checkpoints.
      await page.locator(".tab", { hasText: "Ledger" }).click();
      await page.locator("table.ledger tbody tr.ledger-row").first().waitFor();
      expect(await page.locator("table.ledger tbody tr.ledger-row").count()).toBeGreaterThan(50);
      await page.locator(".tab", { hasText: "Checkpoints" }).click();
      await page.locator("table.checkpoints tbody tr").first().waitFor();
      expect(await page.locator("table.checkpoints tbody tr").count()).toBeGreaterThan(10);
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
      expect(await page.locator("#thread-header .pill").first().textContent()).toBe("interrupted");
      expect(await page.locator("#step-1 .action").getAttribute("data-status")).toBe("waiting");
      expect(await page.locator("#step-1 .action .status").textContent()).toBe("awaiting approval");
      expect(problems).toEqual([]);
    } finally {
      await page.close();
    }
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
