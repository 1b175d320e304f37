// Steps that cannot be prepared for their route are refused before anything is written, with
// the server's exact message (docs/routes.md, "Asking for a route"); the client's accessors
// refuse a step of another route.

import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";

import { FAILED, PromptHostError, RouteMismatchError } from "prompt-host";
import { anthropicMessages, openaiChat, openaiResponses } from "prompt-host/routes";

import { rejection, tempDir, withHost } from "./helpers.mjs";
import { SCOPE, assertRefused, deploy, lines } from "./routes.mjs";

const ROUTES = "routes: chat-completions, anthropic-messages, openai-responses";

test("a route that cannot be prepared: kind route, the exact message, nothing written", () =>
  withHost(async (host) => {
    await deploy(host);
    const dir = tempDir();
    const cases = [
      [{ facts: { model: "claude-opus-4-8" }, route: "anthropic-messages" }, 'route anthropic-messages needs the option "max_tokens" (the Messages API requires it: a positive integer)'],
      [{ facts: { model: "claude-opus-4-8" }, route: { name: "anthropic-messages", options: { max_tokens: 0 } } }, 'route anthropic-messages needs the option "max_tokens" (the Messages API requires it: a positive integer)'],
      [{ route: { name: "anthropic-messages", options: { max_tokens: 64 } } }, 'route anthropic-messages needs a model: give the "model" fact or the route\'s "model"'],
      [{ route: "openai-responses" }, 'route openai-responses needs a model: give the "model" fact or the route\'s "model"'],
      [{ facts: { model: "gpt-5" }, route: { name: "chat-completions", options: { messages: [] } } }, 'route chat-completions: the option "messages" is built from the log and cannot be given; options are the request\'s other keys (max_tokens, temperature, …)'],
      [{ facts: { model: "gpt-5" }, route: { name: "openai-responses", options: { instructions: "x" } } }, 'route openai-responses: the option "instructions" is built from the log and cannot be given; options are the request\'s other keys (max_tokens, temperature, …)'],
      [{ facts: { model: "claude-opus-4-8" }, route: { name: "anthropic-messages", options: { max_tokens: 64, system: "x" } } }, 'route anthropic-messages: the option "system" is built from the log and cannot be given; options are the request\'s other keys (max_tokens, temperature, …)'],
      [{ facts: { model: "gpt-5" }, route: { name: "chat-completions", cache: true } }, 'route chat-completions: "cache" places prompt-cache breakpoints, which only anthropic-messages takes (the others cache on their own)'],
      [{ facts: { model: "gpt-5" }, route: { name: "openai-responses", cache: false } }, 'route openai-responses: "cache" places prompt-cache breakpoints, which only anthropic-messages takes (the others cache on their own)'],
    ];
    for (const [n, [params, message]] of cases.entries()) {
      const log = join(dir, `new-${n}.jsonl`);
      const e = await rejection(host.step({ session: log, scope: SCOPE, user: ["hi"], ...params, facts: { cwd: "/repo", ...params.facts } }));
      assert.ok(e instanceof PromptHostError, String(e));
      assert.deepEqual([e.code, e.kind, e.message], [FAILED, "route", message], JSON.stringify(params));
      assert.equal(existsSync(log), false, "a refused first step wrote the log");
    }
    // On a log with steps: nothing appended, by step or retry.
    const log = join(dir, "s.jsonl");
    await host.step({ session: log, scope: SCOPE, facts: { model: "gpt-5", cwd: "/repo" }, user: ["hi"] });
    await host.appendAssistant({ session: log, text: "Hello." });
    await assertRefused(log, host.step({ session: log, scope: SCOPE, user: ["again"], route: "openai-responses", facts: { cwd: "/repo" } }), {
      kind: "route", code: FAILED, message: 'route openai-responses needs a model: give the "model" fact or the route\'s "model"',
    });
    await assertRefused(log, host.retry({ session: log, facts: { model: "claude-opus-4-8" }, route: "anthropic-messages" }), {
      kind: "route", code: FAILED, message: 'route anthropic-messages needs the option "max_tokens" (the Messages API requires it: a positive integer)',
    });
  }));

test("an unknown route: kind route, the message of docs/routes.md, nothing written", () =>
  withHost(
    async (host) => {
      await deploy(host);
      const dir = tempDir();
      const unknown = (name, suggestion) => `unknown route "${name}"${suggestion ? ` (did you mean "${suggestion}"?)` : ""}; ${ROUTES}`;
      const fresh = join(dir, "fresh.jsonl");
      const e = await rejection(host.step({ session: fresh, scope: SCOPE, facts: { model: "m", cwd: "/repo" }, route: "anthropic-message", user: ["hi"] }));
      assert.ok(e instanceof PromptHostError);
      assert.deepEqual([e.code, e.kind, e.message], [FAILED, "route", unknown("anthropic-message", "anthropic-messages")]);
      assert.equal(existsSync(fresh), false, "a refused first step wrote the log");
      const log = join(dir, "s.jsonl");
      await host.step({ session: log, scope: SCOPE, facts: { model: "m", cwd: "/repo" }, user: ["hi"] });
      const refused = (promise, name, suggestion) => assertRefused(log, promise, { kind: "route", code: FAILED, message: unknown(name, suggestion) });
      await refused(host.step({ session: log, scope: SCOPE, facts: { cwd: "/repo" }, route: { name: "chat-completion" }, user: ["again"] }), "chat-completion", "chat-completions");
      await refused(host.retry({ session: log, route: "openai-response" }), "openai-response", "openai-responses");
      await refused(host.appendAssistant({ session: log, reply: { role: "assistant", content: "hi" }, route: "chat" }), "chat");
    },
    { allowInvalidParams: true },
  ));

