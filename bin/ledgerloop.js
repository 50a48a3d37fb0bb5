#!/usr/bin/env node
// The CLI is TypeScript run through tsx's loader: no build step between `npm ci` and a working command.
import { register } from "tsx/esm/api";

register();
await import("../src/cli/main.ts");
