/**
 * What the provider examples share: the plugins, the agent's tools on a fake file system, the
 * conversation the user has, and the harness that starts prompt-host and the fake provider
 * and records which step each model call was made for.
 *
 * The plugins are the repository's examples built for wasm32-wasip2: `persona`, `tool-guide`
 * (tools `read_file`, `write_file`, `bash`; its text names `{{cwd}}`) and `runtime-policy`.
 * The binary: `--bin`, else PROMPT_HOST_BIN, else this repository's `target/debug/prompt-host`,
 * else `prompt-host` on PATH; the plugins: `--guests`, else PROMPT_HOST_GUESTS, else
 * `target/guests/wasm32-wasip2/release` of this repository.
 */

import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

import { PromptHost, type PromptHostOptions, type Replay, type StepResult } from "prompt-host";

import { FakeProvider, type Canned } from "./fake-provider.js";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
export const SCOPE = "agent:1";

export interface ExampleOptions {
  binary?: string;
  guests?: string;
  host?: PromptHostOptions;
  /** Print the conversation (the scripts do). */
  verbose?: boolean;
}

/** `--bin` and `--guests` of a script's command line. */
export function commandLine(): ExampleOptions {
  const { values } = parseArgs({ options: { bin: { type: "string" }, guests: { type: "string" } } });
  return { binary: values.bin, guests: values.guests, verbose: true };
}

/** One model call: the step whose request was sent, and the body the provider received. */
export interface ModelCall {
  step: StepResult;
  /** The request's path (`/v1/messages`, …). */
  path: string;
  /** The request body as it arrived, as text. */
  received: string;
}

export interface Transcript {
  calls: ModelCall[];
  /** Every step and retry, in order. */
  steps: StepResult[];
  retries: StepResult[];
  answers: string[];
  toolCalls: string[];
  /** Each step's request rebuilt from the log alone (`request`). */
  replays: Replay[];
  /** The session log's lines at the end. */
  logLines: number;
}

/** What an example's agent loop is given. */
export interface Context {
  host: PromptHost;
  session: string;
  /** The provider's base address, `http://127.0.0.1:PORT`. */
  origin: string;
  out: Transcript;
  say(line: string): void;
  /** Take a step (recorded in the transcript). */
  step(params: Omit<Parameters<PromptHost["step"]>[0], "session" | "scope">): Promise<StepResult>;
  /** Retry the newest step (recorded in the transcript). */
  retry(params: Omit<Parameters<PromptHost["retry"]>[0], "session">): Promise<StepResult>;
  /** Make the model call for `step` (`send` calls the SDK); the body received is recorded. */
  send<T>(step: StepResult, send: () => Promise<T>): Promise<T>;
}

/** The user's side of the conversation, and the `cwd` fact each message is sent with. */
export const CONVERSATION: Array<{ text: string; cwd: string }> = [
  { text: "What does the README say?", cwd: "/work/project" },
  { text: "And what kind of project is it?", cwd: "/work/project" },
  // A new working directory: tool-guide's text changes, so the system prompt does.
  { text: "Now in the host crate: which model are you?", cwd: "/work/project/host" },
];

const FILES: Record<string, string> = {
  "README.md": "# prompt-host\nAssembles an LLM agent's system prompt from WebAssembly plugins.",
  "Cargo.toml": '[workspace]\nmembers = ["host", "tests"]',
};

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A tool call's arguments from their JSON text (`{}` when they are not an object). */
export function parseArguments(text: string): Record<string, unknown> {
  const value: unknown = JSON.parse(text);
  return isRecord(value) ? value : {};
}

/** The agent's tools, on a fake file system: `read_file`, and `bash` that only runs `ls`. */
export function runTool(name: string, args: unknown): { content: string; isError: boolean } {
  const a = isRecord(args) ? args : {};
  if (name === "read_file") {
    const path = String(a.path ?? "");
    const text = FILES[path];
    return text === undefined ? { content: `no such file: ${path}`, isError: true } : { content: text, isError: false };
  }
  if (name === "bash") {
    if (a.command === "ls") return { content: Object.keys(FILES).sort().join("\n"), isError: false };
    return { content: `the sandbox does not allow ${JSON.stringify(a.command)}`, isError: true };
  }
  return { content: `tool ${name} is not available here`, isError: true };
}

async function deploy(host: PromptHost, guests: string): Promise<void> {
  await host.bindScope(SCOPE);
  await host.loadPlugin({ name: "persona", wasm: join(guests, "persona.wasm"), scope: SCOPE, config: { text: "You are a careful file assistant on {{model}}." } });
  await host.loadPlugin({ name: "tool-guide", wasm: join(guests, "tool_guide.wasm"), scope: SCOPE });
  await host.loadPlugin({ name: "runtime-policy", wasm: join(guests, "runtime_policy.wasm"), scope: SCOPE });
}

/**
 * Run `agent` against prompt-host and a fake provider answering with `replies`; resolves with
 * the transcript (every model call with the bytes the provider received, every replay).
 */
export async function run(options: ExampleOptions, replies: Canned[], agent: (ctx: Context) => Promise<void>): Promise<Transcript> {
  let binary = options.binary;
  if (!binary && !process.env.PROMPT_HOST_BIN) {
    const built = join(REPO, "target", "debug", "prompt-host");
    if (existsSync(built)) binary = built;
  }
  const guests = options.guests ?? process.env.PROMPT_HOST_GUESTS ?? join(REPO, "target", "guests", "wasm32-wasip2", "release");
  const out: Transcript = { calls: [], steps: [], retries: [], answers: [], toolCalls: [], replays: [], logLines: 0 };
  const provider = new FakeProvider(replies);
  const origin = await provider.listen();
  const dir = mkdtempSync(join(tmpdir(), "prompt-host-example-"));
  const session = join(dir, "session.jsonl");
  const host = new PromptHost({ ...options.host, binary });
  const ctx: Context = {
    host,
    session,
    origin,
    out,
    say: (line) => {
      if (options.verbose) console.log(line);
    },
    step: async (params) => {
      const step = await host.step({ ...params, session, scope: SCOPE });
      out.steps.push(step);
      return step;
    },
    retry: async (params) => {
      const step = await host.retry({ ...params, session });
      out.steps.push(step);
      out.retries.push(step);
      return step;
    },
    send: async (step, send) => {
      const before = provider.requests.length;
      try {
        return await send();
      } finally {
        for (const request of provider.requests.slice(before)) out.calls.push({ step, path: request.path, received: request.body.toString("utf8") });
      }
    },
  };
  try {
    await deploy(host, guests);
    await agent(ctx);
    // Every request can be rebuilt from the log alone.
    for (const step of out.steps) out.replays.push(await host.request({ session, step: step.step }));
    await host.closeSession(session);
    out.logLines = readFileSync(session, "utf8").trimEnd().split("\n").length;
  } finally {
    await provider.close();
    const status = await host.close();
    rmSync(dir, { recursive: true, force: true });
    if (status !== 0) throw new Error(`prompt-host serve exited with ${status}: ${host.stderrTail()}`);
  }
  const same = out.calls.every((call) => call.received === JSON.stringify(call.step.request));
  ctx.say(`\n${out.calls.length} model calls; the provider received prompt-host's request byte for byte: ${same}`);
  return out;
}
