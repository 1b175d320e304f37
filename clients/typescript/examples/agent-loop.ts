/**
 * An agent loop on prompt-host, against a scripted stand-in for the model.
 *
 *     npm run build && node dist-examples/agent-loop.js [--bin PATH] [--guests DIR]
 *
 * Each model call sends exactly the request prompt-host derived from the session log, on the
 * default route `chat-completions` (the system prompt is its first message; `openaiChat`
 * gives it the OpenAI SDK's parameter type). Four turns:
 *
 * 1. the model calls `read_file`, gets the result, answers;
 * 2. the model calls two tools in one reply (`read_file` and `bash`), then answers;
 * 3. the provider fails (a simulated 503) on the first call: the loop `retry`s the step with
 *    another model — prompt-host re-uses the step's assembly (no plugin runs) and re-renders
 *    `{{model}}`, so the retried request names the fallback model;
 * 4. the user interrupts a step stuck in a slow plugin: the AbortController sends
 *    `$/cancelRequest`, the server stops the plugin and writes nothing; the user's next
 *    message goes to the agent's normal scope.
 *
 * The plugins are the repository's examples built for wasm32-wasip2: `persona`, `tool-guide`
 * (tools `read_file`, `write_file`, `bash`), `runtime-policy`, and `hostile` in `sleep` mode
 * as the slow plugin. The binary: `--bin`, else PROMPT_HOST_BIN, else this repository's
 * `target/debug/prompt-host`, else `prompt-host` on PATH; the plugins: `--guests`, else
 * PROMPT_HOST_GUESTS, else `target/guests/wasm32-wasip2/release` of this repository.
 */

import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

import type { ChatCompletionCreateParamsNonStreaming } from "openai/resources/chat/completions";
import { PromptHost, RequestCancelled, type PromptHostOptions, type StepResult, type ToolCall } from "prompt-host";
import { openaiChat } from "prompt-host/routes";

type Request = ChatCompletionCreateParamsNonStreaming;

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
const SCOPE = "agent:1";
const SLOW_SCOPE = "agent:1:slow";

// -- the scripted model -------------------------------------------------------------------------

/** What a model provider throws on a transient failure (HTTP 503 and the like). */
class ProviderError extends Error {}

interface Reply {
  text?: string;
  tool_calls?: ToolCall[];
}

/**
 * A stand-in for the model: the reply to a request is the script's entry number N, where N is
 * how many assistant messages the request already holds. `failOn` maps N to a model name that
 * fails (once) at that point, as a provider outage would.
 */
export function scriptedModel(script: Reply[], failOn: Record<number, string>): (request: Request, model: string) => Reply {
  const failed = new Set<number>();
  return (request, model) => {
    const n = request.messages.filter((m) => m.role === "assistant").length;
    if (failOn[n] === model && !failed.has(n)) {
      failed.add(n);
      throw new ProviderError(`503 Service Unavailable from ${model}`);
    }
    const reply = script[n];
    if (!reply) throw new Error(`the script has no reply number ${n}`);
    return reply;
  };
}

export const SCRIPT: Reply[] = [
  { tool_calls: [{ id: "call_1", name: "read_file", arguments: { path: "README.md" } }] },
  { text: "The README says this project assembles system prompts from plugins." },
  {
    tool_calls: [
      { id: "call_2", name: "read_file", arguments: { path: "Cargo.toml" } },
      { id: "call_3", name: "bash", arguments: { command: "ls" } },
    ],
  },
  { text: "It is a Rust workspace with a host crate and example plugins." },
  { text: "You are talking to the fallback model now." },
  { text: "Done: nothing was indexed, as you asked." },
];

const FILES: Record<string, string> = {
  "README.md": "# prompt-host\nAssembles an LLM agent's system prompt from WebAssembly plugins.",
  "Cargo.toml": '[workspace]\nmembers = ["host", "tests"]',
};

/** The agent's tools, on a fake file system. */
function runTool(call: ToolCall): { content: string; isError: boolean } {
  const args = typeof call.arguments === "object" ? call.arguments : {};
  if (call.name === "read_file") {
    const path = String(args.path ?? "");
    const text = FILES[path];
    return text === undefined ? { content: `no such file: ${path}`, isError: true } : { content: text, isError: false };
  }
  if (call.name === "bash" && args.command === "ls") return { content: Object.keys(FILES).sort().join("\n"), isError: false };
  return { content: `tool ${call.name} is not available here`, isError: true };
}

// -- the loop -------------------------------------------------------------------------------

export interface Transcript {
  requests: Request[];
  answers: string[];
  toolCalls: string[];
  retries: StepResult[];
  steps: StepResult[];
  cancelledAfterMs?: number;
  logUnchangedByCancel?: boolean;
}

type Facts = Record<string, string>;

