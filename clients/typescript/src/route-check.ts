/**
 * What the route accessors (`prompt-host/routes`, `prompt-host/openai`,
 * `prompt-host/anthropic`) share: the check that a step was prepared for the accessor's route.
 */

import { RouteMismatchError } from "./errors.js";
import type { Request, RouteName } from "./types.js";

/** What the accessors read: a `StepResult`, or any value with its `route` and `request`. */
export interface RoutedRequest {
  route: { name: RouteName };
  request: Request;
}

const ACCESSOR: Record<RouteName, string> = {
  "chat-completions": "openaiChat",
  "anthropic-messages": "anthropicMessages",
  "openai-responses": "openaiResponses",
};

/** The request of `step`, checked to be of route `name`; throws `RouteMismatchError`. */
export function checked(step: RoutedRequest, name: RouteName): Record<string, unknown> {
  const accessor = ACCESSOR[name];
  const actual: unknown = step?.route?.name;
  if (actual !== name) {
    const other = typeof actual === "string" && Object.hasOwn(ACCESSOR, actual) ? ACCESSOR[actual as RouteName] : undefined;
    const what = typeof actual === "string" ? `is for route ${JSON.stringify(actual)}` : "has no route (a StepResult has one)";
    throw new RouteMismatchError(
      `${accessor}: the step's request ${what}, not "${name}"; ${other ? `read it with ${other}(step), or ` : ""}ask for route "${name}" in step or retry`,
      name,
      typeof actual === "string" ? actual : undefined,
    );
  }
  const request: unknown = step.request;
  if (request === null || typeof request !== "object" || Array.isArray(request)) {
    throw new RouteMismatchError(`${accessor}: the step has no request object`, name, name);
  }
  const body = request as Record<string, unknown>;
  if (typeof body.model !== "string") {
    throw new RouteMismatchError(
      `${accessor}: the request names no model; give the "model" fact or the route's "model"`,
      name,
      name,
    );
  }
  if (body.stream === true) {
    throw new RouteMismatchError(
      `${accessor}: the request streams (the route's option "stream" is true); the accessors describe non-streaming requests`,
      name,
      name,
    );
  }
  return body;
}
