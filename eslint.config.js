// The lint check `.ci/run` takes before the tests (`npm run lint`): ESLint's and typescript-eslint's
// recommended rules, without type information (a type-aware pass costs minutes on two cores, and
// `tsc --noEmit` already checks types). Layout is prettier's (`npm run format:check`), not ESLint's.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

const readonly = (names) => Object.fromEntries(names.map((n) => [n, "readonly"]));
// The globals our plain JavaScript files use: Node scripts (bin, the Chroma host) and the viewer.
const NODE = readonly(["process", "console", "URL", "Buffer", "setTimeout", "clearTimeout", "setInterval", "clearInterval"]);
const BROWSER = readonly([
  "window",
  "document",
  "location",
  "fetch",
  "Node",
  "URLSearchParams",
  "EventSource",
  "console",
  "setTimeout",
  "clearTimeout",
  "setInterval",
  "clearInterval",
]);

export default tseslint.config(
  { ignores: ["dist/", "node_modules/", "coverage/", "**/.ledgerloop/", "examples/", "eval/", "test/fixtures/"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      // A leading underscore marks a binding kept on purpose (a rest sibling dropped, a parameter a signature needs).
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrors: "none", ignoreRestSiblings: true }],
      // Flags `let x = fallback; try { x = read() } catch {}`, the pattern strict TypeScript needs.
      "no-useless-assignment": "off",
      // Output parsers match terminal control sequences on purpose (ANSI colours, NUL bytes).
      "no-control-regex": "off",
    },
  },
  { files: ["**/*.js", "**/*.mjs"], languageOptions: { globals: NODE } },
  { files: ["src/web/**/*.js"], languageOptions: { globals: BROWSER } },
  // Tests read JSON they just parsed; `any` there is a cast, not an API.
  { files: ["test/**/*.ts"], rules: { "@typescript-eslint/no-explicit-any": "off" } },
);
