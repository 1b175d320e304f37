/**
 * The OpenAI SDK's request types for the `chat-completions` and `openai-responses` routes
 * (also exported by `prompt-host/routes`, which needs both SDKs' types; this module needs only
 * `openai`'s):
 *
 *     const completion = await openai.chat.completions.create(openaiChat(step));
 *     const response = await openai.responses.create(openaiResponses(step));
 *
 * The types are imported as types only: no run-time dependency on `openai`.
 */

import type {
  ChatCompletion,
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionMessage,
} from "openai/resources/chat/completions";
import type { Response, ResponseCreateParamsNonStreaming, ResponseOutputItem } from "openai/resources/responses/responses";

import { checked, type RoutedRequest } from "./route-check.js";

export type { RoutedRequest } from "./route-check.js";

/** A reply of the `chat-completions` route, as the OpenAI SDK returns it. */
export type OpenAIChatReply = ChatCompletion | ChatCompletionMessage;
/** A reply of the `openai-responses` route, as the OpenAI SDK returns it. */
export type OpenAIResponsesReply = Response | ResponseOutputItem[];

/**
 * The request of a `chat-completions` step, typed for `openai.chat.completions.create`.
 * The object returned is `step.request` itself. Throws `RouteMismatchError` for a step of
 * another route, or a request without a model or with `stream: true`.
 */
export function openaiChat(step: RoutedRequest): ChatCompletionCreateParamsNonStreaming {
  return checked(step, "chat-completions") as unknown as ChatCompletionCreateParamsNonStreaming;
}

/**
 * The request of an `openai-responses` step, typed for `openai.responses.create`.
 * The object returned is `step.request` itself. Throws `RouteMismatchError` for a step of
 * another route, or a request with `stream: true`.
 */
export function openaiResponses(step: RoutedRequest): ResponseCreateParamsNonStreaming {
  return checked(step, "openai-responses") as unknown as ResponseCreateParamsNonStreaming;
}
