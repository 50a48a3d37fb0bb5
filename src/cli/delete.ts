import type { Command } from "commander";
import { deleteThread, type DeleteArgs } from "../runs/delete.js";
import { intOption, log, printJson, stateOption, workspaceOptions } from "./common.js";
import { declareCommand } from "./command-specs.js";

export function registerDelete(program: Command): void {
  stateOption(
    workspaceOptions(
      declareCommand(program, "delete")
        .option("--yes", "delete it (otherwise nothing is written)")
        .option(
          "--stale-hours <n>",
          "delete a run whose runner is on a host this machine cannot check once it has recorded nothing for this long (default: refuse)",
          intOption("--stale-hours"),
        )
        .option("--json", "one JSON object"),
    ),
  ).action(async (thread: string, opts: DeleteArgs) => {
    const r = await deleteThread(thread, opts);
    if (opts.json) return printJson(r);
    const what = `${r.events} event(s), ${r.checkpoints} checkpoint(s), ${r.writes} pending write(s), ${r.prompts} stored prompt(s)${r.registered ? ", its registry entry" : ""}, its run log and report`;
    const lessons = r.lessons ? `; ${r.lessons} lesson(s) drawn from it stay in long-term memory (\`ledgerloop memory forget\` removes one)` : "";
    if (!r.deleted) {
      log(`delete: would remove ${what} of ${r.thread} from ${r.state}${lessons}. Nothing was written; add --yes to delete it.`);
      if (r.checkpointsElsewhere) log(`  ${r.checkpointsElsewhere}`);
      return;
    }
    log(`delete: removed ${what} of ${r.thread} from ${r.state}; ${r.indexEvents} indexed event(s) forgotten${lessons}`);
    if (r.checkpointsElsewhere) log(`  ${r.checkpointsElsewhere}`);
    const s = r.sweep;
    if (s && "skipped" in s) log(`  workspace revisions not swept: ${s.skipped}`);
    else if (s)
      log(
        `  ${s.revisionsDeleted} workspace revision(s) no run names any more removed; ${(s.bytesBefore / 1e6).toFixed(2)} MB → ${(s.bytesAfter / 1e6).toFixed(2)} MB`,
      );
  });
}
