import { defaults } from "./defaults.js";
import { loadFile } from "./file.js";

function merge(base, over) {
  const out = { ...base };
  for (const [k, v] of Object.entries(over)) {
    out[k] = v && typeof v === "object" && !Array.isArray(v) ? merge(base[k] ?? {}, v) : v;
  }
  return out;
}

/** The app's configuration: the defaults, overridden by the config file when one is given. */
export function loadConfig({ file } = {}) {
  let config = structuredClone(defaults);
  if (file) config = merge(config, loadFile(file));
  return config;
}
