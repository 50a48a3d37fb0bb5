// vitest config for recording the commands the suites feed to the policy (see policy-golden.test.ts).
import { defineConfig, mergeConfig } from "vitest/config";
import base from "../../../vitest.config.js";

export default mergeConfig(base, defineConfig({ test: { setupFiles: ["test/sandbox/golden/collect.setup.ts"] } }));
