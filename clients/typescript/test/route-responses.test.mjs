// The openai-responses route through the official OpenAI SDK: a conversation of six turns to a
// recording fake provider. Every body it received is prompt-host's request byte for byte;
// every request fits the SDK's ResponseCreateParamsNonStreaming; replay equals each step.
// Reasoning items go back exactly as received, a failed call's output is stated as an error,
// a system-prompt change is a `developer` message where the conversation stands. Bad input is
// refused with the server's exact message and appends nothing.

import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";

import OpenAI from "openai";
import { FAILED } from "prompt-host";
import { openaiResponses } from "prompt-host/routes";

import { tempDir, withHost } from "./helpers.mjs";
import { CONTEXT_TEXT, FOREIGN, SCOPE, TOOLS, assertReceivedExactly, assertRefused, assertReplays, deploy, prompt, provider, replyTypeErrors, typeErrors } from "./routes.mjs";

const MODEL = "gpt-5";
const FALLBACK = "gpt-5-mini";

let n = 0;
// Every whole reply this file writes; the last test checks each against the SDK's `Response`.
const written = [];
const response = (output, { model = MODEL, usage } = {}) => {
  const body = {
    id: `resp_0${++n}`, object: "response", created_at: 1_780_000_000 + n, status: "completed", error: null, incomplete_details: null,
    access_programs: null, instructions: null, metadata: null, temperature: null, top_p: null,
    model, output, parallel_tool_calls: true, tool_choice: "auto", tools: [],
    usage: usage ?? { input_tokens: 100 * n, input_tokens_details: { cached_tokens: 80 * n, cache_write_tokens: 0 }, output_tokens: 9 * n, output_tokens_details: { reasoning_tokens: n }, total_tokens: 109 * n },
  };
  written.push(body);
  return { body };
};
const say = (id, text) => ({ id, type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text, annotations: [], logprobs: [] }] });
const call = (id, callId, name, args) => ({ id, type: "function_call", status: "completed", call_id: callId, name, arguments: args });
const reasoning = (id, text) => ({ id, type: "reasoning", summary: [{ type: "summary_text", text }], encrypted_content: `gAAAA-${id}` });
const WIRE_TOOLS = TOOLS.map((t) => ({ type: "function", name: t.name, description: t.description, parameters: t.parameters, strict: false }));

const REPLIES = [
  // 1: a reasoning item and a call whose arguments are JSON text with a space.
  response([reasoning("rs_01", "List first."), call("fc_01", "call_1", "ls", '{"path": "."}')]),
  response([say("msg_01", "README.md and src.")]),
  // 2: two calls; one fails.
  response([call("fc_02", "call_2", "read_file", '{"path":"README.md"}'), call("fc_03", "call_3", "read_file", '{"path":"src"}')]),
  response([reasoning("rs_02", "src failed."), say("msg_02", "README is a title; src is a directory.")]),
  // 3: after the working directory changed (recorded in the plain form, arguments an object).
  response([say("msg_03", "Listing."), call("fc_04", "call_4", "ls", '{"path":"."}')]),
  response([say("msg_04", "sub has one file.")]),
  // 4: the provider fails; the step is retried on the fallback model.
  { status: 503, body: { error: { message: "The server is overloaded.", type: "server_error", param: null, code: null } } },
  response([say("msg_05", `I am ${FALLBACK}.`)], { model: FALLBACK }),
  // 5, 6
  response([reasoning("rs_03", "Be polite."), say("msg_06", "You're welcome.")], { model: FALLBACK, usage: { input_tokens: 3000, input_tokens_details: { cached_tokens: 2900, cache_write_tokens: 0 }, output_tokens: 12, output_tokens_details: { reasoning_tokens: 4 }, total_tokens: 3012 } }),
  response([say("msg_07", "Bye.")], { model: FALLBACK }),
];

