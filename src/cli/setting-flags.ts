import type { Command } from "commander";
import { Option } from "commander";
import { CliError } from "../errors.js";
import { flagOf } from "../settings-surface.js";
import type { RunSettings, RunSettingsInput } from "../settings.js";
import { SETTING_FLAG_SPECS, type SettingFlagSpec } from "./setting-flag-specs.js";

// CLI flags generated from the run settings' one declaration (settings.ts for type, default and
// description; settings-surface.ts for the flag name). The options' shape and help come from
// setting-flag-specs.ts, which `npm run docs` writes from those declarations (so `--help` loads
// commander only, not zod); each value is checked by the setting's own schema when the command
// runs, and a bad one is a usage error naming the flag.

type Key = keyof RunSettings;

const SPECS = new Map<Key, SettingFlagSpec>(SETTING_FLAG_SPECS.map((s) => [s.key as Key, s]));

/** The settings `run` takes as flags (workspace, state dir and state URL come from the shared options). */
export const RUN_FLAG_SETTINGS: readonly Key[] = SETTING_FLAG_SPECS.map((s) => s.key as Key).filter(
  (k) => flagOf(k) !== null && k !== "workspace" && k !== "stateDir" && k !== "stateUrl",
);

/** The settings about commands and their budget, shared by run, resume, submit and exec. */
export const SANDBOX_FLAG_SETTINGS: readonly Key[] = ["approve", "sandbox", "allowNetwork", "allow", "maxCostUsd", "maxTokens"];

/** The commander property a flag fills (`--max-cost` → `maxCost`). */
const propOf = (flag: string) => flag.replace(/^--/, "").replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());

/** The flag of `key` under `rename` (e.g. resume's `--approve-mode`). */
function flagFor(key: Key, rename: Partial<Record<Key, string>>): string {
  return rename[key] ?? flagOf(key)!;
}

/** Adds one option per setting in `keys`, as the setting's declaration describes it. */
export function settingOptions(
  cmd: Command,
  keys: readonly Key[],
  opts: { rename?: Partial<Record<Key, string>>; short?: Partial<Record<Key, string>> } = {},
): Command {
  for (const key of keys) {
    const spec = SPECS.get(key);
    if (!spec) throw new Error(`setting ${key} has no flag spec: run \`npm run docs\``);
    const flag = flagFor(key, opts.rename ?? {});
    const short = opts.short?.[key] ? `${opts.short[key]}, ` : "";
    const option = new Option(`${short}${flag}${spec.arg ? ` ${spec.arg}` : ""}`, spec.help);
    // A list flag may be given more than once; every value is kept (checked when the command runs).
    if (spec.kind === "list") option.argParser((raw: string, prev: string[] | undefined) => [...(prev ?? []), raw]);
    cmd.addOption(option);
  }
  return cmd;
}

/** What a value of `base` must be, in words (for a flag's error). */
function expected(z: typeof import("zod").z, base: import("zod").ZodType): string {
  if (base instanceof z.ZodEnum) {
    const o = base.options as string[];
    return o.length === 1 ? o[0]! : `${o.slice(0, -1).join(", ")} or ${o.at(-1)}`;
  }
  if (base instanceof z.ZodNumber) {
    const min = base.minValue ?? Number.NEGATIVE_INFINITY;
    const max = base.maxValue ?? Number.POSITIVE_INFINITY;
    const range = max < Number.MAX_SAFE_INTEGER ? ` up to ${max}` : "";
    if (base.isInt) return min <= 1 && min >= 0 ? `a positive integer${range}` : `a whole number from ${min}${range}`;
    return min === 0 ? `a positive number${range}` : `a number from ${min}${range}`;
  }
  return "valid";
}

/**
 * The settings the generated options of `keys` carry (only those given), each checked by the
 * setting's own schema: a bad value is a one-line usage error (exit 2) naming the flag.
 */
export async function settingsFromFlags(
  parsed: Record<string, unknown>,
  keys: readonly Key[],
  opts: { rename?: Partial<Record<Key, string>> } = {},
): Promise<Partial<RunSettingsInput>> {
  const [{ z }, { RunSettings }] = await Promise.all([import("zod"), import("../settings.js")]);
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    const flag = flagFor(key, opts.rename ?? {});
    const raw = parsed[propOf(flag)];
    if (raw === undefined || (Array.isArray(raw) && raw.length === 0)) continue;
    let base = RunSettings.shape[key] as import("zod").ZodType;
    while (base instanceof z.ZodDefault || base instanceof z.ZodOptional) base = (base as unknown as { unwrap(): import("zod").ZodType }).unwrap();
    const value = base instanceof z.ZodNumber && typeof raw === "string" ? (raw.trim() === "" ? Number.NaN : Number(raw)) : raw;
    const r = base.safeParse(value);
    if (!r.success) {
      const shown = Array.isArray(raw) ? raw.join(" ") : String(raw);
      const why = base instanceof z.ZodString || base instanceof z.ZodArray ? r.error.issues[0]!.message : `must be ${expected(z, base)}`;
      throw new CliError(`${flag} ${why}, got "${shown}"`, 2, "CONFIG_INVALID");
    }
    out[key] = r.data;
  }
  return out as Partial<RunSettingsInput>;
}
