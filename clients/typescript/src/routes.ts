/**
 * A step's request as the provider SDK's own parameter type, so it goes to the SDK unchanged:
 *
 *     const completion = await openai.chat.completions.create(openaiChat(step));
 *     const message = await anthropic.messages.create(anthropicMessages(step));
 *     const response = await openai.responses.create(openaiResponses(step));
 *
 * Each accessor checks at run time that the step was prepared for its route (and that the
 * request is a non-streaming one naming a model, as the type says), throwing
 * `RouteMismatchError` otherwise, and returns the request object itself. The SDK types are
 * imported as types only: this module, like the rest of the client, has no run-time
 * dependency on `openai` or `@anthropic-ai/sdk` (optional peer dependencies). Type-checking
 * code that imports it needs both installed; `prompt-host/openai` and
 * `prompt-host/anthropic` need one each.
 */

export { anthropicMessages, type AnthropicReply } from "./anthropic.js";
export { openaiChat, openaiResponses, type OpenAIChatReply, type OpenAIResponsesReply } from "./openai.js";
export type { RoutedRequest } from "./route-check.js";