test("openai-responses: six turns through the OpenAI SDK, byte for byte; SDK types; replay", () =>
  withHost(async (host) => {
    await deploy(host);
    const log = join(tempDir(), "responses.jsonl");
    const fake = await provider(REPLIES);
    const openai = new OpenAI({ baseURL: `${fake.origin}/v1`, apiKey: "test", maxRetries: 0 });
    const steps = [];
    const facts = { model: MODEL, cwd: "/repo" };
    const step = async (params) => {
      const r = await host.step({ session: log, scope: SCOPE, facts, ...params });
      steps.push(r);
      return r;
    };
    const create = (s) => fake.send(s, () => openai.responses.create(openaiResponses(s)));
    try {
      // Turn 1
      let s = await step({ route: "openai-responses", user: ["List the files."] });
      assert.deepEqual(s.route, {
        name: "openai-responses", model: MODEL, system_updates: "in-history", reasoning: "send", options: {},
        capabilities: { in_history: true, system: "instructions", reasoning: "reasoning-items", tool_error: "stated-in-content", cache_breakpoints: 0 },
      });
      const first = [{ role: "user", content: "List the files." }, { role: "user", content: CONTEXT_TEXT }];
      assert.deepEqual(s.request, { instructions: prompt("/repo"), input: first, tools: WIRE_TOOLS, model: MODEL });
      assert.deepEqual(s.cache, { breakpoints: [], last_usage: null });
      let reply = await create(s);
      await host.appendAssistant({ session: log, reply });
      await host.appendToolResult({ session: log, call_id: "call_1", content: "README.md\nsrc" });
      s = await step({});
      // The output items exactly as received: the reasoning item with the call it led to.
      const turn1 = [...first, reasoning("rs_01", "List first."), call("fc_01", "call_1", "ls", '{"path": "."}'), { type: "function_call_output", call_id: "call_1", output: "README.md\nsrc" }];
      assert.deepEqual(s.request.input, turn1);
      assert.deepEqual(s.cache.last_usage, { input_tokens: 100, output_tokens: 9, cached_input_tokens: 80 });
      reply = await create(s);
      // The output items alone.
      await host.appendAssistant({ session: log, reply: reply.output });

      // Turn 2: two calls; one result an error, stated in the output.
      s = await step({ user: ["Read them."] });
      reply = await create(s);
      await host.appendAssistant({ session: log, reply });
      await host.appendToolResult({ session: log, call_id: "call_2", content: "# Demo" });
      await host.appendToolResult({ session: log, call_id: "call_3", content: "src is a directory", is_error: true });
      s = await step({});
      const turn2 = [
        ...turn1,
        say("msg_01", "README.md and src."),
        { role: "user", content: "Read them." },
        call("fc_02", "call_2", "read_file", '{"path":"README.md"}'),
        call("fc_03", "call_3", "read_file", '{"path":"src"}'),
        { type: "function_call_output", call_id: "call_2", output: "# Demo" },
        { type: "function_call_output", call_id: "call_3", output: "Error: src is a directory" },
      ];
      assert.deepEqual(s.request.input, turn2);
      reply = await create(s);
      await host.appendAssistant({ session: log, reply });

      // Turn 3: the working directory changes the system prompt: `instructions` stays, the
      // update is a developer message where the conversation stands.
      facts.cwd = "/repo/sub";
      s = await step({ user: ["Go to sub."] });
      assert.equal(s.commits, 1);
      assert.equal(s.request.instructions, prompt("/repo"));
      const turn3 = [
        ...turn2,
        reasoning("rs_02", "src failed."),
        say("msg_02", "README is a title; src is a directory."),
        { role: "developer", content: prompt("/repo/sub") },
        { role: "user", content: "Go to sub." },
      ];
      assert.deepEqual(s.request.input, turn3);
      reply = await create(s);
      // The plain form: text, and arguments as an object (serialised compactly).
      const fc = reply.output.find((item) => item.type === "function_call");
      await host.appendAssistant({ session: log, text: reply.output_text, tool_calls: [{ id: fc.call_id, name: fc.name, arguments: JSON.parse(fc.arguments) }] });
      await host.appendToolResult({ session: log, call_id: "call_4", content: "notes.txt" });
      s = await step({});
      assert.deepEqual(s.request.input.slice(turn3.length), [
        { role: "assistant", content: "Listing." },
        { type: "function_call", call_id: "call_4", name: "ls", arguments: '{"path":"."}' },
        { type: "function_call_output", call_id: "call_4", output: "notes.txt" },
      ]);
      reply = await create(s);
      await host.appendAssistant({ session: log, reply });

      // Turn 4: the provider fails; retried on the fallback model.
      const failed = await step({ user: ["Which model are you?"] });
      await assert.rejects(create(failed), (e) => e instanceof OpenAI.APIError && e.status === 503);
      const retried = await host.retry({ session: log, facts: { ...facts, model: FALLBACK } });
      steps.push(retried);
      assert.equal(retried.step, failed.step + 1);
      assert.deepEqual({ ...retried.request, model: MODEL }, failed.request);
      assert.equal(retried.request.model, FALLBACK);
      reply = await create(retried);
      assert.equal(reply.output_text, `I am ${FALLBACK}.`);
      await host.appendAssistant({ session: log, reply });

      // Turn 5: reasoning "omit" leaves the reasoning items out (they stay in the log).
      facts.model = FALLBACK;
      s = await step({ user: ["Thanks."], route: { name: "openai-responses", reasoning: "omit" } });
      assert.equal(s.route.reasoning, "omit");
      assert.equal(s.request.input.filter((item) => item.type === "reasoning").length, 0);
      assert.equal(s.request.input.filter((item) => item.type === "function_call").length, 4);
      reply = await create(s);
      await host.appendAssistant({ session: log, reply });

      // Turn 6: back to the route's defaults: the reasoning items return, exactly as received.
      s = await step({ user: ["Bye."], route: "openai-responses" });
      assert.equal(s.route.reasoning, "send");
      assert.deepEqual(s.request.input.filter((item) => item.type === "reasoning"), [reasoning("rs_01", "List first."), reasoning("rs_02", "src failed."), reasoning("rs_03", "Be polite.")]);
      assert.deepEqual(s.cache.last_usage, { input_tokens: 3000, output_tokens: 12, cached_input_tokens: 2900 });
      reply = await create(s);
      await host.appendAssistant({ session: log, reply });
      assert.equal(fake.fake.left, 0);

      assert.equal(fake.calls.length, REPLIES.length);
      assertReceivedExactly(fake.calls, "/v1/responses");
      assert.equal(fake.calls[6].step, failed);
      assert.equal(fake.calls[7].step, retried);
      await assertReplays(host, log, steps);
      assert.deepEqual(typeErrors(steps.map((x) => x.request), "openai/resources/responses/responses", "ResponseCreateParamsNonStreaming"), []);
    } finally {
      await fake.close();
    }
  }));

