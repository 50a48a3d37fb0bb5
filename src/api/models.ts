// `ledgerloop/models`: building chat models. Kept out of the package root because these are
// synchronous and need LangChain (and the OpenAI client) loaded at import.

export { createModel } from "../models/factory.js";
export { LangChainChatModel, chatModelFromInstance, isToolCallingChatModel, type ToolCallingChatModel } from "../models/langchain.js";
export type { ChatMessage, ChatModel, ModelRequest, ModelResponse } from "../models/port.js";
