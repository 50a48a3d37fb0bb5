import { spawn } from "node:child_process";
import fs from "node:fs";
import type { Command } from "commander";
import { CliError } from "../errors.js";
import type { Viewer } from "../web/server.js";
import { resolveWorkspace, stateLocation } from "../workspace/location.js";
import { log, stateOption, workspaceOptions } from "./common.js";
import { stateUrlOf, type WorkspaceArgs } from "../ledger/open-state.js";
import { redactUrl } from "../ledger/state-url.js";
import { declareCommand } from "./command-specs.js";

export interface WebArgs extends WorkspaceArgs {
  port?: number;
  host?: string;
  open?: boolean;
}

function portOption(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isInteger(n) || n > 65535)
    throw new CliError(`--port must be an integer from 0 to 65535, got "${value}"`, 2, "CONFIG_INVALID");
  return n;
}

/** Opens the URL in the desktop's browser, if there is one; failing to is only a warning. */
function openBrowser(url: string): void {
  const cmd = process.platform === "darwin" ? "open" : process.platform === "win32" ? "explorer" : "xdg-open";
  try {
    const child = spawn(cmd, [url], { stdio: "ignore", detached: true });
    child.on("error", () => log(`could not start ${cmd}; open ${url} yourself`));
    child.unref();
  } catch {
    log(`could not start ${cmd}; open ${url} yourself`);
  }
}

/**
 * Starts the run viewer for a workspace, or with --state (or $LEDGERLOOP_STATE_URL) for every run
 * of a PostgreSQL state, and prints its URL on stderr; the caller closes it.
 */
export async function handleWeb(args: WebArgs): Promise<Viewer> {
  const url = stateUrlOf(args);
  const listen = {
    ...(args.port !== undefined ? { port: args.port } : {}),
    ...(args.host !== undefined ? { host: args.host } : {}),
    onError: (m: string) => log(`web: ${m}`),
  };
  const { startViewer } = await import("../web/server.js");
  let viewer: Viewer;
  let what: string;
  if (url) {
    // The runs are all in the database, whichever machine ran them: no workspace is read.
    viewer = await startViewer({ workspace: process.cwd(), state: url, ...listen });
    what = redactUrl(url);
  } else {
    const workspace = resolveWorkspace(args.workspace ?? process.cwd());
    const { dbPath } = stateLocation(workspace, args.stateDir);
    viewer = await startViewer({ workspace, ...(args.stateDir ? { stateDir: args.stateDir } : {}), ...listen });
    if (!fs.existsSync(dbPath)) log(`no runs in ${workspace} yet (${dbPath} does not exist); the viewer shows them once one starts`);
    what = workspace;
  }
  if (args.host !== undefined && !["127.0.0.1", "localhost", "::1"].includes(args.host)) {
    log(`warning: serving on ${args.host}: anyone who can reach it can read the runs of ${what} (prompts, command output, file contents)`);
  }
  log(`ledgerloop web: ${viewer.url}  (read-only view of ${what}; Ctrl-C to stop)`);
  if (args.open) openBrowser(viewer.url);
  return viewer;
}

export function registerWeb(program: Command): void {
  stateOption(
    workspaceOptions(
      declareCommand(program, "web")
        .option("--port <n>", "port to listen on (default: 0, a free port)", portOption)
        .option("--host <host>", "interface to listen on (default: 127.0.0.1); anything else serves the runs to the network")
        .option("--open", "open the viewer in the desktop's browser"),
    ),
  ).action(async (opts: WebArgs) => {
    const viewer = await handleWeb(opts);
    await new Promise<void>((resolve) => {
      const stop = () => {
        process.off("SIGINT", stop);
        process.off("SIGTERM", stop);
        resolve();
      };
      process.on("SIGINT", stop);
      process.on("SIGTERM", stop);
    });
    await viewer.close();
  });
}
