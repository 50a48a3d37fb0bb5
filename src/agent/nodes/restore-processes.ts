import type { BranchWriter } from "../../ledger/writer.js";
import type { Runtime } from "../../runtime.js";
import { runningProcesses } from "../../sandbox/process-history.js";
import type { TaskStateValue } from "../../state.js";

/**
 * After a crash, a pause or a rewind the run's background processes are gone (they die with the
 * runner and its session). The first context step of a runtime restarts those the branch's ledger
 * says were running, in their start order, in the workspace as restored; each restart (or failure,
 * with its output) is a `process` event caused by the event that started it, and the model is told
 * in the next prompt. Their commands passed the policy (and any approval) when first started, under
 * the configuration the thread is pinned to.
 */
export async function restoreProcesses(rt: Runtime, state: TaskStateValue, w: BranchWriter): Promise<void> {
  const pm = rt.processes;
  if (!pm || pm.restored) return;
  pm.restored = true;
  const records = runningProcesses(await rt.ledger.branch(state.ledgerHead, { types: ["process"] }));
  const want = records.filter((p) => {
    const cur = pm.get(p.name);
    return typeof cur === "string" || cur.status !== "running";
  });
  if (!want.length) return;
  const notes: string[] = [`Restarted after the run resumed (background processes do not survive a stop, crash or rewind):`];
  for (const p of want) {
    const spec = { name: p.name, command: p.command, readyPort: p.readyPort, readyPattern: p.readyPattern, readyTimeoutMs: p.readyTimeoutMs };
    const r = await pm.start({ ...spec, cause: p.startEvent });
    if (r.ok) {
      await w.append(
        `process-restart/${p.name}/${p.startEvent}`,
        "process",
        { kind: "restart", ...spec, pid: r.pid, readyMs: r.readyMs, ports: r.ports },
        p.startEvent,
      );
      notes.push(`- ${p.name}: restarted, ready after ${r.readyMs} ms${r.ports.length ? ` (listening on ${r.ports.join(", ")})` : ""}`);
    } else {
      await w.append(
        `process-restart/${p.name}/${p.startEvent}`,
        "process",
        {
          kind: "failed",
          ...spec,
          reason: `restart after resume failed: ${r.reason}`,
          exitCode: r.exit?.exitCode ?? null,
          signal: r.exit?.signal ?? null,
          lastLines: r.lines.slice(-20),
        },
        p.startEvent,
      );
      notes.push(`- ${p.name}: could NOT be restarted: ${r.reason}`, ...r.lines.slice(-10).map((l) => `    | ${l}`));
    }
    rt.progress?.({ node: "context", step: state.step + 1, text: `background process ${p.name}: ${r.ok ? "restarted" : `restart failed (${r.reason})`}` });
  }
  pm.notes.push(...notes);
}
