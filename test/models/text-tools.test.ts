/**
 * Models served without tool calling (`toolCallFormat: "text"`): tools go into the system prompt,
 * no `tools` field and no `tool` role are sent, and calls are parsed from the answer's text.
 */
import fs from "node:fs";
import path from "node:path";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { asTextConversation, parseTextToolCalls } from "../../src/models/text-tools.js";
import { cliAsync } from "../helpers/cli.js";
import { startOpenAIStub, type OpenAIStub, type StubRequestBody } from "../helpers/openai-stub.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

afterAll(() => cleanupTemp());

describe("parsing calls written as text", () => {
  it("reads Hermes/Qwen <tool_call> blocks, several in order, with arguments as an object or a JSON string", () => {
    const text = `I'll look first.\n<tool_call>\n{"name": "read_file", "arguments": {"path": "a.ts"}}\n</tool_call>\n<tool_call>{"name":"run_command","arguments":"{\\"command\\": \\"ls\\"}"}</tool_call>`;
    expect(parseTextToolCalls(text)).toEqual([
      { id: "text_call_0", name: "read_file", args: { path: "a.ts" } },
      { id: "text_call_1", name: "run_command", args: { command: "ls" } },
    ]);
  });

  it("reads fenced JSON naming a tool (with `parameters`), and a bare object answer", () => {
    expect(parseTextToolCalls('Sure:\n```json\n{"name": "list_files", "parameters": {"glob": "*.ts"}}\n```\n')).toEqual([
      { id: "text_call_0", name: "list_files", args: { glob: "*.ts" } },
    ]);
    expect(parseTextToolCalls('{"name": "finish", "arguments": {"summary": "done"}}')).toEqual([
      { id: "text_call_0", name: "finish", args: { summary: "done" } },
    ]);
  });

  it("keeps a broken tagged call (so the model is told), and takes no call from prose or a JSON example without a name", () => {
    expect(parseTextToolCalls('<tool_call>{"name": "write_file", "arguments": {"path": "x", "content": "cut')).toEqual([
      { id: "text_call_0", name: "write_file", argsText: '{"name": "write_file", "arguments": {"path": "x", "content": "cut' },
    ]);
    expect(parseTextToolCalls('The config looks like {"port": 80}. Done.')).toEqual([]);
    expect(parseTextToolCalls('```json\n{"port": 80}\n```')).toEqual([]);
  });

  it("turns tool roles and tool-call fields into text a plain chat server accepts", () => {
    const out = asTextConversation(
      [
        { role: "system", content: "You are an agent." },
        { role: "user", content: "Go" },
        {
          role: "assistant",
          content: "",
          toolCalls: [
            { id: "c1", name: "read_file", args: { path: "a" } },
            { id: "c2", name: "read_file", args: { path: "b" } },
          ],
        },
        { role: "tool", toolCallId: "c1", name: "read_file", content: "A" },
        { role: "tool", toolCallId: "c2", name: "read_file", content: "B" },
      ],
      [{ name: "read_file", description: "Read a file.", parameters: { type: "object", properties: { path: { type: "string" } } } }],
    );
    expect(out.map((m) => m.role)).toEqual(["system", "user", "assistant", "user"]);
    expect(out[0]!.content).toMatch(/# Tools[\s\S]*- read_file: Read a file\.[\s\S]*"path"/);
    expect(out[2]!.content).toContain('<tool_call>\n{"name":"read_file","arguments":{"path":"a"}}\n</tool_call>');
    expect(out[3]!.content).toBe('<tool_response name="read_file">\nA\n</tool_response>\n<tool_response name="read_file">\nB\n</tool_response>');
  });
});

describe("a run with --tool-call-format text against a server without tool calling", () => {
  let stub: OpenAIStub;
  beforeEach(async () => {
    let decide = 0;
    stub = await startOpenAIStub({
      respond: (body) => {
        const system = String(body.messages[0]?.content ?? "");
        // Like a server without tool support: refuse what it does not know.
        if (body.tools?.length || body.messages.some((m) => m.role === "tool")) return { status: 400, message: "tools are not supported by this server" };
        // Which node asks, from the tools its system prompt lists (plan: update_plan only; reflect: none).
        if (!system.includes("- read_file:")) {
          if (system.includes("- update_plan:"))
            return {
              content:
                '<tool_call>{"name": "update_plan", "arguments": {"subtasks": [{"id": "w", "description": "write hello.txt", "status": "in_progress"}]}}</tool_call>',
            };
          return { content: "A lesson." };
        }
        decide++;
        if (decide === 1)
          return { content: 'Writing it.\n<tool_call>\n{"name": "write_file", "arguments": {"path": "hello.txt", "content": "hi\\n"}}\n</tool_call>' };
        return { content: '```json\n{"name": "finish", "arguments": {"summary": "hello.txt written"}}\n```' };
      },
    });
  });
  afterEach(async () => stub.close());

  it("runs to finished: no tools field, no tool role, calls parsed from the text, results sent back as text", async () => {
    const ws = tempWorkspace(undefined, { "README.md": "# x\n" });
    const r = await cliAsync(
      ["run", "Write hello.txt", "-w", ws, "--model", "openai:plain", "--tool-call-format", "text", "--json", "-q", "--sandbox", "none"],
      {
        env: { OPENAI_BASE_URL: stub.url, OPENAI_API_KEY: "sk-test-000000" },
        timeoutMs: 120_000,
      },
    );
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: "finished" });
    expect(fs.readFileSync(path.join(ws, "hello.txt"), "utf8")).toBe("hi\n");
    const sent = stub.requests as StubRequestBody[];
    expect(sent.every((b) => !b.tools?.length && !b.messages.some((m) => m.role === "tool"))).toBe(true);
    // The write's result reached the model as a tool_response in a user message.
    const lastDecide = sent.filter((b) => String(b.messages[0]?.content ?? "").includes("- read_file:")).at(-1)!;
    expect(JSON.stringify(lastDecide.messages)).toMatch(/tool_response name=\\"write_file\\"/);
  }, 180_000);

  it("refuses an unknown format in a sentence naming the flag", async () => {
    const r = await cliAsync(["run", "x", "-w", tempWorkspace(), "--model", "openai:plain", "--tool-call-format", "xml"], {
      env: { OPENAI_BASE_URL: stub.url },
      timeoutMs: 60_000,
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--tool-call-format must be native or text, got "xml"/);
  }, 60_000);
});
