import { Option, type Command } from "commander";
import { z } from "zod";
import { CliError } from "../errors.js";
import { flagOf } from "../settings-surface.js";
import { RunSettings, type RunSettingsInput } from "../settings.js";

// CLI flags generated from the run settings' one declaration (settings.ts for type, default and
// description; settings-surface.ts for the flag name): a flag's help, its accepted values and its
// check are the setting's own, so they cannot drift from what openAgent and the config accept.

type Key = keyof RunSettings;

/** The settings `run` takes as flags (workspace, state dir and state URL come from the shared options). */
export const RUN_FLAG_SETTINGS: readonly Key[] = (Object.keys(RunSettings.shape) as Key[]).filter(
  (k) => flagOf(k) !== null && k !== "workspace" && k !== "stateDir" && k !== "stateUrl",
);

/** The settings about commands and their budget, shared by run, resume, submit and exec. */
export const SANDBOX_FLAG_SETTINGS: readonly Key[] = ["approve", "sandbox", "allowNetwork", "allow", "maxCostUsd", "maxTokens"];

/** The schema under a field's default and optionality, and its description. */
function fieldOf(key: Key): { base: z.ZodType; field: z.ZodType; description: string; defaultValue: unknown } {
  const field = RunSettings.shape[key] as z.ZodType;
  let base: z.ZodType = field;
  let defaultValue: unknown;
  for (;;) {
    if (base instanceof z.ZodDefault) {
      defaultValue = (base as z.ZodDefault<z.ZodType>).def.defaultValue;
      base = (base as z.ZodDefault<z.ZodType>).unwrap() as z.ZodType;
    } else if (base instanceof z.ZodOptional) base = (base as z.ZodOptional<z.ZodType>).unwrap() as z.ZodType;
    else break;
  }
  if (typeof defaultValue === "function") defaultValue = (defaultValue as () => unknown)();
  return { base, field, description: field.description ?? base.description ?? "", defaultValue };
}

/** The commander property a flag fills (`--max-cost` → `maxCost`). */
const propOf = (flag: string) => flag.replace(/^--/, "").replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());

/** The flag of `key` under `rename` (e.g. resume's `--approve-mode`). */
function flagFor(key: Key, rename: Partial<Record<Key, string>>): string {
  return rename[key] ?? flagOf(key)!;
}

/** Adds one option per setting in `keys`, generated from the setting's schema and description. */
export function settingOptions(cmd: Command, keys: readonly Key[], opts: { rename?: Partial<Record<Key, string>>; short?: Partial<Record<Key, string>> } = {}): Command {
  for (const key of keys) {
    const flag = flagFor(key, opts.rename ?? {});
    const { base, description, defaultValue } = fieldOf(key);
    const short = opts.short?.[key] ? `${opts.short[key]}, ` : "";
    const shownDefault = defaultValue === undefined || (Array.isArray(defaultValue) && defaultValue.length === 0) ? "" : ` (default: ${JSON.stringify(defaultValue)})`;
    const help = `${description.replace(/\.$/, "")}${description.includes("default") ? "" : shownDefault}`;
    let option: Option;
    if (base instanceof z.ZodBoolean) option = new Option(`${short}${flag}`, help);
    else if (base instanceof z.ZodArray) option = new Option(`${short}${flag} <value...>`, help);
    else if (base instanceof z.ZodEnum) option = new Option(`${short}${flag} <${(base.options as string[]).join("|")}>`, help);
    else option = new Option(`${short}${flag} <${base instanceof z.ZodNumber ? "n" : "value"}>`, help);
    if (!(base instanceof z.ZodBoolean)) option.argParser((raw: string, prev: unknown) => parseFlag(key, flag, raw, prev));
    cmd.addOption(option);
  }
  return cmd;
}

/** What a value of `base` must be, in words (for a flag's error). */
function expected(base: z.ZodType): string {
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

/** One flag's value, checked by the setting's own schema; a bad value is a usage error naming the flag. */
function parseFlag(key: Key, flag: string, raw: string, prev: unknown): unknown {
  const { base } = fieldOf(key);
  if (base instanceof z.ZodArray) {
    const r = base.safeParse([...((prev as string[] | undefined) ?? []), raw]);
    if (!r.success) throw new CliError(`${flag}: ${r.error.issues[0]!.message} (got "${raw}")`, 2, "CONFIG_INVALID");
    return r.data;
  }
  const value: unknown = base instanceof z.ZodNumber ? (raw.trim() === "" ? Number.NaN : Number(raw)) : raw;
  const r = base.safeParse(value);
  if (!r.success) {
    const why = base instanceof z.ZodString ? r.error.issues[0]!.message : `must be ${expected(base)}`;
    throw new CliError(`${flag} ${why}, got "${raw}"`, 2, "CONFIG_INVALID");
  }
  return r.data;
}

/** The settings the generated options of `keys` carry (only those given). */
export function settingsFromFlags(parsed: Record<string, unknown>, keys: readonly Key[], opts: { rename?: Partial<Record<Key, string>> } = {}): Partial<RunSettingsInput> {
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    const v = parsed[propOf(flagFor(key, opts.rename ?? {}))];
    if (v === undefined || (Array.isArray(v) && v.length === 0)) continue;
    out[key] = v;
  }
  return out as Partial<RunSettingsInput>;
}
