// The chat-completions route through the official OpenAI SDK: a conversation of six turns to
// a recording fake provider. Every body it received is prompt-host's request byte for byte;
// every request fits the SDK's ChatCompletionCreateParamsNonStreaming; replay equals each
// step. Bad input is refused with the server's exact message and appends nothing.

import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";

import OpenAI from "openai";
import { FAILED } from "prompt-host";
import { openaiChat } from "prompt-host/routes";

import { tempDir, withHost } from "./helpers.mjs";
import { CONTEXT_TEXT, FOREIGN, SCOPE, TOOLS, assertReceivedExactly, assertRefused, assertReplays, deploy, prompt, provider, replyTypeErrors, typeErrors } from "./routes.mjs";

const MODEL = "gpt-5";
const FALLBACK = "gpt-5-mini";

let n = 0;
// Every whole reply this file writes; the last test checks each against the SDK's `ChatCompletion`.
const written = [];
const completion = (message, { model = MODEL, finish = "stop", usage } = {}) => {
  const body = {
    id: `chatcmpl-${++n}`, object: "chat.completion", created: 1_780_000_000 + n, model,
    choices: [{ index: 0, message: { role: "assistant", content: null, refusal: null, annotations: [], ...message }, logprobs: null, finish_reason: finish }],
    usage: usage ?? { prompt_tokens: 100 * n, completion_tokens: 10 * n, total_tokens: 110 * n, prompt_tokens_details: { cached_tokens: 50 * n } },
  };
  written.push(body);
  return { body };
};
const call = (id, name, args) => ({ id, type: "function", function: { name, arguments: args } });
const WIRE_TOOLS = TOOLS.map((t) => ({ type: "function", function: t }));

const REPLIES = [
  // 1: reasoning and a call whose arguments are JSON text with a space, kept as sent.
  completion({ reasoning_content: "List first.", tool_calls: [call("call_1", "ls", '{"path": "."}')] }, { finish: "tool_calls" }),
  completion({ content: "README.md and src." }),
  // 2: two calls in one reply; one fails.
  completion({ content: "Reading both.", tool_calls: [call("call_2", "read_file", '{"path":"README.md"}'), call("call_3", "read_file", '{"path":"src"}')] }, { finish: "tool_calls" }),
  completion({ content: "README is a title; src is a directory.", reasoning_content: "src failed to read." }),
  // 3: after the working directory changed (recorded in the plain form, arguments an object).
  completion({ tool_calls: [call("call_4", "ls", '{"path":"."}')] }, { finish: "tool_calls" }),
  completion({ content: "sub has one file." }),
  // 4: the provider fails; the step is retried on the fallback model.
  { status: 503, body: { error: { message: "The server is overloaded.", type: "server_error", param: null, code: null } } },
  completion({ content: `I am ${FALLBACK}.` }, { model: FALLBACK }),
  // 5: reasoning alone (no text, no calls): sent back as content "", never null.
  completion({ reasoning_content: "Nothing to add." }, { usage: { prompt_tokens: 4000, completion_tokens: 7, total_tokens: 4007, prompt_tokens_details: { cached_tokens: 3900 } } }),
  completion({ content: "Bye." }),
];

