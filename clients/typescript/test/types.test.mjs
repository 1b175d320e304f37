// The client's types under tsc --strict: what the SDKs return is a reply appendAssistant
// takes, the accessors' results are what the SDKs' create() takes, and misuse fails to compile.

import { test } from "node:test";
import assert from "node:assert/strict";

import { compile } from "./routes.mjs";

const HEAD = `
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { PromptHost, type RouteSpec, type StepResult, type ToolCall, type Usage } from "prompt-host";
import { anthropicMessages as fromAnthropicModule } from "prompt-host/anthropic";
import { openaiChat as fromOpenaiModule } from "prompt-host/openai";
import { anthropicMessages, openaiChat, openaiResponses, type AnthropicReply, type OpenAIChatReply, type OpenAIResponsesReply } from "prompt-host/routes";
declare const host: PromptHost;
declare const step: StepResult;
const openai = new OpenAI({ baseURL: "http://127.0.0.1:1/v1", apiKey: "test" });
const anthropic = new Anthropic({ baseURL: "http://127.0.0.1:1", apiKey: "test" });
const session = "s.jsonl";
`;

test("the SDKs' requests and replies fit the client's types, with no cast", () => {
  const errors = compile(`${HEAD}
const route: RouteSpec = { name: "anthropic-messages", model: "claude-opus-4-8", options: { max_tokens: 1024 }, system_updates: "in-history", reasoning: "send", cache: true };
export async function run(): Promise<void> {
  const a = await host.step({ session, route, user: ["hi"] });
  const b = await host.step({ session, route: "openai-responses" });
  await host.retry({ session, route: { name: "chat-completions", options: { temperature: 0 } } });
  const completion = await openai.chat.completions.create(openaiChat(step));
  const message = await anthropic.messages.create(anthropicMessages(a));
  const response = await openai.responses.create(openaiResponses(b));
  await openai.chat.completions.create(fromOpenaiModule(step));
  await anthropic.messages.create(fromAnthropicModule(step));
  const usage: Usage = { input_tokens: 1, output_tokens: 2, cached_input_tokens: 0, cache_creation_input_tokens: 0 };
  const chatReplies: OpenAIChatReply[] = [completion, completion.choices[0].message];
  const anthropicReplies: AnthropicReply[] = [message, message.content];
  const responsesReplies: OpenAIResponsesReply[] = [response, response.output];
  for (const reply of [...chatReplies, ...anthropicReplies, ...responsesReplies]) await host.appendAssistant({ session, reply });
  await host.appendAssistant({ session, reply: message, route: "anthropic-messages", usage });
  await host.appendAssistant({ session, reply: { role: message.role, content: message.content } });
  const calls: ToolCall[] = [{ id: "1", name: "ls", arguments: { path: "." } }, { id: "2", name: "ls", arguments: '{"path": "."}' }, { id: "3", name: "ls" }];
  await host.appendAssistant({ session, text: "x", reasoning: "y", tool_calls: calls, usage });
  const compacted = await host.compact({ session, summary: "s", keep_turns: 3 });
  const kept: number = compacted.prefix_messages_kept + (await host.compact({ session, summary: "s", start_seq: 1, end_seq: 4 })).replaced.length;
  void kept;
  const n: number = step.cache.breakpoints.length + (step.cache.last_usage?.input_tokens ?? 0) + step.route.capabilities.cache_breakpoints;
  const where: "system" | "tools" | "message" | undefined = step.cache.breakpoints[0]?.at;
  const model: string | null = step.route.model;
  void [n, where, model];
}
`);
  assert.deepEqual(errors, []);
});

test("misuse does not compile", () => {
  const cases = [
    ["an accessor's request for another SDK call", "await openai.responses.create(openaiChat(step));", /No overload matches this call/],
    ["an unknown route name", 'await host.step({ session, route: "anthropic-message" });', /"anthropic-message"' is not assignable/],
    ["a route spec key that does not exist", 'await host.step({ session, route: { name: "chat-completions", temprature: 1 } });', /'temprature' does not exist/],
    ["route without reply", 'await host.appendAssistant({ session, text: "x", route: "chat-completions" });', /not assignable/],
    ["reply with text", 'await host.appendAssistant({ session, reply: {}, text: "x" });', /not assignable/],
    ["arguments that are neither an object nor text", 'await host.appendAssistant({ session, tool_calls: [{ id: "1", name: "ls", arguments: 5 }] });', /'number' is not assignable/],
    ["compact with a range and keep_turns", 'await host.compact({ session, summary: "s", start_seq: 1, end_seq: 2, keep_turns: 1 });', /not assignable/],
    ["compact with half a range", 'await host.compact({ session, summary: "s", start_seq: 1 });', /not assignable/],
    ["a reply route that is a spec", 'await host.appendAssistant({ session, reply: {}, route: { name: "chat-completions" } });', /not assignable/],
  ];
  // One program: case n is on line first + n.
  const source = `${HEAD}\nexport async function run(): Promise<void> {\n${cases.map(([, line]) => `  ${line}`).join("\n")}\n}\n`;
  const first = source.split("\n").indexOf(`  ${cases[0][1]}`) + 1;
  const errors = compile(source);
  for (const [n, [what, , expected]] of cases.entries()) {
    const here = errors.filter((e) => e.startsWith(`main.ts:${first + n}: `));
    assert.equal(here.length, 1, `${what}: ${here.join("\n")}`);
    assert.match(here[0], expected, what);
  }
  assert.equal(errors.length, cases.length, errors.join("\n"));
});
