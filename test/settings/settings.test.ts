import { z } from "zod";
import { describe, expect, it } from "vitest";
import { RunContext, RunSettings, runContextOf } from "../../src/settings.js";
import { RunContext as RunContextFromState } from "../../src/state.js";

// One settings schema; the graph context is derived from it. These pin the derivation: same checks,
// same descriptions, no defaults in the context, and the context a run passes has exactly its keys.

const contextKeys = Object.keys(RunContext.shape);

describe("the run settings and the graph context derived from them", () => {
  it("the context is the per-run part of the settings, in Studio's form order", () => {
    expect(RunContextFromState).toBe(RunContext);
    for (const k of contextKeys) expect(Object.keys(RunSettings.shape)).toContain(k);
    expect(contextKeys).toEqual([
      "workspace",
      "stateDir",
      "stateUrl",
      "model",
      "summaryModel",
      "maxSteps",
      "toolCallFormat",
      "budgetTokens",
      "failureStreakLimit",
      "proseStreakLimit",
      "repeatLimit",
      "summarizeThresholdTokens",
      "sandbox",
      "approve",
      "allowNetwork",
      "retrieval",
      "vectors",
      "embedder",
      "history",
      "promptLayout",
      "maxCostUsd",
      "maxTokens",
    ]);
  });

  it("budgetTokens has one bound, at least 1000, in the settings and the context alike", () => {
    const base = { workspace: "/w" };
    for (const [v, ok] of [
      [999, false],
      [1, false],
      [1000, true],
      [120_000, true],
      [1500.5, false],
    ] as const) {
      expect(RunSettings.safeParse({ ...base, budgetTokens: v }).success, `settings ${v}`).toBe(ok);
      expect(RunContext.safeParse({ budgetTokens: v }).success, `context ${v}`).toBe(ok);
    }
  });

  it("each context field accepts and refuses what its setting does, carries its description, and has no default", () => {
    const settingsJson = z.toJSONSchema(RunSettings) as { properties: Record<string, { description?: string; default?: unknown }> };
    const contextJson = z.toJSONSchema(RunContext) as { properties: Record<string, { description?: string; default?: unknown }> };
    const probes: unknown[] = [0, -1, 1, 50, 100_001, 0.5, "", "x", "auto", "ask", "chroma", "cache", true, null, []];
    for (const k of contextKeys) {
      const setting = RunSettings.shape[k as keyof typeof RunSettings.shape] as z.ZodType;
      const field = RunContext.shape[k as keyof typeof RunContext.shape] as z.ZodType;
      for (const p of probes) expect(field.safeParse(p).success, `${k} = ${JSON.stringify(p)}`).toBe(setting.safeParse(p).success);
      expect(contextJson.properties[k]!.description).toBe(settingsJson.properties[k]!.description);
      expect(contextJson.properties[k]!.default).toBeUndefined();
    }
    // Unset stays unset: the runtime (or the server's environment) decides.
    expect(RunContext.parse({})).toEqual({});
  });

  it("the context a run passes to the graph holds every per-run setting and nothing else", () => {
    const settings = RunSettings.parse({ workspace: "/w", model: "openai:gpt-4o-mini", budgetTokens: 4000, allow: ["just"], maxCostUsd: 2 });
    const ctx = runContextOf(settings);
    expect(Object.keys(ctx).sort()).toEqual([...contextKeys].sort());
    expect(ctx).toMatchObject({ workspace: "/w", model: "openai:gpt-4o-mini", budgetTokens: 4000, maxSteps: 50, approve: "ask", maxCostUsd: 2 });
    expect(ctx).not.toHaveProperty("allow");
    expect(ctx).not.toHaveProperty("recentTurns");
    expect(RunContext.safeParse(ctx).success).toBe(true);
  });
});
