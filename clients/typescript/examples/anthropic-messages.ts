/**
 * An agent loop on the `anthropic-messages` route with the official Anthropic SDK, against a
 * local fake provider (examples/fake-provider.ts) that records every request.
 *
 *     npm run build && node dist-examples/anthropic-messages.js [--bin PATH] [--guests DIR]
 *
 * step → `anthropic.messages.create(anthropicMessages(step))` → `appendAssistant({ reply:
 * message })` → the tools run → `appendToolResult` → step again. The model thinks (a
 * `thinking` block with its signature, sent back unchanged), calls tools (one fails:
 * `is_error`), and answers. prompt-host places the prompt-cache breakpoints and reports the
 * usage recorded with each reply. The working directory changes, so the system prompt does:
 * on Claude Opus 4.8 the update is a `role: "system"` message where the conversation stands.
 * The provider is overloaded once (529): the loop retries the step on a fallback model, which
 * does not take mid-conversation system messages, so the update joins the top-level `system`.
 */

import { pathToFileURL } from "node:url";

import Anthropic from "@anthropic-ai/sdk";
import type { RouteSpec } from "prompt-host";
import { anthropicMessages } from "prompt-host/routes";

import { CONVERSATION, commandLine, run, runTool, type Context, type ExampleOptions, type Transcript } from "./common.js";
import type { Canned } from "./fake-provider.js";

export const MODEL = "claude-opus-4-8";
export const FALLBACK = "claude-sonnet-4-5";
/** The route of the first step; later steps continue on it (the log's newest route). */
const ROUTE: RouteSpec = { name: "anthropic-messages", options: { max_tokens: 4096, thinking: { type: "adaptive" } } };

/**
 * A reply's `usage`: the token counts, and `null` for each member the API sends as `null`
 * when it does not apply (the SDK's `Usage` declares them all).
 */
const usage = (counts: { input_tokens: number; output_tokens: number; cache_creation_input_tokens: number; cache_read_input_tokens: number }) => ({
  cache_creation: null,
  inference_geo: null,
  output_tokens_details: null,
  server_tool_use: null,
  service_tier: null,
  speed: null,
  ...counts,
});

let id = 0;
function message(model: string, content: Array<Record<string, unknown>>, stop: string): Canned {
  id += 1;
  return {
    body: {
      id: `msg_0${id}`,
      type: "message",
      role: "assistant",
      model,
      content,
      stop_reason: stop,
      stop_sequence: null,
      stop_details: null,
      container: null,
      diagnostics: null,
      usage: usage({ input_tokens: 50, cache_creation_input_tokens: 200 * id, cache_read_input_tokens: 1000, output_tokens: 60 }),
    },
  };
}

const text = (t: string) => ({ type: "text", text: t, citations: null });
const toolUse = (toolId: string, name: string, input: Record<string, unknown>) => ({ type: "tool_use", id: toolId, name, input, caller: { type: "direct" } });

/** The provider's replies, in order; each fits the SDK's `Message` type, as the tests check. */
export const REPLIES: Canned[] = [
  message(MODEL, [{ type: "thinking", thinking: "The user wants the README; read it first.", signature: "RXhhbXBsZVNpZ25hdHVyZQ==" }, toolUse("toolu_01", "read_file", { path: "README.md" })], "tool_use"),
  message(MODEL, [text("The README says this project assembles system prompts from plugins.")], "end_turn"),
  message(MODEL, [text("Let me look at the manifest and the build."), toolUse("toolu_02", "read_file", { path: "Cargo.toml" }), toolUse("toolu_03", "bash", { command: "cargo build" })], "tool_use"),
  message(MODEL, [text("It is a Rust workspace with a host crate and tests.")], "end_turn"),
  { status: 529, body: { type: "error", error: { type: "overloaded_error", message: "Overloaded" } } },
  message(FALLBACK, [text(`You are talking to ${FALLBACK} now.`)], "end_turn"),
];

async function turn(ctx: Context, anthropic: Anthropic, userText: string, facts: Record<string, string>): Promise<string> {
  let step = await ctx.step({ facts, user: [userText], route: ROUTE });
  for (;;) {
    let reply: Anthropic.Message;
    try {
      reply = await ctx.send(step, () => anthropic.messages.create(anthropicMessages(step)));
    } catch (e) {
      if (!(e instanceof Anthropic.APIError) || e.status !== 529) throw e;
      ctx.say(`   provider overloaded (${e.status}); retrying the step on ${FALLBACK}`);
      facts.model = FALLBACK;
      step = await ctx.retry({ facts });
      continue;
    }
    await ctx.host.appendAssistant({ session: ctx.session, reply });
    const calls = reply.content.filter((block) => block.type === "tool_use");
    if (calls.length === 0) {
      return reply.content.map((block) => (block.type === "text" ? block.text : "")).join("");
    }
    for (const call of calls) {
      const result = runTool(call.name, call.input);
      ctx.out.toolCalls.push(call.name);
      ctx.say(`   tool ${call.name}(${JSON.stringify(call.input)}) -> ${JSON.stringify(result.content.split("\n")[0])}`);
      await ctx.host.appendToolResult({ session: ctx.session, call_id: call.id, content: result.content, is_error: result.isError });
    }
    step = await ctx.step({ facts });
    const usage = step.cache.last_usage;
    ctx.say(`   cache breakpoints ${JSON.stringify(step.cache.breakpoints)}; the last reply read ${usage?.cached_input_tokens} cached tokens of ${usage?.input_tokens}`);
  }
}

export function main(options: ExampleOptions = {}): Promise<Transcript> {
  return run(options, REPLIES, async (ctx) => {
    const anthropic = new Anthropic({ baseURL: ctx.origin, apiKey: "test", maxRetries: 0 });
    const facts: Record<string, string> = { model: MODEL, cwd: "", sandbox: "read-only" };
    for (const { text: userText, cwd } of CONVERSATION) {
      facts.cwd = cwd;
      ctx.say(`user: ${userText}`);
      const answer = await turn(ctx, anthropic, userText, facts);
      ctx.out.answers.push(answer);
      ctx.say(`assistant: ${answer}`);
    }
  });
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await main(commandLine());
}