test("append_assistant: route goes with reply; reply does not go with text", () =>
  withHost(
    async (host) => {
      const log = join(tempDir(), "s.jsonl");
      await host.step({ session: log, facts: { model: "m" }, user: ["hi"] });
      const before = lines(log);
      // Refused by the server; the client's types refuse both too.
      let e = await rejection(host.appendAssistant({ session: log, text: "hi", route: "chat-completions" }));
      assert.deepEqual([e.kind, e.message], ["invalid-params", "invalid params: route names the provider of a reply; it goes with reply"]);
      e = await rejection(host.appendAssistant({ session: log, text: "hi", reply: { role: "assistant", content: "hi" } }));
      assert.deepEqual([e.kind, e.message], ["invalid-params", "invalid params: give the provider's reply or text/reasoning/tool_calls, not both"]);
      assert.equal(lines(log), before);
      // A reply of the route named, not the log's.
      await assertRefused(log, host.appendAssistant({ session: log, reply: { role: "assistant", content: "hi" }, route: "anthropic-messages" }), {
        kind: "conversation", message: `session log ${log}: route anthropic-messages cannot read this reply: it is shaped like a reply of the chat-completions route`,
      });
    },
    { allowInvalidParams: true },
  ));

test("the accessors check the step's route, and return its request itself", async () => {
  const step = (name, request) => ({ route: { name }, request });
  const chat = step("chat-completions", { messages: [], model: "gpt-5" });
  const anthropic = step("anthropic-messages", { messages: [], model: "claude-opus-4-8", max_tokens: 8 });
  const responses = step("openai-responses", { input: [], model: "gpt-5" });
  assert.equal(openaiChat(chat), chat.request);
  assert.equal(anthropicMessages(anthropic), anthropic.request);
  assert.equal(openaiResponses(responses), responses.request);
  const mismatch = (fn, value, message) =>
    assert.throws(() => fn(value), (e) => e instanceof RouteMismatchError && e.message === message && e.name === "RouteMismatchError");
  mismatch(openaiChat, anthropic, 'openaiChat: the step\'s request is for route "anthropic-messages", not "chat-completions"; read it with anthropicMessages(step), or ask for route "chat-completions" in step or retry');
  mismatch(anthropicMessages, responses, 'anthropicMessages: the step\'s request is for route "openai-responses", not "anthropic-messages"; read it with openaiResponses(step), or ask for route "anthropic-messages" in step or retry');
  mismatch(openaiResponses, chat, 'openaiResponses: the step\'s request is for route "chat-completions", not "openai-responses"; read it with openaiChat(step), or ask for route "openai-responses" in step or retry');
  mismatch(openaiChat, { request: chat.request }, 'openaiChat: the step\'s request has no route (a StepResult has one), not "chat-completions"; ask for route "chat-completions" in step or retry');
  mismatch(openaiChat, step("chat-completions", { messages: [] }), 'openaiChat: the request names no model; give the "model" fact or the route\'s "model"');
  mismatch(openaiResponses, step("openai-responses", { input: [], model: "gpt-5", stream: true }), 'openaiResponses: the request streams (the route\'s option "stream" is true); the accessors describe non-streaming requests');
  const e = (() => {
    try {
      openaiChat(anthropic);
    } catch (error) {
      return error;
    }
  })();
  assert.deepEqual([e.expected, e.actual], ["chat-completions", "anthropic-messages"]);
});

test("the accessors on real steps", () =>
  withHost(async (host) => {
    const log = join(tempDir(), "s.jsonl");
    // A chat-completions step without a model has no SDK type: refused by the accessor.
    const bare = await host.step({ session: log, user: ["hi"] });
    assert.equal(bare.route.model, null);
    assert.equal("model" in bare.request, false);
    assert.throws(() => openaiChat(bare), RouteMismatchError);
    const s = await host.step({ session: log, facts: { model: "gpt-5" }, route: { name: "openai-responses", options: { max_output_tokens: 256 } }, user: ["hi"] });
    assert.equal(openaiResponses(s).max_output_tokens, 256);
    assert.throws(() => openaiChat(s), RouteMismatchError);
    assert.throws(() => anthropicMessages(s), RouteMismatchError);
  }));
