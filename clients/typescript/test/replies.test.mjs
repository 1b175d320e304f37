// The check of provider replies against the SDKs' response types (`replyTypeErrors` in
// routes.mjs), which every reply the route tests serve or record goes through: what it
// refuses, in the compiler's own words (the compiler and the SDKs are those of
// package-lock.json), and that the route tests' fake provider never starts with a reply it
// refuses.

import { test } from "node:test";
import assert from "node:assert/strict";

import { FOREIGN, provider, replyTypeErrors } from "./routes.mjs";

const copy = (value) => JSON.parse(JSON.stringify(value));

test("the replies of another route's shape the route tests send fit their SDK's types", () => {
  assert.deepEqual(replyTypeErrors([FOREIGN.chat, FOREIGN.anthropic, FOREIGN.responses]), []);
});

test("a missing field, an unknown literal, a value of another type and an undeclared key are refused", () => {
  const noCreated = copy(FOREIGN.chat);
  delete noCreated.created;
  const done = copy(FOREIGN.chat);
  done.choices[0].finish_reason = "done";
  const misspelt = copy(FOREIGN.anthropic);
  misspelt.stop_sequense = null;
  const textTime = copy(FOREIGN.responses);
  textTime.created_at = "1";
  const bareUsage = copy(FOREIGN.anthropic);
  bareUsage.usage = { input_tokens: 1, output_tokens: 1 };
  // DeepSeek's reasoning_content is the one key allowed beyond the SDK's types.
  const reasoning = copy(FOREIGN.chat);
  reasoning.choices[0].message.reasoning_content = "Think.";
  const otherReasoning = copy(reasoning);
  otherReasoning.choices[0].message.reasoning = "Think.";
  assert.deepEqual(replyTypeErrors([noCreated, done, misspelt, textTime, bareUsage, reasoning, otherReasoning]), [
    `reply 0: Property 'created' is missing in type '{ id: string; object: "chat.completion"; model: string; choices: { index: number; message: { role: "assistant"; content: string; refusal: null; }; finish_reason: "stop"; logprobs: null; }[]; }' but required in type 'ChatCompletion'.`,
    `reply 1: Type '"done"' is not assignable to type '"stop" | "length" | "tool_calls" | "content_filter" | "function_call"'.`,
    `reply 2: Object literal may only specify known properties, and '"stop_sequense"' does not exist in type 'Message'.`,
    "reply 3: Type 'string' is not assignable to type 'number'.",
    "reply 4: Type '{ input_tokens: number; output_tokens: number; }' is missing the following properties from type 'Usage': cache_creation, cache_creation_input_tokens, cache_read_input_tokens, inference_geo, and 4 more.",
    `reply 6: Object literal may only specify known properties, and '"reasoning"' does not exist in type 'ChatCompletionMessage'.`,
  ]);
});

test("a body of no provider's shape is refused", () => {
  assert.deepEqual(replyTypeErrors([FOREIGN.chat, { role: "assistant", content: "hi" }]), [
    'reply 1: not a provider reply (no "object": "chat.completion" or "response", no "type": "message")',
  ]);
});

test("the route tests' fake provider does not start with a reply the check refuses", async () => {
  const bad = copy(FOREIGN.responses);
  delete bad.tools;
  await assert.rejects(provider([{ body: FOREIGN.chat }, { status: 503, body: { error: {} } }, { body: bad }]), {
    message:
      "a canned reply does not fit the SDK's response type:\n" +
      `reply 2: Property 'tools' is missing in type '{ id: string; object: "response"; created_at: number; model: "gpt-5"; status: "completed"; error: null; incomplete_details: null; access_programs: null; instructions: null; metadata: null; temperature: null; top_p: null; parallel_tool_calls: true; tool_choice: "auto"; output: { ...; }[]; }' but required in type 'Omit<Response, "output_text">'.`,
  });
});