test("openai-responses: bad replies are refused with the server's message, nothing appended", () =>
  withHost(async (host) => {
    await deploy(host);
    const log = join(tempDir(), "responses-bad.jsonl");
    const facts = { model: MODEL, cwd: "/repo" };
    await host.step({ session: log, scope: SCOPE, facts, route: "openai-responses", user: ["List."] });
    const prefix = `session log ${log}: `;
    const arrayText = { kind: "conversation", code: FAILED, message: `${prefix}tool call 0 ("ls"): its arguments are JSON text of an array, not of an object` };
    // Arguments that are the JSON text of an array: in a response, its output, the plain form.
    await assertRefused(log, host.appendAssistant({ session: log, reply: response([call("fc_x", "x", "ls", '["src"]')]).body }), arrayText);
    await assertRefused(log, host.appendAssistant({ session: log, reply: [call("fc_x", "x", "ls", '["src"]')] }), arrayText);
    await assertRefused(log, host.appendAssistant({ session: log, tool_calls: [{ id: "x", name: "ls", arguments: '["src"]' }] }), arrayText);
    // Replies of another route's shape.
    const shaped = (other) => ({ kind: "conversation", message: `${prefix}route openai-responses cannot read this reply: it is shaped like a reply of the ${other} route` });
    const { anthropic, chat } = FOREIGN;
    await assertRefused(log, host.appendAssistant({ session: log, reply: anthropic }), shaped("anthropic-messages"));
    await assertRefused(log, host.appendAssistant({ session: log, reply: anthropic.content }), shaped("anthropic-messages"));
    await assertRefused(log, host.appendAssistant({ session: log, reply: chat }), shaped("chat-completions"));
    // A tool call id used before.
    const seq = await host.appendAssistant({ session: log, reply: response([reasoning("rs_1", "x"), call("fc_1", "call_1", "ls", "{}")]).body });
    await host.appendToolResult({ session: log, call_id: "call_1", content: "x" });
    await host.step({ session: log, scope: SCOPE, facts });
    await assertRefused(log, host.appendAssistant({ session: log, reply: [call("fc_2", "call_1", "ls", "{}")] }), {
      kind: "conversation", message: `${prefix}tool call id "call_1" is already used (by the assistant message at seq ${seq})`,
    });
    const next = await host.step({ session: log, scope: SCOPE, facts, user: ["Again."] });
    assert.deepEqual(await host.request({ session: log }), { step: next.step, request: next.request });
  }));

test("openai-responses: every reply this file writes fits the SDK's Response type", () => {
  assert.ok(written.length >= REPLIES.length - 1, `${written.length} replies`);
  assert.deepEqual(replyTypeErrors(written), []);
});
