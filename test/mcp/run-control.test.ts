import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, expect, it } from "vitest";
import { BIN, cliAsync } from "../helpers/cli.js";
import { describePg, pgQuery, useTestDatabase } from "../helpers/postgres.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";
import { exitOf, spawnWorker, writeTrajectory } from "../queue/queue-fixtures.js";

// cancel_run and requeue_run of `ledgerloop mcp --state URL --allow-writes`, spoken to by the SDK's
// own client over stdio, against a real PostgreSQL queue and a real worker.

const clients: Client[] = [];
afterAll(async () => {
  for (const c of clients) await c.close();
  cleanupTemp();
});

type Text = { content: Array<{ type: string; text: string }>; isError?: boolean };

describePg("ledgerloop mcp --state: cancel_run and requeue_run", () => {
  const db = useTestDatabase("mcp_control");
  const leaseOf = async (thread: string) =>
    (await pgQuery<{ state: string; note: string }>(db.url, "SELECT state, note FROM ll_run_leases WHERE thread_id = $1", [thread]))[0]!;

  async function connect(): Promise<Client> {
    const env = Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => typeof e[1] === "string"));
    delete env.LEDGERLOOP_STATE_URL;
    // No local state in this directory: with --state the server is the queue's run control all the same.
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, "mcp", "-w", tempWorkspace(), "--state", db.url, "--allow-writes"],
      env,
    });
    const client = new Client({ name: "test", version: "1.0.0" });
    await client.connect(transport);
    clients.push(client);
    return client;
  }
  const call = async (client: Client, name: string, args: Record<string, unknown>): Promise<{ error?: string; value?: unknown }> => {
    const r = (await client.callTool({ name, arguments: args })) as Text;
    return r.isError ? { error: r.content[0]!.text } : { value: JSON.parse(r.content[0]!.text) };
  };

  it("cancels a queued run, requeues it, and after a worker ran it requeues it from one of its checkpoints", async () => {
    const scratch = tempWorkspace();
    const s = await cliAsync([
      "submit",
      "two",
      "--workspace",
      tempWorkspace(undefined, { "README.md": "x\n" }),
      "--state",
      db.url,
      "--model",
      `scripted:${writeTrajectory(scratch, 2)}`,
      "--retrieval",
      "lexical",
      "--thread",
      "m1",
    ]);
    expect(s.code, s.stderr).toBe(0);
    const client = await connect();
    const tools = (await client.listTools()).tools;
    expect(tools.find((t) => t.name === "cancel_run")?.annotations?.destructiveHint).toBe(true);
    expect(tools.find((t) => t.name === "requeue_run")?.inputSchema.required).toEqual(["thread"]);

    expect(await call(client, "cancel_run", { thread: "m1" })).toEqual({ value: { thread: "m1", state: "cancelled", was: "queued" } });
    expect((await leaseOf("m1")).state).toBe("cancelled");
    expect(await call(client, "cancel_run", { thread: "nope" })).toEqual({
      error: 'no run "nope" was submitted to this state\'s queue; list runs with `ledgerloop threads --state …`',
    });
    expect(await call(client, "requeue_run", { thread: "m1", from: "1f0abc" })).toEqual({
      error: "run m1 has no checkpoints yet (it never started); requeue it without --from",
    });
    expect((await leaseOf("m1")).state).toBe("cancelled");
    expect(await call(client, "requeue_run", { thread: "m1" })).toEqual({ value: { thread: "m1", jobId: expect.any(String), was: "cancelled" } });
    expect((await leaseOf("m1")).state).toBe("queued");

    const w = spawnWorker(db.url, path.join(scratch, "w"));
    expect(await exitOf(w), w.err()).toEqual({ code: 0, signal: null });
    expect((await leaseOf("m1")).state).toBe("done");
    const h = await cliAsync(["history", "m1", "--state", db.url, "--step", "2", "--json"]);
    expect(h.code, h.stderr).toBe(0);
    const target = (JSON.parse(h.stdout) as { checkpointId: string }).checkpointId;
    expect(await call(client, "requeue_run", { thread: "m1", from: target })).toEqual({
      value: { thread: "m1", jobId: expect.any(String), was: "done", from: target },
    });
    expect(await leaseOf("m1")).toEqual({ state: "queued", note: expect.stringMatching(new RegExp(`from checkpoint ${target}$`)) });
    const travel = await pgQuery<{ to: string }>(
      db.url,
      "SELECT payload::jsonb ->> 'toCheckpoint' AS to FROM ll_events WHERE thread_id = 'm1' AND type = 'time_travel' ORDER BY seq DESC LIMIT 1",
    );
    expect(travel).toEqual([{ to: target }]);
  });
});