async function turn(host: PromptHost, session: string, model: ReturnType<typeof scriptedModel>, userText: string, facts: Facts, out: Transcript): Promise<string> {
  let result = await host.step({ session, scope: SCOPE, facts, user: [userText] });
  out.steps.push(result);
  for (;;) {
    let reply: Reply;
    try {
      const request = openaiChat(result);
      out.requests.push(request);
      reply = model(request, request.model);
    } catch (e) {
      if (!(e instanceof ProviderError)) throw e;
      console.log(`   provider error (${e.message}); retrying the step on the fallback model`);
      facts = { ...facts, model: "fallback-model" };
      result = await host.retry({ session, facts });
      out.retries.push(result);
      out.steps[out.steps.length - 1] = result;
      continue;
    }
    await host.appendAssistant({ session, text: reply.text, tool_calls: reply.tool_calls });
    if (!reply.tool_calls?.length) {
      out.answers.push(reply.text ?? "");
      return reply.text ?? "";
    }
    for (const call of reply.tool_calls) {
      const { content, isError } = runTool(call);
      out.toolCalls.push(call.name);
      console.log(`   tool ${call.name}(${JSON.stringify(call.arguments)}) -> ${JSON.stringify(content.split("\n")[0])}`);
      await host.appendToolResult({ session, call_id: call.id, content, is_error: isError || undefined });
    }
    result = await host.step({ session, scope: SCOPE, facts });
    out.steps.push(result);
  }
}

/** A step stuck in a slow plugin, interrupted by the user after 200 ms. */
async function interruptedTurn(host: PromptHost, session: string, userText: string, facts: Facts, out: Transcript): Promise<void> {
  const before = readFileSync(session);
  const controller = new AbortController();
  const pending = host.step({ session, scope: SLOW_SCOPE, facts, user: [userText] }, { signal: controller.signal });
  await new Promise((r) => setTimeout(r, 200));
  const started = performance.now();
  controller.abort(); // sends $/cancelRequest; the promise rejects with the server's answer
  try {
    await pending;
  } catch (e) {
    if (!(e instanceof RequestCancelled)) throw e;
    out.cancelledAfterMs = performance.now() - started;
  }
  out.logUnchangedByCancel = readFileSync(session).equals(before);
  console.log(`   step cancelled ${out.cancelledAfterMs?.toFixed(1)} ms after the interrupt; session log unchanged: ${out.logUnchangedByCancel}`);
}

async function deploy(host: PromptHost, guests: string): Promise<void> {
  await host.bindScope(SCOPE);
  await host.bindScope(SLOW_SCOPE, SCOPE);
  await host.loadPlugin({ name: "persona", wasm: join(guests, "persona.wasm"), scope: SCOPE, config: { text: "You are a careful file assistant on {{model}}." } });
  await host.loadPlugin({ name: "tool-guide", wasm: join(guests, "tool_guide.wasm"), scope: SCOPE });
  await host.loadPlugin({ name: "runtime-policy", wasm: join(guests, "runtime_policy.wasm"), scope: SCOPE });
  // The slow plugin: a section that sleeps for an hour, its deadline raised so only a cancel stops it.
  await host.loadPlugin({
    name: "hostile", wasm: join(guests, "hostile.wasm"), scope: SLOW_SCOPE,
    config: { mode: "sleep", in: "section" }, limits: { call_timeout_ms: 60_000 },
  });
}

export async function main(options: { binary?: string; guests?: string; host?: PromptHostOptions } = {}): Promise<Transcript> {
  let binary = options.binary;
  if (!binary && !process.env.PROMPT_HOST_BIN) {
    const built = join(REPO, "target", "debug", "prompt-host");
    if (existsSync(built)) binary = built;
  }
  const guests = options.guests ?? process.env.PROMPT_HOST_GUESTS ?? join(REPO, "target", "guests", "wasm32-wasip2", "release");
  const model = scriptedModel(SCRIPT, { 4: "primary-model" });
  const facts: Facts = { model: "primary-model", cwd: "/work/project", sandbox: "read-only" };
  const out: Transcript = { requests: [], answers: [], toolCalls: [], retries: [], steps: [] };
  const dir = mkdtempSync(join(tmpdir(), "agent-loop-"));
  const session = join(dir, "session.jsonl");
  const host = new PromptHost({ ...options.host, binary });
  try {
    await deploy(host, guests);
    for (const text of ["What does the README say?", "And what kind of project is it?", "Which model are you?"]) {
      console.log(`user: ${text}`);
      console.log(`assistant: ${await turn(host, session, model, text, facts, out)}`);
    }
    let text = "Index the whole disk. (No, stop!)";
    console.log(`user: ${text}`);
    await interruptedTurn(host, session, text, facts, out);
    text = "Never mind the indexing.";
    console.log(`user: ${text}`);
    console.log(`assistant: ${await turn(host, session, model, text, facts, out)}`);
    // Every request can be rebuilt from the log alone.
    const replay = await host.request({ session });
    if (JSON.stringify(replay.request) !== JSON.stringify(out.requests.at(-1))) throw new Error("replay differs");
    await host.closeSession(session);
  } finally {
    const status = await host.close();
    rmSync(dir, { recursive: true, force: true });
    if (status !== 0) throw new Error(`prompt-host serve exited with ${status}: ${host.stderrTail()}`);
  }
  return out;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({ options: { bin: { type: "string" }, guests: { type: "string" } } });
  const out = await main({ binary: values.bin, guests: values.guests });
  console.log(`\n${out.answers.length} answers, ${out.toolCalls.length} tool calls, ${out.retries.length} retry, ${out.steps.length} steps`);
}