test("chat-completions: six turns through the OpenAI SDK, byte for byte; SDK types; replay", () =>
  withHost(async (host) => {
    await deploy(host);
    const log = join(tempDir(), "chat.jsonl");
    const fake = await provider(REPLIES);
    const openai = new OpenAI({ baseURL: `${fake.origin}/v1`, apiKey: "test", maxRetries: 0 });
    const steps = [];
    const facts = { model: MODEL, cwd: "/repo" };
    const step = async (params) => {
      const r = await host.step({ session: log, scope: SCOPE, facts, ...params });
      steps.push(r);
      return r;
    };
    const create = (s) => fake.send(s, () => openai.chat.completions.create(openaiChat(s)));
    try {
      // Turn 1: no route given: chat-completions, as for any new log.
      let s = await step({ user: ["List the files."] });
      assert.deepEqual(s.route, {
        name: "chat-completions", model: MODEL, system_updates: "replace", reasoning: "omit", options: {},
        capabilities: { in_history: false, system: "first-message", reasoning: "reasoning-content", tool_error: "stated-in-content", cache_breakpoints: 0 },
      });
      assert.deepEqual(s.cache, { breakpoints: [], last_usage: null });
      const first = [{ role: "system", content: prompt("/repo") }, { role: "user", content: "List the files." }, { role: "user", content: CONTEXT_TEXT }];
      assert.deepEqual(s.request, { messages: first, tools: WIRE_TOOLS, model: MODEL });
      let reply = await create(s);
      await host.appendAssistant({ session: log, reply });
      await host.appendToolResult({ session: log, call_id: "call_1", content: "README.md\nsrc" });
      s = await step({});
      const turn1 = [
        ...first,
        // The reply's message as sent (content null, arguments' text unchanged); reasoning omitted.
        { role: "assistant", content: null, tool_calls: [call("call_1", "ls", '{"path": "."}')] },
        { role: "tool", content: "README.md\nsrc", tool_call_id: "call_1" },
      ];
      assert.deepEqual(s.request.messages, turn1);
      assert.deepEqual(s.cache.last_usage, { input_tokens: 100, output_tokens: 10, cached_input_tokens: 50 });
      reply = await create(s);
      // The reply as choices[0].message.
      await host.appendAssistant({ session: log, reply: reply.choices[0].message });

      // Turn 2: two calls; one result an error, stated in the content.
      s = await step({ user: ["Read them."] });
      reply = await create(s);
      await host.appendAssistant({ session: log, reply: reply.choices[0].message });
      await host.appendToolResult({ session: log, call_id: "call_2", content: "# Demo" });
      await host.appendToolResult({ session: log, call_id: "call_3", content: "src is a directory", is_error: true });
      s = await step({});
      const turn2 = [
        ...turn1,
        { role: "assistant", content: "README.md and src." },
        { role: "user", content: "Read them." },
        { role: "assistant", content: "Reading both.", tool_calls: [call("call_2", "read_file", '{"path":"README.md"}'), call("call_3", "read_file", '{"path":"src"}')] },
        { role: "tool", content: "# Demo", tool_call_id: "call_2" },
        { role: "tool", content: "Error: src is a directory", tool_call_id: "call_3" },
      ];
      assert.deepEqual(s.request.messages, turn2);
      reply = await create(s);
      await host.appendAssistant({ session: log, reply });

      // Turn 3: another working directory changes the system prompt; chat-completions'
      // default replaces it in the first message (no second system message).
      facts.cwd = "/repo/sub";
      s = await step({ user: ["Go to sub."] });
      assert.equal(s.commits, 1);
      assert.equal(s.request.messages[0].content, prompt("/repo/sub"));
      assert.deepEqual(s.request.messages.filter((m) => m.role === "system").length, 1);
      assert.deepEqual(s.request.messages.slice(1), [
        ...turn2.slice(1),
        { role: "assistant", content: "README is a title; src is a directory." },
        { role: "user", content: "Go to sub." },
      ]);
      reply = await create(s);
      // The plain form: arguments as an object (serialised compactly in the request).
      const args = JSON.parse(reply.choices[0].message.tool_calls[0].function.arguments);
      await host.appendAssistant({ session: log, tool_calls: [{ id: "call_4", name: "ls", arguments: args }], usage: { input_tokens: 42, output_tokens: 3 } });
      await host.appendToolResult({ session: log, call_id: "call_4", content: "notes.txt" });
      s = await step({});
      assert.deepEqual(s.request.messages.slice(-2), [
        { role: "assistant", tool_calls: [call("call_4", "ls", '{"path":"."}')] },
        { role: "tool", content: "notes.txt", tool_call_id: "call_4" },
      ]);
      assert.deepEqual(s.cache.last_usage, { input_tokens: 42, output_tokens: 3 });
      reply = await create(s);
      await host.appendAssistant({ session: log, reply });

      // Turn 4: the provider fails (no retry inside the SDK: maxRetries 0); the step is
      // retried on the fallback model: a new step number, the same messages.
      const failed = await step({ user: ["Which model are you?"] });
      await assert.rejects(create(failed), (e) => e instanceof OpenAI.APIError && e.status === 503);
      const retried = await host.retry({ session: log, facts: { ...facts, model: FALLBACK } });
      steps.push(retried);
      assert.equal(retried.step, failed.step + 1);
      assert.equal(retried.request.model, FALLBACK);
      assert.equal(retried.route.model, FALLBACK);
      assert.deepEqual(retried.request.messages, failed.request.messages);
      reply = await create(retried);
      assert.equal(reply.choices[0].message.content, `I am ${FALLBACK}.`);
      await host.appendAssistant({ session: log, reply });

      // Turn 5: the log's route and model continue (the model fact names the fallback now).
      facts.model = FALLBACK;
      s = await step({ user: ["Think, then answer."] });
      assert.equal(s.route.name, "chat-completions");
      reply = await create(s);
      await host.appendAssistant({ session: log, reply });

      // Turn 6
      s = await step({ user: ["Thanks."] });
      assert.deepEqual(s.cache.last_usage, { input_tokens: 4000, output_tokens: 7, cached_input_tokens: 3900 });
      assert.deepEqual(s.request.messages.slice(-2), [{ role: "assistant", content: "" }, { role: "user", content: "Thanks." }]);
      reply = await create(s);
      await host.appendAssistant({ session: log, reply });
      assert.equal(fake.fake.left, 0);

      // What the provider received: prompt-host's requests, byte for byte, the failed call
      // included (it carried the step that was then retried).
      assert.equal(fake.calls.length, REPLIES.length);
      assertReceivedExactly(fake.calls, "/v1/chat/completions");
      assert.equal(fake.calls[6].step, failed);
      assert.equal(fake.calls[7].step, retried);
      await assertReplays(host, log, steps);
      assert.deepEqual(typeErrors(steps.map((x) => x.request), "openai/resources/chat/completions", "ChatCompletionCreateParamsNonStreaming"), []);
    } finally {
      await fake.close();
    }
  }));

