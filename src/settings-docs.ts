import { z } from "zod";
import { LedgerloopConfig } from "./config.js";
import { flagOf, OTHER_ENVIRONMENT, SETTING_SURFACES } from "./settings-surface.js";
import { RunContext, RunSettings } from "./settings.js";

// The configuration reference (docs/configuration.md), made from the declarations themselves:
// `npm run docs` writes it, and a test fails when the committed file differs from what this makes.

const cell = (s: string) => s.replace(/\|/g, "\\|").replace(/\n/g, " ");

/** The schema under defaults and optionality, with the default if any. */
function unwrap(t: z.ZodType): { base: z.ZodType; def?: unknown } {
  let base = t;
  let def: unknown;
  for (;;) {
    if (base instanceof z.ZodDefault) {
      def = (base as z.ZodDefault<z.ZodType>).def.defaultValue;
      base = (base as z.ZodDefault<z.ZodType>).unwrap() as z.ZodType;
    } else if (base instanceof z.ZodOptional) base = (base as z.ZodOptional<z.ZodType>).unwrap() as z.ZodType;
    else return { base, def: typeof def === "function" ? (def as () => unknown)() : def };
  }
}

/** A schema's type in a few words. */
function typeOf(base: z.ZodType): string {
  if (base instanceof z.ZodEnum) return (base.options as string[]).map((o) => `\`${o}\``).join(" \\| ");
  if (base instanceof z.ZodNumber) return base.isInt ? "integer" : "number";
  if (base instanceof z.ZodBoolean) return "boolean";
  if (base instanceof z.ZodString) return "string";
  if (base instanceof z.ZodArray) return "list";
  if (base instanceof z.ZodRecord) return "map";
  if (base instanceof z.ZodObject) return "object";
  return "value";
}

/** Every key path of the config file's schema, with its type. */
function configKeys(schema: z.ZodType, prefix: string, out: Array<[string, string]>): void {
  const { base } = unwrap(schema);
  if (base instanceof z.ZodObject) {
    for (const [k, v] of Object.entries(base.shape as Record<string, z.ZodType>)) {
      const key = prefix ? `${prefix}.${k}` : k;
      const inner = unwrap(v).base;
      out.push([key, typeOf(inner)]);
      if (inner instanceof z.ZodObject) configKeys(inner, key, out);
    }
  }
}

/** The Markdown of docs/configuration.md. */
export function configurationReference(): string {
  const perRun = new Set(Object.keys(RunContext.shape));
  const lines: string[] = [
    "# Configuration reference",
    "",
    "<!-- Made by `npm run docs` from src/settings.ts, src/settings-surface.ts and src/config.ts; do not edit by hand. -->",
    "",
    "## Run settings",
    "",
    "Each setting can be given to `openAgent` / `createRuntime` by its name. Where a column names a flag, an",
    "environment variable or a config key, the setting can be given there too. *Per run* settings also travel",
    "in the graph's context, so LangGraph Studio and the SDK can set them per run.",
    "",
    "| Setting | Flag (`run`) | Environment | Config key | Per run | Type | Default | What it does |",
    "|---|---|---|---|---|---|---|---|",
  ];
  for (const [key, field] of Object.entries(RunSettings.shape) as Array<[keyof RunSettings, z.ZodType]>) {
    const s = SETTING_SURFACES[key];
    const { base, def } = unwrap(field);
    const shownDef = def === undefined || (Array.isArray(def) && def.length === 0) ? "" : `\`${JSON.stringify(def)}\``;
    const flag = flagOf(key);
    lines.push(
      `| \`${key}\` | ${flag ? `\`${flag}\`` : ""} | ${s.env ? `\`${s.env}\`` : ""} | ${s.config ? `\`${s.config}\`` : ""} | ${perRun.has(key) ? "yes" : ""} | ${typeOf(base)} | ${shownDef} | ${cell(field.description ?? base.description ?? "")} |`,
    );
  }
  lines.push("", "## Other environment variables", "", "| Variable | What it does |", "|---|---|");
  for (const e of OTHER_ENVIRONMENT) lines.push(`| \`${e.name}\` | ${cell(e.what)} |`);
  const keys: Array<[string, string]> = [];
  configKeys(LedgerloopConfig, "", keys);
  lines.push(
    "",
    "## `ledgerloop.config.json` keys",
    "",
    "The file lives in the workspace root; unknown keys are errors. Lists under `sandbox.policy` are added to the",
    "built-in policy, scalars replace it. `tools` are project tools, `mcpServers` MCP servers (the shape other MCP",
    "clients read, plus `risk` and `approve`).",
    "",
    "| Key | Type |",
    "|---|---|",
  );
  for (const [k, t] of keys) lines.push(`| \`${k}\` | ${t} |`);
  return `${lines.join("\n")}\n`;
}

/** The TypeScript of src/cli/setting-flag-specs.ts: each flagged setting's option shape and help, so `--help` needs no zod. */
export function settingFlagSpecsSource(): string {
  const specs: Array<{ key: string; arg: string; kind: string; help: string }> = [];
  for (const [key, field] of Object.entries(RunSettings.shape) as Array<[keyof RunSettings, z.ZodType]>) {
    if (flagOf(key) === null) continue;
    const { base, def } = unwrap(field);
    const description = field.description ?? base.description ?? "";
    const shownDef =
      def === undefined || (Array.isArray(def) && def.length === 0) || description.includes("default") ? "" : ` (default: ${JSON.stringify(def)})`;
    const help = `${description.replace(/\.$/, "")}${shownDef}`;
    const kind = base instanceof z.ZodBoolean ? "boolean" : base instanceof z.ZodArray ? "list" : "value";
    const arg =
      kind === "boolean"
        ? ""
        : kind === "list"
          ? "<value...>"
          : base instanceof z.ZodEnum
            ? `<${(base.options as string[]).join("|")}>`
            : base instanceof z.ZodNumber
              ? "<n>"
              : "<value>";
    specs.push({ key, arg, kind, help });
  }
  return [
    "// Made by `npm run docs` from src/settings.ts and src/settings-surface.ts; do not edit by hand.",
    "// The shape and help of each setting's CLI flag, as data, so that `--help` loads no schema library.",
    "",
    "/** One setting's flag: its argument, its kind and its help. */",
    'export interface SettingFlagSpec {\n  key: string;\n  arg: string;\n  kind: "boolean" | "list" | "value";\n  help: string;\n}',
    "",
    `export const SETTING_FLAG_SPECS: readonly SettingFlagSpec[] = ${JSON.stringify(specs, null, 2)};`,
    "",
  ].join("\n");
}
