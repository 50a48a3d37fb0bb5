import fs from "node:fs";
import path from "node:path";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { cli, cliAsync, jsonLines } from "../helpers/cli.js";
import { startOpenAIStub, type OpenAIStub, type StubReply, type StubRequestBody, stubToolCall } from "../helpers/openai-stub.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

afterAll(() => cleanupTemp());

// Shaped like a real key, so that the redactor's own patterns would not be what hides it.
const API_KEY = "sk-proj-Zq8Lr2Vx5Nw7Kt1Bm4Hc9Jd3Fg6Sa0Pe";

/** Which node a request comes from: plan offers only update_plan, decide every tool, reflect and summarize none. */
function nodeOf(body: StubRequestBody): "plan" | "decide" | "other" {
  const tools = body.tools?.map((t) => t.function.name) ?? [];
  if (tools.length === 1 && tools[0] === "update_plan") return "plan";
  return tools.length > 1 ? "decide" : "other";
}

const call = stubToolCall;

describe("ledgerloop run --model openai:<name> against an OpenAI-compatible server over HTTP", () => {
  let stub: OpenAIStub;
  let decideTurn = 0;
  beforeEach(async () => {
    decideTurn = 0;
    const decide: StubReply[] = [
      { content: "I will write the notes first.", tool_calls: [call("c1", "write_file", { path: "notes.txt", content: "hello from the model\n" })] },
      { content: null, tool_calls: [call("c2", "run_command", { command: "wc -l notes.txt && cat notes.txt" })] },
      { content: "Done.", tool_calls: [call("c3", "finish", { summary: "notes written and checked" })] },
    ];
    stub = await startOpenAIStub({
      respond: (body) => {
        const node = nodeOf(body);
        if (node === "plan") {
          return { tool_calls: [call("p1", "update_plan", { subtasks: [{ id: "notes", description: "write notes.txt", status: "in_progress" }] })] };
        }
        if (node === "decide") return decide[decideTurn++];
        return { content: "Writing a file and reading it back with cat confirmed the content." };
      },
    });
  });
  afterEach(async () => {
    await stub.close();
  });

  it("runs the whole loop through the HTTP API: plan, tool calls, tool results fed back, finish; the key only in the header", async () => {
    const ws = tempWorkspace(undefined, { "README.md": "# notes project\n" });
    const env = { OPENAI_BASE_URL: stub.url, OPENAI_API_KEY: API_KEY };
    const r = await cliAsync(
      ["run", "Write notes.txt and check it", "-w", ws, "--model", "openai:stub-model", "--thread", "H", "--json", "-q", "--sandbox", "none"],
      {
        env,
        timeoutMs: 90_000,
      },
    );
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ thread: "H", status: "finished", steps: 3 });
    expect(fs.readFileSync(path.join(ws, "notes.txt"), "utf8")).toBe("hello from the model\n");

    // What went over the wire.
    expect(stub.requests.every((b) => b.model === "stub-model")).toBe(true);
    expect(stub.headers.every((h) => h.authorization === `Bearer ${API_KEY}`)).toBe(true);
    const decides = stub.requests.filter((b) => nodeOf(b) === "decide");
    expect(decides).toHaveLength(3);
    expect(nodeOf(stub.requests[0]!)).toBe("plan");
    expect(decides[0]!.tools!.map((t) => t.function.name).sort()).toEqual(
      [
        "edit_file",
        "finish",
        "git_commit",
        "list_files",
        "process_output",
        "process_status",
        "read_file",
        "record_decision",
        "run_command",
        "run_tests",
        "search_code",
        "start_process",
        "stop_process",
        "update_plan",
        "write_file",
      ].sort(),
    );
    const text = (b: StubRequestBody) => JSON.stringify(b.messages);
    // The goal and the plan reach the model; each step sees the result of the one before.
    expect(text(decides[0]!)).toContain("Write notes.txt and check it");
    expect(text(decides[0]!)).toContain("write notes.txt");
    expect(text(decides[1]!)).toMatch(/write_file.*notes\.txt/);
    expect(text(decides[2]!)).toContain("hello from the model");
    expect(text(decides[2]!)).toMatch(/1 notes\.txt/);

    // The ledger has each model call, and the key is nowhere in it, nor in the state files.
    const ledger = cli(["ledger", "H", "-w", ws, "--json"]);
    expect(ledger.code, ledger.stderr).toBe(0);
    const events = jsonLines<{ type: string; payload: { model?: string; node?: string } }>(ledger.stdout);
    expect(events.filter((e) => e.type === "model_call" && e.payload.node === "decide").map((e) => e.payload.model)).toEqual([
      "openai:stub-model",
      "openai:stub-model",
      "openai:stub-model",
    ]);
    expect(ledger.stdout).not.toContain(API_KEY);
    for (const f of fs.readdirSync(path.join(ws, ".ledgerloop"), { recursive: true }) as string[]) {
      const p = path.join(ws, ".ledgerloop", f);
      if (fs.statSync(p).isFile()) expect(fs.readFileSync(p).includes(API_KEY), f).toBe(false);
    }
  }, 120_000);

  it("a server that goes away mid-run stops it with a one-line error naming the URL; nothing is lost and resume against a live server finishes it", async () => {
    const ws = tempWorkspace(undefined, { "README.md": "# notes project\n" });
    // The second decide request is never answered: the server goes away while it waits.
    const hang = startOpenAIStub({
      respond: (body) => {
        const node = nodeOf(body);
        if (node === "plan")
          return { tool_calls: [call("p1", "update_plan", { subtasks: [{ id: "notes", description: "write notes.txt", status: "in_progress" }] })] };
        if (node === "decide" && decideTurn === 0) {
          decideTurn++;
          return { tool_calls: [call("c1", "write_file", { path: "notes.txt", content: "hello from the model\n" })] };
        }
        return { content: "never sent", delayMs: 60_000 };
      },
    });
    const dying = await hang;
    const env = (url: string) => ({ OPENAI_BASE_URL: url, OPENAI_API_KEY: API_KEY, LEDGERLOOP_MODEL_RETRIES: "0" });
    const running = cliAsync(
      ["run", "Write notes.txt and check it", "-w", ws, "--model", "openai:stub-model", "--thread", "D", "--json", "-q", "--sandbox", "none"],
      {
        env: env(dying.url),
        timeoutMs: 90_000,
      },
    );
    const t0 = Date.now();
    while (dying.requests.filter((b) => nodeOf(b) === "decide").length < 2) {
      if (Date.now() - t0 > 60_000) throw new Error("the run never asked for its second step");
      await new Promise((r) => setTimeout(r, 50));
    }
    await dying.close();
    const dead = await running;
    // An endpoint that went away pauses the run (exit 5), it does not fail it.
    expect(dead.code).toBe(5);
    // With --json the outcome, error included, is the one object on stdout.
    const outcome = JSON.parse(dead.stdout) as { status: string; steps: number; error: string };
    expect(outcome).toMatchObject({ thread: "D", status: "model_unavailable", steps: 1 });
    expect(outcome.error).toContain(`model endpoint ${dying.url} is unreachable`);
    expect(outcome.error).not.toContain("\n");
    expect(dead.stdout).not.toContain(API_KEY);
    expect(dead.stderr).not.toContain(API_KEY);
    // Nothing recorded was lost: the first step's file and its ledger events are there.
    expect(fs.readFileSync(path.join(ws, "notes.txt"), "utf8")).toBe("hello from the model\n");
    const before = jsonLines<{ type: string }>(cli(["ledger", "D", "-w", ws, "--json"]).stdout);
    expect(before.filter((e) => e.type === "environment_feedback")).toHaveLength(1);

    // The live stub of beforeEach answers from its second decide turn on.
    decideTurn = 1;
    const resumed = await cliAsync(["resume", "D", "-w", ws, "--json", "-q"], { env: env(stub.url), timeoutMs: 90_000 });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ thread: "D", status: "finished", steps: 3 });
    const after = jsonLines<{ type: string; payload: { tool?: string } }>(cli(["ledger", "D", "-w", ws, "--json"]).stdout);
    // write_file ran once, not again after the resume.
    expect(after.filter((e) => e.type === "environment_feedback").map((e) => e.payload.tool)).toEqual(["write_file", "run_command", "finish"]);
  }, 180_000);
});