test("chat-completions: bad replies are refused with the server's message, nothing appended", () =>
  withHost(async (host) => {
    await deploy(host);
    const log = join(tempDir(), "chat-bad.jsonl");
    await host.step({ session: log, scope: SCOPE, facts: { model: MODEL, cwd: "/repo" }, user: ["List."] });
    const prefix = `session log ${log}: `;
    const arrayText = { kind: "conversation", code: FAILED, message: `${prefix}tool call 0 ("ls"): its arguments are JSON text of an array, not of an object` };
    // Arguments that are the JSON text of an array: in a completion, and in the plain form.
    await assertRefused(log, host.appendAssistant({ session: log, reply: completion({ tool_calls: [call("x", "ls", '["src"]')] }).body }), arrayText);
    await assertRefused(log, host.appendAssistant({ session: log, tool_calls: [{ id: "x", name: "ls", arguments: '["src"]' }] }), arrayText);
    // A reply of another route's shape: an Anthropic Message.
    const { anthropic } = FOREIGN;
    await assertRefused(log, host.appendAssistant({ session: log, reply: anthropic }), {
      kind: "conversation", message: `${prefix}route chat-completions cannot read this reply: it is shaped like a reply of the anthropic-messages route`,
    });
    await assertRefused(log, host.appendAssistant({ session: log, reply: anthropic.content }), {
      kind: "conversation", message: `${prefix}route chat-completions cannot read this reply: it is shaped like a reply of the anthropic-messages route`,
    });
    // A tool call id used before.
    const seq = await host.appendAssistant({ session: log, reply: completion({ tool_calls: [call("call_1", "ls", "{}")] }).body });
    await host.appendToolResult({ session: log, call_id: "call_1", content: "x" });
    await host.step({ session: log, scope: SCOPE, facts: { model: MODEL, cwd: "/repo" } });
    await assertRefused(log, host.appendAssistant({ session: log, reply: completion({ tool_calls: [call("call_1", "ls", "{}")] }).body }), {
      kind: "conversation", message: `${prefix}tool call id "call_1" is already used (by the assistant message at seq ${seq})`,
    });
    await assertRefused(log, host.appendAssistant({ session: log, tool_calls: [{ id: "call_1", name: "ls", arguments: {} }] }), {
      kind: "conversation", message: `${prefix}tool call id "call_1" is already used (by the assistant message at seq ${seq})`,
    });
    // The log still steps, and replays.
    const next = await host.step({ session: log, scope: SCOPE, facts: { model: MODEL, cwd: "/repo" }, user: ["Again."] });
    assert.deepEqual(await host.request({ session: log }), { step: next.step, request: next.request });
  }));

