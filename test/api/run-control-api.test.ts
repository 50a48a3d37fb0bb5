import { afterAll, expect, it } from "vitest";
import { cancelSubmittedRun, listWorkers, requeueSubmittedRun } from "../../src/index.js";
import { handleSubmit } from "../../src/cli/submit.js";
import { describePg, pgQuery, useTestDatabase } from "../helpers/postgres.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";
import { writeTrajectory } from "../queue/queue-fixtures.js";

afterAll(() => cleanupTemp());

describePg("the package API controls queued runs and lists the fleet", () => {
  const db = useTestDatabase("api_control");

  it("cancel and requeue from a script act on the queue's rows; the fleet is empty before any worker", async () => {
    await handleSubmit("t", {
      state: db.url,
      workspace: tempWorkspace(),
      model: `scripted:${writeTrajectory(tempWorkspace(), 1)}`,
      thread: "api1",
      json: true,
    });
    expect(await cancelSubmittedRun(db.url, "api1")).toEqual({ thread: "api1", state: "cancelled", was: "queued" });
    expect((await pgQuery<{ state: string }>(db.url, "SELECT state FROM ll_run_leases WHERE thread_id = 'api1'"))[0]!.state).toBe("cancelled");
    await expect(cancelSubmittedRun(db.url, "api1")).rejects.toThrow('run "api1" is cancelled already; nothing to cancel');
    // Nothing to continue from yet: refused, and the run stays where it was.
    await expect(requeueSubmittedRun(db.url, "api1", { from: "1f0abc" })).rejects.toThrow(
      "run api1 has no checkpoints yet (it never started); requeue it without --from",
    );
    expect((await pgQuery<{ state: string }>(db.url, "SELECT state FROM ll_run_leases WHERE thread_id = 'api1'"))[0]!.state).toBe("cancelled");
    expect(await requeueSubmittedRun(db.url, "api1")).toEqual({ thread: "api1", jobId: expect.any(String), was: "cancelled" });
    expect((await pgQuery<{ state: string }>(db.url, "SELECT state FROM ll_run_leases WHERE thread_id = 'api1'"))[0]!.state).toBe("queued");
    expect(await listWorkers(db.url)).toEqual([]);
  });
});
