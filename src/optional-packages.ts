import { LedgerloopError } from "./errors.js";

/**
 * The packages only an optional feature loads, with the exact versions ledgerloop is tested with
 * (package.json's optional peerDependencies; a test keeps the two equal). They are not installed
 * with ledgerloop: each is heavy or runs a download at install time (sharp's libvips for
 * @xenova/transformers, a 400 MB native Chroma binding, protobufjs's install script for the OTLP
 * exporters), and a plain `npm install ledgerloop` must stay fast and script-free for them.
 */
export const OPTIONAL_PACKAGES = {
  "@xenova/transformers": "2.17.2",
  chromadb: "3.5.0",
  "@opentelemetry/exporter-metrics-otlp-http": "0.223.0",
  "@opentelemetry/exporter-trace-otlp-http": "0.223.0",
  "@opentelemetry/resources": "2.12.0",
  "@opentelemetry/sdk-metrics": "2.12.0",
  "@opentelemetry/sdk-trace": "2.12.0",
} as const;

export type OptionalPackage = keyof typeof OPTIONAL_PACKAGES;

/** The npm command that installs `packages` at the versions ledgerloop is tested with. */
export function installCommand(packages: readonly OptionalPackage[]): string {
  return `npm install ${packages.map((p) => `${p}@${OPTIONAL_PACKAGES[p]}`).join(" ")}`;
}

/** A feature was chosen whose optional package is not installed. */
export class MissingPackageError extends LedgerloopError {
  readonly packages: OptionalPackage[];
  constructor(packages: OptionalPackage[], feature: string, options?: { cause?: unknown }) {
    super("PACKAGE_NOT_INSTALLED", `${feature} needs ${packages.join(", ")}, which ledgerloop does not install: run \`${installCommand(packages)}\``, options);
    this.packages = packages;
  }
}

/** True when `err` says that one of `packages` itself (not something inside it) cannot be found. */
export function isMissing(err: unknown, packages: readonly string[]): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (code !== "ERR_MODULE_NOT_FOUND" && code !== "MODULE_NOT_FOUND") return false;
  const msg = err instanceof Error ? err.message : String(err);
  // Node names the missing bare specifier in quotes: "Cannot find package 'chromadb' imported from …".
  return packages.some((p) => msg.includes(`'${p}'`) || msg.includes(`"${p}"`));
}

/**
 * Loads an optional package through `load` (a literal `import("…")`, so its types stay checked);
 * when the package is missing, throws one {@link MissingPackageError} naming what to install.
 */
export async function importOptional<T>(packages: OptionalPackage[], feature: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (err) {
    if (isMissing(err, packages)) throw new MissingPackageError(packages, feature, { cause: err });
    throw err;
  }
}
