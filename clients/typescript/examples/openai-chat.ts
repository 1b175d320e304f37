/**
 * An agent loop on the `chat-completions` route with the official OpenAI SDK, against a local
 * fake provider (examples/fake-provider.ts) that records every request.
 *
 *     npm run build && node dist-examples/openai-chat.js [--bin PATH] [--guests DIR]
 *
 * step → `openai.chat.completions.create(openaiChat(step))` → `appendAssistant({ reply:
 * completion })` → the tools run → `appendToolResult` → step again. The model thinks
 * (`reasoning_content`, as DeepSeek's thinking mode sends it), calls tools (one fails), and
 * answers; the working directory changes, so the system prompt does: on this route it is
 * replaced in the first message. The provider fails once (503): the loop retries the step
 * on a fallback model.
 */

import { pathToFileURL } from "node:url";

import OpenAI from "openai";
import { openaiChat } from "prompt-host/routes";

import { CONVERSATION, commandLine, parseArguments, run, runTool, type Context, type ExampleOptions, type Transcript } from "./common.js";
import type { Canned } from "./fake-provider.js";

export const MODEL = "gpt-5";
export const FALLBACK = "gpt-5-mini";

let id = 0;
function completion(model: string, message: Record<string, unknown>, finish: string): Canned {
  id += 1;
  return {
    body: {
      id: `chatcmpl-${id}`,
      object: "chat.completion",
      created: 1_780_000_000 + id,
      model,
      choices: [{ index: 0, message: { role: "assistant", refusal: null, annotations: [], ...message }, logprobs: null, finish_reason: finish }],
      usage: { prompt_tokens: 900 + 100 * id, completion_tokens: 40, total_tokens: 940 + 100 * id, prompt_tokens_details: { cached_tokens: 800 } },
    },
  };
}

const call = (callId: string, name: string, args: string) => ({ id: callId, type: "function", function: { name, arguments: args } });

/** The provider's replies, in order; each fits the SDK's `ChatCompletion` type (DeepSeek's `reasoning_content` aside), as the tests check. */
export const REPLIES: Canned[] = [
  completion(MODEL, { content: null, reasoning_content: "The user wants the README; read it first.", tool_calls: [call("call_1", "read_file", '{"path": "README.md"}')] }, "tool_calls"),
  completion(MODEL, { content: "The README says this project assembles system prompts from plugins." }, "stop"),
  completion(MODEL, { content: "Let me look at the manifest and the build.", tool_calls: [call("call_2", "read_file", '{"path":"Cargo.toml"}'), call("call_3", "bash", '{"command":"cargo build"}')] }, "tool_calls"),
  completion(MODEL, { content: "It is a Rust workspace with a host crate and tests.", reasoning_content: "The manifest lists two members." }, "stop"),
  { status: 503, body: { error: { message: "The server is overloaded.", type: "server_error", code: null, param: null } } },
  completion(FALLBACK, { content: `You are talking to ${FALLBACK} now.` }, "stop"),
];

async function turn(ctx: Context, openai: OpenAI, text: string, facts: Record<string, string>): Promise<string> {
  let step = await ctx.step({ facts, user: [text], route: "chat-completions" });
  for (;;) {
    let completion: OpenAI.ChatCompletion;
    try {
      completion = await ctx.send(step, () => openai.chat.completions.create(openaiChat(step)));
    } catch (e) {
      if (!(e instanceof OpenAI.APIError) || e.status !== 503) throw e;
      ctx.say(`   provider error (${e.status}); retrying the step on ${FALLBACK}`);
      facts.model = FALLBACK;
      step = await ctx.retry({ facts });
      continue;
    }
    await ctx.host.appendAssistant({ session: ctx.session, reply: completion });
    const message = completion.choices[0]?.message;
    const calls = message?.tool_calls ?? [];
    if (calls.length === 0) return message?.content ?? "";
    for (const c of calls) {
      if (c.type !== "function") continue;
      const args = parseArguments(c.function.arguments);
      const result = runTool(c.function.name, args);
      ctx.out.toolCalls.push(c.function.name);
      ctx.say(`   tool ${c.function.name}(${JSON.stringify(args)}) -> ${JSON.stringify(result.content.split("\n")[0])}`);
      await ctx.host.appendToolResult({ session: ctx.session, call_id: c.id, content: result.content, is_error: result.isError });
    }
    step = await ctx.step({ facts });
  }
}

export function main(options: ExampleOptions = {}): Promise<Transcript> {
  return run(options, REPLIES, async (ctx) => {
    const openai = new OpenAI({ baseURL: `${ctx.origin}/v1`, apiKey: "test", maxRetries: 0 });
    const facts: Record<string, string> = { model: MODEL, cwd: "", sandbox: "read-only" };
    for (const { text, cwd } of CONVERSATION) {
      facts.cwd = cwd;
      ctx.say(`user: ${text}`);
      const answer = await turn(ctx, openai, text, facts);
      ctx.out.answers.push(answer);
      ctx.say(`assistant: ${answer}`);
    }
  });
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await main(commandLine());
}
