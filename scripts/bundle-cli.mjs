// Bundles the compiled CLI (dist/src/cli/main.js) into dist/cli/ with esbuild, as the bin's entry.
//
// Why: unbundled, a `ledgerloop run` loads ~880 ES modules (@langchain/core, langsmith, zod,
// LangGraph, ours). Node resolves, reads and links each one, and that alone was about half a second
// of CPU before the first line of the run (issue 30). Bundled, the same code arrives in a few files.
//
// What stays the same:
// - Dynamic imports stay dynamic (code splitting), so what a command does not use is still not loaded.
// - Packages with native code, WebAssembly or files read from their own directory stay external and
//   load from node_modules as before; so do the optional peers (chromadb, @xenova/transformers,
//   OpenTelemetry), which may be absent.
// - Our own modules keep their `import.meta.url`: each is rewritten to the URL of the file tsc wrote
//   in dist/src/, so every path found relative to a module (the web page, the Chroma host script,
//   package lookups through createRequire) is the one the unbundled build finds.
// - dist/src/ stays the library (`import "ledgerloop"`), with its types; only the bin uses dist/cli/.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { build } from "esbuild";

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const OUT = path.join(REPO, "dist", "cli");
const OWN = path.join(REPO, "dist", "src") + path.sep;

const EXTERNAL = [
  "libsql", // native addon, loaded from its per-platform package
  "pg",
  "pg-boss",
  "pino", // its transports start worker files by path
  "web-tree-sitter", // WebAssembly read from its own directory
  "tree-sitter-python",
  "tree-sitter-typescript",
  "sh-syntax",
  "chromadb", // optional peers
  "@xenova/transformers",
  "@opentelemetry/*",
  "tsx", // the eval's killed-run child loads it by path when it runs TypeScript sources
];

const keepModuleUrl = {
  name: "keep-module-url",
  setup(b) {
    b.onLoad({ filter: /\.js$/ }, async (args) => {
      if (!args.path.startsWith(OWN)) return undefined;
      const code = await fs.promises.readFile(args.path, "utf8");
      if (!code.includes("import.meta.url")) return { contents: code, loader: "js" };
      const rel = path.relative(OUT, args.path).split(path.sep).join("/");
      return { contents: code.replaceAll("import.meta.url", `new URL(${JSON.stringify(rel)}, import.meta.url).href`), loader: "js" };
    });
  },
};

export async function bundleCli() {
  fs.rmSync(OUT, { recursive: true, force: true });
  await build({
    entryPoints: { main: path.join(REPO, "dist", "src", "cli", "main.js") },
    outdir: OUT,
    bundle: true,
    splitting: true,
    format: "esm",
    platform: "node",
    target: "node20",
    external: EXTERNAL,
    plugins: [keepModuleUrl],
    // CommonJS packages inside an ES module bundle call require() for Node's built-ins.
    banner: { js: 'import { createRequire as __llCreateRequire } from "node:module"; const require = __llCreateRequire(import.meta.url);' },
    // Beside main.js: the rewritten module URLs are relative to dist/cli/.
    chunkNames: "[name]-[hash]",
    legalComments: "eof",
    logLevel: "warning",
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await bundleCli();