test("chat-completions asked for in-history updates and reasoning \"send\" (DeepSeek's thinking mode)", () =>
  withHost(async (host) => {
    await deploy(host);
    const log = join(tempDir(), "chat-send.jsonl");
    const fake = await provider([
      completion({ reasoning_content: "Look first.", tool_calls: [call("call_1", "ls", '{"path":"."}')] }, { model: "deepseek-v4", finish: "tool_calls" }),
      completion({ content: "Two entries.", reasoning_content: "Counted." }, { model: "deepseek-v4" }),
      completion({ content: "Moved." }, { model: "deepseek-v4" }),
    ]);
    const openai = new OpenAI({ baseURL: `${fake.origin}/v1`, apiKey: "test", maxRetries: 0 });
    const route = { name: "chat-completions", system_updates: "in-history", reasoning: "send", options: { temperature: 0.2 } };
    const facts = { model: "deepseek-v4", cwd: "/repo" };
    const steps = [];
    const step = async (params) => {
      const r = await host.step({ session: log, scope: SCOPE, facts, ...params });
      steps.push(r);
      return r;
    };
    try {
      let s = await step({ route, user: ["List."] });
      assert.deepEqual([s.route.system_updates, s.route.reasoning, s.route.options], ["in-history", "send", { temperature: 0.2 }]);
      assert.equal(s.request.temperature, 0.2);
      await host.appendAssistant({ session: log, reply: await fake.send(s, () => openai.chat.completions.create(openaiChat(s))) });
      await host.appendToolResult({ session: log, call_id: "call_1", content: "a\nb" });
      s = await step({});
      // Reasoning goes back on the turn that made tool calls.
      assert.deepEqual(s.request.messages.at(-2), { role: "assistant", content: null, tool_calls: [call("call_1", "ls", '{"path":"."}')], reasoning_content: "Look first." });
      await host.appendAssistant({ session: log, reply: await fake.send(s, () => openai.chat.completions.create(openaiChat(s))) });
      // A step without a route carries on with the log's route, options and reasoning; the
      // system-update mode is the route's own unless asked for (per step).
      assert.deepEqual([s.route.system_updates, s.route.reasoning, s.route.options], ["replace", "send", { temperature: 0.2 }]);
      facts.cwd = "/repo/sub";
      s = await step({ user: ["Go to sub."], in_history: true });
      assert.deepEqual([s.route.system_updates, s.route.reasoning, s.route.options], ["in-history", "send", { temperature: 0.2 }]);
      // The update stands where the conversation is.
      assert.equal(s.request.messages[0].content, prompt("/repo"));
      const systems = s.request.messages.filter((m) => m.role === "system").map((m) => m.content);
      assert.deepEqual(systems, [prompt("/repo"), prompt("/repo/sub")]);
      assert.deepEqual(s.request.messages.slice(-3).map((m) => m.role), ["assistant", "system", "user"]);
      // Not on a turn without tool calls.
      assert.deepEqual(s.request.messages.at(-3), { role: "assistant", content: "Two entries." });
      await host.appendAssistant({ session: log, reply: await fake.send(s, () => openai.chat.completions.create(openaiChat(s))) });
      assertReceivedExactly(fake.calls, "/v1/chat/completions");
      await assertReplays(host, log, steps);
      // OpenAI's types have no reasoning_content (docs/routes.md): the one thing they refuse.
      const errors = typeErrors(steps.map((x) => x.request), "openai/resources/chat/completions", "ChatCompletionCreateParamsNonStreaming");
      assert.equal(errors.length, 2, errors.join("\n"));
      for (const e of errors) assert.match(e, /'"reasoning_content"' does not exist in type 'ChatCompletionAssistantMessageParam'/);
    } finally {
      await fake.close();
    }
  }));

test("chat-completions: every reply this file writes fits the SDK's ChatCompletion type", () => {
  assert.ok(written.length >= REPLIES.length - 1, `${written.length} replies`);
  assert.deepEqual(replyTypeErrors(written), []);
});
