import { resolveWorkspace, stateLocation } from "../workspace/location.js";
import type { StateSource, ViewerSource } from "./viewer-state.js";

/**
 * The state the viewer reads: a PostgreSQL database (opened now, read-only, failing in one line) or
 * a workspace's SQLite file (opened per request; it may not exist until the first run).
 */
export async function openViewerSource(src: ViewerSource): Promise<StateSource> {
  if (src.state) return (await import("./pg-viewer-state.js")).pgSource(src.state);
  const workspace = resolveWorkspace(src.workspace);
  return (await import("./sqlite-viewer-state.js")).sqliteSource(workspace, stateLocation(workspace, src.stateDir).dbPath);
}
