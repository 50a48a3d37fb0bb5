import { ensureChromaServer, type ChromaServer } from "../../../src/retrieval/chroma-server.js";
import { tempWorkspace } from "../../helpers/workspace.js";

/** A real embedded Chroma server (the chromadb package's bundled one, offline) in a temp state dir. */
export async function startTestChroma(): Promise<ChromaServer & { stateDir: string }> {
  const stateDir = tempWorkspace();
  const server = await ensureChromaServer({ stateDir, startTimeoutMs: 45_000 });
  return Object.assign(server, { stateDir });
}
