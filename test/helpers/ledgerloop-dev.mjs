// The CLI from its TypeScript sources (through tsx), for tests: they need no build step. The
// published bin (bin/ledgerloop.js) runs the compiled dist/ instead; test/package/ covers that.
import { register } from "tsx/esm/api";

register();
await import("../../src/cli/main.ts");
