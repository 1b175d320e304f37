/**
 * The Anthropic SDK's request type for the `anthropic-messages` route (also exported by
 * `prompt-host/routes`, which needs both SDKs' types; this module needs only
 * `@anthropic-ai/sdk`'s):
 *
 *     const message = await anthropic.messages.create(anthropicMessages(step));
 *
 * The types are imported as types only: no run-time dependency on `@anthropic-ai/sdk`.
 */

import type {
  ContentBlock,
  Message,
  MessageCreateParamsNonStreaming,
} from "@anthropic-ai/sdk/resources/messages";

import { checked, type RoutedRequest } from "./route-check.js";

export type { RoutedRequest } from "./route-check.js";

/** A reply of the `anthropic-messages` route, as the Anthropic SDK returns it. */
export type AnthropicReply = Message | ContentBlock[];

/**
 * The request of an `anthropic-messages` step, typed for `anthropic.messages.create`.
 * The object returned is `step.request` itself. Throws `RouteMismatchError` for a step of
 * another route, or a request with `stream: true`.
 */
export function anthropicMessages(step: RoutedRequest): MessageCreateParamsNonStreaming {
  return checked(step, "anthropic-messages") as unknown as MessageCreateParamsNonStreaming;
}
