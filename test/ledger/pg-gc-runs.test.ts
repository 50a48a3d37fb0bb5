import { expect, it } from "vitest";
import { mayBeRunning } from "../../src/ledger/run-status.js";

// Which runs `gc --state` leaves whole (no database needed: the decision is on the run's summary).
const now = Date.parse("2026-12-02T12:00:00Z");
const hoursAgo = (h: number) => new Date(now - h * 3_600_000).toISOString();

it("leaves running, queued and unknown runs whole, and prunes the rest", () => {
  for (const status of ["running", "queued", "unknown"] as const) expect(mayBeRunning({ status, lastActivity: hoursAgo(100) }, now)).toBe(true);
  for (const status of ["finished", "failed", "interrupted", "awaiting_approval", "rewound", "forked", "max_steps", "rate_limited"] as const) {
    expect(mayBeRunning({ status, lastActivity: hoursAgo(0) }, now)).toBe(false);
  }
});

it("with a stale limit, prunes an unknown run only once it has been silent longer than that; never a held or queued one", () => {
  const day = 24 * 3_600_000;
  expect(mayBeRunning({ status: "unknown", lastActivity: hoursAgo(25) }, now, day)).toBe(false);
  expect(mayBeRunning({ status: "unknown", lastActivity: hoursAgo(23) }, now, day)).toBe(true);
  // No activity recorded, or a time that does not parse: it may still be running.
  expect(mayBeRunning({ status: "unknown", lastActivity: null }, now, day)).toBe(true);
  expect(mayBeRunning({ status: "unknown", lastActivity: "yesterday" }, now, day)).toBe(true);
  expect(mayBeRunning({ status: "running", lastActivity: hoursAgo(500) }, now, day)).toBe(true);
  expect(mayBeRunning({ status: "queued", lastActivity: hoursAgo(500) }, now, day)).toBe(true);
});
