import type { ToolCallRecord } from "../state.js";
import type { ChatMessage, ChatModel, ModelRequest, ModelResponse, ToolSpecLike } from "./port.js";

// Tool calling for models served without it (`toolCallFormat: "text"`): many local servers and
// small models take no `tools` field and no `tool` role, but follow an instruction to write calls
// as text. This wrapper describes the tools in the system prompt, sends no tools, replays earlier
// calls and results as plain text, and parses the calls out of the answer: Hermes/Qwen
// `<tool_call>{…}</tool_call>` blocks, fenced JSON naming a tool, or one bare JSON object.

const OPEN = "<tool_call>";
const CLOSE = "</tool_call>";

/** The system prompt's part that teaches the format, with every tool's name, purpose and JSON schema. */
export function toolsInstruction(tools: ToolSpecLike[]): string {
  const list = tools.map((t) => `- ${t.name}: ${t.description}\n  arguments (JSON schema): ${JSON.stringify(t.parameters)}`).join("\n");
  return (
    "# Tools\nYou act only by calling tools. To call one, write a block like this (one block per call; several blocks run in order):\n" +
    `${OPEN}\n{"name": "<tool name>", "arguments": {<arguments as JSON>}}\n${CLOSE}\n` +
    "The result of each call comes back in the next message inside <tool_response> tags. Available tools:\n" +
    list
  );
}

/** Calls as the text of an assistant turn (how the model itself would have written them). */
function callsAsText(calls: ToolCallRecord[]): string {
  return calls.map((c) => `${OPEN}\n${JSON.stringify({ name: c.name, arguments: c.args !== undefined ? c.args : (c.argsText ?? "") })}\n${CLOSE}`).join("\n");
}

/** The conversation without tool roles or tool-call fields: what a server without tool support accepts. */
export function asTextConversation(messages: ChatMessage[], tools: ToolSpecLike[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  const instruction = tools.length ? toolsInstruction(tools) : "";
  let instructed = false;
  for (const m of messages) {
    if (m.role === "system") {
      out.push({ role: "system", content: instruction && !instructed ? `${m.content}\n\n${instruction}` : m.content });
      instructed = true;
    } else if (m.role === "assistant") {
      const calls = m.toolCalls?.length ? callsAsText(m.toolCalls) : "";
      // Answers that already hold the blocks (this model's own) are not given them twice.
      const text = m.content.includes(OPEN) ? m.content : [m.content, calls].filter(Boolean).join("\n");
      out.push({ role: "assistant", content: text });
    } else if (m.role === "tool") {
      const prev = out.at(-1);
      const block = `<tool_response name="${m.name}">\n${m.content}\n</tool_response>`;
      // Results of one turn go back in one user message, in order.
      if (prev?.role === "user" && prev.content.startsWith("<tool_response")) prev.content += `\n${block}`;
      else out.push({ role: "user", content: block });
    } else out.push(m);
  }
  if (instruction && !instructed) out.unshift({ role: "system", content: instruction });
  return out;
}

/** One parsed call object, or null when it names no tool. Accepts `arguments` or `parameters`, as an object or a JSON string. */
function callOf(value: unknown, i: number): ToolCallRecord | null {
  if (!value || typeof value !== "object" || Array.isArray(value)) return null;
  const v = value as { name?: unknown; arguments?: unknown; parameters?: unknown; tool?: unknown };
  const name = typeof v.name === "string" ? v.name : typeof v.tool === "string" ? v.tool : null;
  if (!name) return null;
  const raw = v.arguments ?? v.parameters ?? {};
  const id = `text_call_${i}`;
  if (typeof raw === "string") {
    try {
      return { id, name, args: JSON.parse(raw) as unknown };
    } catch {
      return { id, name, argsText: raw };
    }
  }
  return { id, name, args: raw };
}

/** The JSON texts of `<tool_call>` blocks (an unclosed last block runs to the end), else of fenced blocks, else the whole answer. */
function candidates(text: string): { pieces: string[]; tagged: boolean } {
  const tagged: string[] = [];
  let at = text.indexOf(OPEN);
  while (at >= 0) {
    const start = at + OPEN.length;
    const end = text.indexOf(CLOSE, start);
    tagged.push(text.slice(start, end < 0 ? undefined : end));
    at = end < 0 ? -1 : text.indexOf(OPEN, end + CLOSE.length);
  }
  if (tagged.length) return { pieces: tagged, tagged: true };
  const fenced = [...text.matchAll(/```(?:json|tool_call)?[ \t]*\n([\s\S]*?)```/g)].map((m) => m[1]!);
  if (fenced.length) return { pieces: fenced, tagged: false };
  const trimmed = text.trim();
  return { pieces: trimmed.startsWith("{") && trimmed.endsWith("}") ? [trimmed] : [], tagged: false };
}

/**
 * The tool calls written in an answer's text. A tagged block that is not valid JSON is still a call
 * (with its raw text, so the model is told its arguments were not JSON); untagged text counts only
 * when it parses as an object naming a tool (a JSON example in prose is not a call).
 */
export function parseTextToolCalls(text: string): ToolCallRecord[] {
  const { pieces, tagged } = candidates(text);
  const calls: ToolCallRecord[] = [];
  for (const piece of pieces) {
    const body = piece.trim();
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      if (tagged) {
        const name = /"name"\s*:\s*"([^"]+)"/.exec(body)?.[1] ?? "";
        calls.push({ id: `text_call_${calls.length}`, name, argsText: body.slice(0, 2000) });
      }
      continue;
    }
    for (const item of Array.isArray(parsed) ? parsed : [parsed]) {
      const c = callOf(item, calls.length);
      if (c) calls.push(c);
    }
  }
  return calls;
}

/** A model that writes its tool calls as text, behind the model port like any other. */
export class TextToolCallModel implements ChatModel {
  readonly name: string;

  constructor(private readonly inner: ChatModel) {
    this.name = inner.name;
  }

  async invoke(req: ModelRequest): Promise<ModelResponse> {
    const answer = await this.inner.invoke({ ...req, messages: asTextConversation(req.messages, req.tools), tools: [] });
    if (answer.toolCalls.length || !req.tools.length) return answer;
    return { ...answer, toolCalls: parseTextToolCalls(answer.content) };
  }
}
