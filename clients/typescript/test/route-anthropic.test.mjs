// The anthropic-messages route through the official Anthropic SDK: a conversation of six
// turns with Claude Opus 4.8 to a recording fake provider. Every body it received is
// prompt-host's request byte for byte; every request fits the SDK's
// MessageCreateParamsNonStreaming; replay equals each step. Thinking blocks go back with
// their signatures, a failed call is `is_error`, a system-prompt change is a mid-conversation
// system message, cache breakpoints and usage are reported. Bad input is refused with the
// server's exact message and appends nothing.

import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";

import Anthropic from "@anthropic-ai/sdk";
import { FAILED } from "prompt-host";
import { anthropicMessages } from "prompt-host/routes";

import { tempDir, withHost } from "./helpers.mjs";
import { CONTEXT_TEXT, FOREIGN, SCOPE, TOOLS, USAGE_NULLS, assertReceivedExactly, assertRefused, assertReplays, deploy, prompt, provider, replyTypeErrors, typeErrors } from "./routes.mjs";

const MODEL = "claude-opus-4-8";
const EPHEMERAL = { type: "ephemeral" };

let n = 0;
// Every whole reply this file writes; the last test checks each against the SDK's `Message`.
const written = [];
const message = (content, { stop = "end_turn", usage } = {}) => {
  const body = {
    id: `msg_0${++n}`, type: "message", role: "assistant", model: MODEL, content, stop_reason: stop, stop_sequence: null,
    stop_details: null, container: null, diagnostics: null,
    usage: { ...USAGE_NULLS, ...(usage ?? { input_tokens: 10 * n, cache_creation_input_tokens: 100 * n, cache_read_input_tokens: 1000 * n, output_tokens: n }) },
  };
  written.push(body);
  return { body };
};
const text = (t) => ({ type: "text", text: t, citations: null });
// What goes back: the block as the provider sent it, without its null members.
const sentText = (t) => ({ type: "text", text: t });
const toolUse = (id, name, input) => ({ type: "tool_use", id, name, input, caller: { type: "direct" } });
const thinking = { type: "thinking", thinking: "List the directory first.", signature: "c2lnbmF0dXJlLW9mLXRoZS10aGlua2luZw==" };
const redacted = { type: "redacted_thinking", data: "RW5jcnlwdGVkIHRoaW5raW5n" };
const WIRE_TOOLS = TOOLS.map((t) => ({ name: t.name, description: t.description, input_schema: t.parameters }));

const REPLIES = [
  // 1: thinking (with its signature) and a tool call.
  message([thinking, toolUse("toolu_01", "ls", { path: "." })], { stop: "tool_use", usage: { input_tokens: 20, cache_creation_input_tokens: 300, cache_read_input_tokens: 0, output_tokens: 15 } }),
  message([text("README.md and src.")]),
  // 2: two calls; one fails.
  message([text("Reading both."), toolUse("toolu_02", "read_file", { path: "README.md" }), toolUse("toolu_03", "read_file", { path: "src" })], { stop: "tool_use" }),
  message([redacted, text("README is a title; src is a directory.")]),
  // 3: after the working directory changed (recorded in the plain form, arguments as text).
  message([text("Listing."), toolUse("toolu_04", "ls", { path: "." })], { stop: "tool_use" }),
  message([text("sub has one file.")]),
  // 4: overloaded; the step is retried with other options.
  { status: 529, body: { type: "error", error: { type: "overloaded_error", message: "Overloaded" } } },
  message([text("I am Claude.")]),
  // 5, 6
  message([text("You're welcome.")], { usage: { input_tokens: 7, cache_creation_input_tokens: 0, cache_read_input_tokens: 4000, output_tokens: 4 } }),
  message([text("Bye.")]),
];

