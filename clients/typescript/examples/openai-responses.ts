/**
 * An agent loop on the `openai-responses` route with the official OpenAI SDK, against a local
 * fake provider (examples/fake-provider.ts) that records every request.
 *
 *     npm run build && node dist-examples/openai-responses.js [--bin PATH] [--guests DIR]
 *
 * step → `openai.responses.create(openaiResponses(step))` → `appendAssistant({ reply:
 * response })` → the tools run → `appendToolResult` → step again. The whole conversation is
 * sent every step (no `previous_response_id`: the log is the conversation); the model's
 * `reasoning` items go back with the calls they led to, exactly as received. A tool fails
 * (its output is stated as `Error: …`). The working directory changes, so the system prompt
 * does: `instructions` stays, and the update is a `developer` message where the conversation
 * stands. The provider fails once (503): the loop retries the step on a fallback model.
 */

import { pathToFileURL } from "node:url";

import OpenAI from "openai";
import { openaiResponses } from "prompt-host/routes";

import { CONVERSATION, commandLine, parseArguments, run, runTool, type Context, type ExampleOptions, type Transcript } from "./common.js";
import type { Canned } from "./fake-provider.js";

export const MODEL = "gpt-5";
export const FALLBACK = "gpt-5-mini";

let id = 0;
function response(model: string, output: Array<Record<string, unknown>>): Canned {
  id += 1;
  return {
    body: {
      id: `resp_0${id}`,
      object: "response",
      created_at: 1_780_000_000 + id,
      status: "completed",
      error: null,
      incomplete_details: null,
      model,
      output,
      access_programs: null,
      instructions: null,
      metadata: null,
      temperature: null,
      top_p: null,
      parallel_tool_calls: true,
      tool_choice: "auto",
      tools: [],
      usage: { input_tokens: 1000 + 100 * id, input_tokens_details: { cached_tokens: 900, cache_write_tokens: 0 }, output_tokens: 70, output_tokens_details: { reasoning_tokens: 30 }, total_tokens: 1070 + 100 * id },
    },
  };
}

const say = (itemId: string, text: string) => ({ id: itemId, type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text, annotations: [], logprobs: [] }] });
const call = (itemId: string, callId: string, name: string, args: string) => ({ id: itemId, type: "function_call", status: "completed", call_id: callId, name, arguments: args });
const reasoning = (itemId: string, summary: string) => ({ id: itemId, type: "reasoning", summary: [{ type: "summary_text", text: summary }], encrypted_content: "gAAAAB-example-encrypted-reasoning" });

/** The provider's replies, in order; each fits the SDK's `Response` type, as the tests check. */
export const REPLIES: Canned[] = [
  response(MODEL, [reasoning("rs_01", "The user wants the README; read it first."), call("fc_01", "call_1", "read_file", '{"path":"README.md"}')]),
  response(MODEL, [say("msg_01", "The README says this project assembles system prompts from plugins.")]),
  response(MODEL, [reasoning("rs_02", "Check the manifest and try a build."), call("fc_02", "call_2", "read_file", '{"path":"Cargo.toml"}'), call("fc_03", "call_3", "bash", '{"command":"cargo build"}')]),
  response(MODEL, [say("msg_02", "It is a Rust workspace with a host crate and tests.")]),
  { status: 503, body: { error: { message: "The server is overloaded.", type: "server_error", code: null, param: null } } },
  response(FALLBACK, [say("msg_03", `You are talking to ${FALLBACK} now.`)]),
];

async function turn(ctx: Context, openai: OpenAI, text: string, facts: Record<string, string>): Promise<string> {
  let step = await ctx.step({ facts, user: [text], route: "openai-responses" });
  for (;;) {
    let reply: OpenAI.Responses.Response;
    try {
      reply = await ctx.send(step, () => openai.responses.create(openaiResponses(step)));
    } catch (e) {
      if (!(e instanceof OpenAI.APIError) || e.status !== 503) throw e;
      ctx.say(`   provider error (${e.status}); retrying the step on ${FALLBACK}`);
      facts.model = FALLBACK;
      step = await ctx.retry({ facts });
      continue;
    }
    await ctx.host.appendAssistant({ session: ctx.session, reply });
    const calls = reply.output.filter((item) => item.type === "function_call");
    if (calls.length === 0) return reply.output_text;
    for (const c of calls) {
      const args = parseArguments(c.arguments);
      const result = runTool(c.name, args);
      ctx.out.toolCalls.push(c.name);
      ctx.say(`   tool ${c.name}(${JSON.stringify(args)}) -> ${JSON.stringify(result.content.split("\n")[0])}`);
      await ctx.host.appendToolResult({ session: ctx.session, call_id: c.call_id, content: result.content, is_error: result.isError });
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