test("anthropic-messages: six turns through the Anthropic SDK, byte for byte; SDK types; replay", () =>
  withHost(async (host) => {
    await deploy(host);
    const log = join(tempDir(), "anthropic.jsonl");
    const fake = await provider(REPLIES);
    const anthropic = new Anthropic({ baseURL: fake.origin, apiKey: "test", maxRetries: 0 });
    const steps = [];
    const facts = { model: MODEL, cwd: "/repo" };
    const step = async (params) => {
      const r = await host.step({ session: log, scope: SCOPE, facts, ...params });
      steps.push(r);
      return r;
    };
    const create = (s) => fake.send(s, () => anthropic.messages.create(anthropicMessages(s)));
    const system = (cwd) => [{ type: "text", text: prompt(cwd), cache_control: EPHEMERAL }];
    try {
      // Turn 1
      let s = await step({ route: { name: "anthropic-messages", options: { max_tokens: 1024 } }, user: ["List the files."] });
      assert.deepEqual(s.route, {
        name: "anthropic-messages", model: MODEL, system_updates: "in-history", reasoning: "send", options: { max_tokens: 1024 },
        capabilities: { in_history: true, system: "system", reasoning: "thinking-blocks", tool_error: "is-error", cache_breakpoints: 4 },
      });
      assert.deepEqual(s.request, {
        system: system("/repo"),
        messages: [{ role: "user", content: [{ type: "text", text: "List the files." }, { type: "text", text: CONTEXT_TEXT, cache_control: EPHEMERAL }] }],
        tools: WIRE_TOOLS, model: MODEL, max_tokens: 1024,
      });
      assert.deepEqual(s.cache, { breakpoints: [{ at: "system", index: 0 }, { at: "message", index: 0 }], last_usage: null });
      let reply = await create(s);
      await host.appendAssistant({ session: log, reply });
      await host.appendToolResult({ session: log, call_id: "toolu_01", content: "README.md\nsrc" });
      s = await step({});
      const turn1 = [
        { role: "user", content: [{ type: "text", text: "List the files." }, { type: "text", text: CONTEXT_TEXT }] },
        // The content blocks exactly as sent: the thinking block keeps its signature.
        { role: "assistant", content: [thinking, toolUse("toolu_01", "ls", { path: "." })] },
      ];
      assert.deepEqual(s.request.messages, [...turn1, { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_01", content: "README.md\nsrc", cache_control: EPHEMERAL }] }]);
      assert.deepEqual(s.request.system, system("/repo"));
      assert.deepEqual(s.cache.breakpoints, [{ at: "system", index: 0 }, { at: "message", index: 2 }]);
      // Anthropic counts input apart from cache reads and writes; prompt-host's input_tokens includes them.
      assert.deepEqual(s.cache.last_usage, { input_tokens: 320, output_tokens: 15, cached_input_tokens: 0, cache_creation_input_tokens: 300 });
      reply = await create(s);
      // The content blocks alone, with usage given beside them.
      await host.appendAssistant({ session: log, reply: reply.content, usage: { input_tokens: 555, output_tokens: 5 } });

      // Turn 2: two calls in one reply; the results go in one user turn, one an error.
      s = await step({ user: ["Read them."] });
      assert.deepEqual(s.cache.last_usage, { input_tokens: 555, output_tokens: 5 });
      reply = await create(s);
      await host.appendAssistant({ session: log, reply: { role: reply.role, content: reply.content } });
      await host.appendToolResult({ session: log, call_id: "toolu_02", content: "# Demo" });
      await host.appendToolResult({ session: log, call_id: "toolu_03", content: "src is a directory", is_error: true });
      s = await step({});
      const turn2 = [
        ...turn1,
        { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_01", content: "README.md\nsrc" }] },
        { role: "assistant", content: [sentText("README.md and src.")] },
        { role: "user", content: [{ type: "text", text: "Read them." }] },
        { role: "assistant", content: [sentText("Reading both."), toolUse("toolu_02", "read_file", { path: "README.md" }), toolUse("toolu_03", "read_file", { path: "src" })] },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "toolu_02", content: "# Demo" },
            { type: "tool_result", tool_use_id: "toolu_03", content: "src is a directory", is_error: true, cache_control: EPHEMERAL },
          ],
        },
      ];
      assert.deepEqual(s.request.messages, turn2);
      reply = await create(s);
      await host.appendAssistant({ session: log, reply });

      // Turn 3: the working directory changes the system prompt. On Claude Opus 4.8 the
      // update is a system message after the user input that follows it; `system` stays (the
      // cache prefix).
      facts.cwd = "/repo/sub";
      s = await step({ user: ["Go to sub."] });
      assert.equal(s.commits, 1);
      assert.deepEqual(s.request.system, system("/repo"));
      const turn3 = [
        ...turn2.slice(0, -1),
        { role: "user", content: turn2.at(-1).content.map(({ cache_control, ...block }) => block) },
        { role: "assistant", content: [redacted, sentText("README is a title; src is a directory.")] },
      ];
      assert.deepEqual(s.request.messages, [
        ...turn3,
        { role: "user", content: [{ type: "text", text: "Go to sub.", cache_control: EPHEMERAL }] },
        { role: "system", content: prompt("/repo/sub") },
      ]);
      assert.deepEqual(s.cache.breakpoints, [{ at: "system", index: 0 }, { at: "message", index: 8 }]);
      reply = await create(s);
      // The plain form: arguments as JSON text, sent as the tool_use input object.
      const use = reply.content.find((b) => b.type === "tool_use");
      await host.appendAssistant({ session: log, text: "Listing.", tool_calls: [{ id: use.id, name: use.name, arguments: JSON.stringify(use.input, null, 1) }] });
      await host.appendToolResult({ session: log, call_id: "toolu_04", content: "notes.txt" });
      s = await step({});
      assert.deepEqual(s.request.messages.slice(turn3.length), [
        { role: "user", content: [{ type: "text", text: "Go to sub." }] },
        { role: "system", content: prompt("/repo/sub") },
        { role: "assistant", content: [{ type: "text", text: "Listing." }, { type: "tool_use", id: "toolu_04", name: "ls", input: { path: "." } }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_04", content: "notes.txt", cache_control: EPHEMERAL }] },
      ]);
      reply = await create(s);
      await host.appendAssistant({ session: log, reply });

      // Turn 4: overloaded (529; maxRetries 0); retried with other options.
      const failed = await step({ user: ["Who are you?"] });
      await assert.rejects(create(failed), (e) => e instanceof Anthropic.APIError && e.status === 529);
      const retried = await host.retry({ session: log, facts, route: { name: "anthropic-messages", options: { max_tokens: 2048, stop_sequences: ["END"] } } });
      steps.push(retried);
      assert.equal(retried.step, failed.step + 1);
      assert.deepEqual(retried.route.options, { max_tokens: 2048, stop_sequences: ["END"] });
      const { max_tokens, stop_sequences, ...same } = retried.request;
      assert.deepEqual([max_tokens, stop_sequences], [2048, ["END"]]);
      assert.deepEqual({ ...same, max_tokens: 1024 }, failed.request);
      assert.deepEqual(retried.cache, failed.cache);
      reply = await create(retried);
      await host.appendAssistant({ session: log, reply });

      // Turn 5: the options carry on.
      s = await step({ user: ["Thanks."] });
      assert.deepEqual([s.request.max_tokens, s.request.stop_sequences], [2048, ["END"]]);
      reply = await create(s);
      await host.appendAssistant({ session: log, reply });

      // Turn 6
      s = await step({ user: ["Bye."] });
      assert.deepEqual(s.cache.last_usage, { input_tokens: 4007, output_tokens: 4, cached_input_tokens: 4000, cache_creation_input_tokens: 0 });
      assert.equal(s.cache.breakpoints.length, 2);
      const marked = s.request.messages[s.cache.breakpoints[1].index].content.at(-1);
      assert.deepEqual(marked, { type: "text", text: "Bye.", cache_control: EPHEMERAL });
      assert.equal(JSON.stringify(s.request).split('"cache_control"').length - 1, 2);
      reply = await create(s);
      await host.appendAssistant({ session: log, reply });
      assert.equal(fake.fake.left, 0);

      assert.equal(fake.calls.length, REPLIES.length);
      assertReceivedExactly(fake.calls, "/v1/messages");
      assert.equal(fake.calls[6].step, failed);
      assert.equal(fake.calls[7].step, retried);
      await assertReplays(host, log, steps);
      assert.deepEqual(typeErrors(steps.map((x) => x.request), "@anthropic-ai/sdk/resources/messages", "MessageCreateParamsNonStreaming"), []);
    } finally {
      await fake.close();
    }
  }));

test("anthropic-messages on a model without mid-conversation system messages: the update replaces `system`", () =>
  withHost(async (host) => {
    await deploy(host);
    const log = join(tempDir(), "anthropic-sonnet.jsonl");
    const facts = { model: "claude-sonnet-4-5", cwd: "/repo" };
    let s = await host.step({ session: log, scope: SCOPE, facts, route: { name: "anthropic-messages", options: { max_tokens: 512 }, cache: false }, user: ["hi"] });
    assert.equal(s.route.capabilities.in_history, false);
    assert.equal(s.route.system_updates, "replace");
    assert.deepEqual(s.cache.breakpoints, []);
    assert.equal(JSON.stringify(s.request).includes("cache_control"), false);
    await host.appendAssistant({ session: log, reply: message([text("Hello.")]).body });
    facts.cwd = "/repo/sub";
    s = await host.step({ session: log, scope: SCOPE, facts, user: ["Go to sub."] });
    assert.deepEqual(s.request.system, [{ type: "text", text: prompt("/repo/sub") }]);
    assert.deepEqual(s.request.messages.map((m) => m.role), ["user", "assistant", "user"]);
    assert.deepEqual(typeErrors([s.request], "@anthropic-ai/sdk/resources/messages", "MessageCreateParamsNonStreaming"), []);
  }));

test("anthropic-messages: bad replies are refused with the server's message, nothing appended", () =>
  withHost(async (host) => {
    await deploy(host);
    const log = join(tempDir(), "anthropic-bad.jsonl");
    const facts = { model: MODEL, cwd: "/repo" };
    await host.step({ session: log, scope: SCOPE, facts, route: { name: "anthropic-messages", options: { max_tokens: 1024 } }, user: ["List."] });
    const prefix = `session log ${log}: `;
    const arrayText = { kind: "conversation", code: FAILED, message: `${prefix}tool call 0 ("ls"): its arguments are JSON text of an array, not of an object` };
    // Arguments that are the JSON text of an array: a tool_use input given as text, and the plain form.
    await assertRefused(log, host.appendAssistant({ session: log, reply: message([toolUse("x", "ls", '["src"]')]).body }), arrayText);
    await assertRefused(log, host.appendAssistant({ session: log, tool_calls: [{ id: "x", name: "ls", arguments: '["src"]' }] }), arrayText);
    // Replies of another route's shape: a chat completion, its message, a Responses response.
    const { chat, responses } = FOREIGN;
    const shaped = (other) => ({ kind: "conversation", message: `${prefix}route anthropic-messages cannot read this reply: it is shaped like a reply of the ${other} route` });
    await assertRefused(log, host.appendAssistant({ session: log, reply: chat }), shaped("chat-completions"));
    await assertRefused(log, host.appendAssistant({ session: log, reply: chat.choices[0].message }), shaped("chat-completions"));
    await assertRefused(log, host.appendAssistant({ session: log, reply: responses }), shaped("openai-responses"));
    await assertRefused(log, host.appendAssistant({ session: log, reply: responses.output }), shaped("openai-responses"));
    // A tool call id used before.
    const seq = await host.appendAssistant({ session: log, reply: message([thinking, toolUse("toolu_01", "ls", {})], { stop: "tool_use" }).body });
    await host.appendToolResult({ session: log, call_id: "toolu_01", content: "x" });
    await host.step({ session: log, scope: SCOPE, facts });
    await assertRefused(log, host.appendAssistant({ session: log, reply: message([toolUse("toolu_01", "ls", {})], { stop: "tool_use" }).body }), {
      kind: "conversation", message: `${prefix}tool call id "toolu_01" is already used (by the assistant message at seq ${seq})`,
    });
    const next = await host.step({ session: log, scope: SCOPE, facts, user: ["Again."] });
    assert.deepEqual(await host.request({ session: log }), { step: next.step, request: next.request });
  }));

test("anthropic-messages: the SDK moves `workspace_id` and `user_profile_id` from the body into headers", () =>
  withHost(async (host) => {
    // The one difference between prompt-host's request and the body the Anthropic SDK sends:
    // `messages.create` takes these two keys out of the body and sends them as headers.
    await deploy(host);
    const log = join(tempDir(), "anthropic-workspace.jsonl");
    const fake = await provider([message([text("Hello.")])]);
    const anthropic = new Anthropic({ baseURL: fake.origin, apiKey: "test", maxRetries: 0 });
    try {
      const s = await host.step({
        session: log, scope: SCOPE, facts: { model: MODEL, cwd: "/repo" }, user: ["hi"],
        route: { name: "anthropic-messages", options: { max_tokens: 64, workspace_id: "wrkspc_01" } },
      });
      assert.equal(s.request.workspace_id, "wrkspc_01");
      await fake.send(s, () => anthropic.messages.create(anthropicMessages(s)));
      const [{ received }] = fake.calls;
      const { workspace_id, ...body } = s.request;
      assert.equal(received.body.toString("utf8"), JSON.stringify(body));
      assert.equal(received.headers["anthropic-workspace-id"], workspace_id);
    } finally {
      await fake.close();
    }
  }));

const HAND_MADE = [{ type: "text", text: "Cached by hand.", cache_control: EPHEMERAL }];

/** A step after a hand-made reply whose block carries a cache_control, with `cache` on or off. */
async function afterHandMadeReply(host, cache) {
  await deploy(host);
  const facts = { model: MODEL, cwd: "/repo" };
  const log = join(tempDir(), `anthropic-cache-${cache}.jsonl`);
  await host.step({ session: log, scope: SCOPE, facts, route: { name: "anthropic-messages", options: { max_tokens: 64 }, cache }, user: ["hi"] });
  await host.appendAssistant({ session: log, reply: HAND_MADE });
  const s = await host.step({ session: log, scope: SCOPE, facts, user: ["again"] });
  assert.deepEqual(await host.request({ session: log }), { step: s.step, request: s.request });
  return { s, marks: JSON.stringify(s.request).split('"cache_control"').length - 1 };
}

test("anthropic-messages with cache off: recorded blocks go back exactly, their cache_control too", () =>
  withHost(async (host) => {
    const { s, marks } = await afterHandMadeReply(host, false);
    assert.equal(marks, 1);
    assert.deepEqual(s.request.messages[1].content, HAND_MADE);
    assert.deepEqual(s.cache.breakpoints, []);
  }));

test(
  "anthropic-messages with cache on: a recorded block's cache_control is left out, the breakpoints are prompt-host's",
  () =>
    withHost(async (host) => {
      const { s, marks } = await afterHandMadeReply(host, true);
      assert.deepEqual(s.cache.breakpoints, [{ at: "system", index: 0 }, { at: "message", index: 2 }]);
      assert.deepEqual(s.request.messages[1].content, [{ type: "text", text: "Cached by hand." }]);
      assert.equal(marks, 2);
    }),
);

test("anthropic-messages: every reply this file writes fits the SDK's Message type", () => {
  assert.ok(written.length >= REPLIES.length - 1, `${written.length} replies`);
  assert.deepEqual(replyTypeErrors(written), []);
});
