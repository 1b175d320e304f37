// Support for the route tests: the plugin whose prompt changes with the `cwd` fact, a fake
// provider the official SDKs talk to, byte-for-byte checks of what it received, and a type
// check of every request against the SDK's own parameter type (TypeScript's compiler API).

import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

import { PromptHostError } from "prompt-host";
import { FakeProvider } from "../dist-examples/fake-provider.js";
import { IDENTITY, SNAPSHOT, rejection, wasm } from "./helpers.mjs";

export const PACKAGE = resolve(dirname(fileURLToPath(import.meta.url)), "..");
export const SCOPE = "agent:routes";
export const TOOLS = [
  { name: "ls", description: "List a directory.", parameters: { type: "object", properties: { path: { type: "string" } } } },
  { name: "read_file", description: "Read a file.", parameters: { type: "object", properties: { path: { type: "string" } } } },
];
/** The system prompt for working directory `cwd`. */
export const prompt = (cwd) => `${IDENTITY}\n\nWork in ${cwd}.`;
export const CONTEXT_TEXT = `${SNAPSHOT}Sandbox: read-only.`;

export async function deploy(host) {
  await host.bindScope(SCOPE);
  await host.loadPlugin({
    name: "routes", wasm: wasm("declare"), scope: SCOPE,
    config: {
      sections: [{ name: "rules", order: 100, text: "Work in {{cwd}}." }],
      contexts: [{ name: "sandbox", order: 10, text: "Sandbox: read-only." }],
      tools: [{ schemas: TOOLS }],
    },
  });
}

/** The session log's line count. */
export const lines = (path) => readFileSync(path, "utf8").split("\n").filter((l) => l !== "").length;

/**
 * A conversation's bookkeeping: each model call is sent for a step; the provider records the
 * body it received. `send(step, fn)` ties them together. Every JSON reply of the script (status
 * 200) must fit the SDK's own response type first (`replyTypeErrors`): a reply the provider
 * could not have sent is never served.
 */
export async function provider(replies) {
  const errors = cannedTypeErrors(replies);
  if (errors.length > 0) throw new Error(`a canned reply does not fit the SDK's response type:\n${errors.join("\n")}`);
  const fake = new FakeProvider(replies);
  const origin = await fake.listen();
  const calls = [];
  return {
    fake,
    origin,
    calls,
    async send(step, fn) {
      const before = fake.requests.length;
      try {
        return await fn();
      } finally {
        for (const r of fake.requests.slice(before)) calls.push({ step, received: r });
      }
    },
    close: () => fake.close(),
  };
}

/** Every body the provider received is prompt-host's request, byte for byte, after the SDK's
 * own serialisation (`JSON.stringify(body)`), sent to `path`. */
export function assertReceivedExactly(calls, path) {
  assert.ok(calls.length > 0);
  for (const [n, { step, received }] of calls.entries()) {
    assert.equal(received.method, "POST");
    assert.equal(received.path, path, `call ${n}`);
    assert.equal(received.headers["content-type"], "application/json", `call ${n}`);
    assert.equal(received.body.toString("utf8"), JSON.stringify(step.request), `call ${n} (step ${step.step}): the body differs from prompt-host's request`);
  }
}

/** `request` (replay) of every step equals what the step returned, to the byte. */
export async function assertReplays(host, session, steps) {
  assert.ok(steps.length > 0);
  for (const step of steps) {
    const replay = await host.request({ session, step: step.step });
    assert.deepEqual(replay, { step: step.step, request: step.request }, `replay of step ${step.step}`);
    assert.equal(JSON.stringify(replay.request), JSON.stringify(step.request), `replay of step ${step.step}, as text`);
  }
}

/** `promise` rejects with kind `kind` and exactly `message`, and the log did not grow. */
export async function assertRefused(path, promise, { kind, message, code }) {
  const before = lines(path);
  const e = await rejection(promise);
  assert.ok(e instanceof PromptHostError, String(e));
  assert.equal(e.message, message);
  assert.equal(e.kind, kind, e.message);
  if (code !== undefined) assert.equal(e.code, code);
  assert.equal(lines(path), before, "the refused call appended to the log");
  return e;
}

/**
 * Compile `source` (a module) under --strict against this package (`prompt-host`, its
 * subpaths) and the installed SDKs; resolves with the diagnostics' text ([] when it compiles).
 */
export function compile(source) {
  const dir = mkdtempSync(join(tmpdir(), "prompt-host-ts-types-"));
  try {
    mkdirSync(join(dir, "node_modules"));
    symlinkSync(PACKAGE, join(dir, "node_modules", "prompt-host"), "dir");
    for (const name of ["openai", "@anthropic-ai", "@types", "undici-types"]) symlinkSync(join(PACKAGE, "node_modules", name), join(dir, "node_modules", name), "dir");
    writeFileSync(join(dir, "package.json"), '{"type": "module"}\n');
    const file = join(dir, "main.ts");
    writeFileSync(file, source);
    const program = ts.createProgram([file], {
      strict: true, noEmit: true, target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext, lib: ["lib.es2022.d.ts"], types: ["node"], skipLibCheck: true,
    });
    return ts.getPreEmitDiagnostics(program).map((d) => {
      const text = ts.flattenDiagnosticMessageText(d.messageText, "\n");
      if (!d.file || d.start === undefined) return text;
      const { line } = d.file.getLineAndCharacterOfPosition(d.start);
      return `${d.file.fileName === file ? "main.ts" : d.file.fileName}:${line + 1}: ${text}`;
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Type-check `requests` against the SDK parameter type `type` exported by `module`: each is
 * written as an object literal assigned to that type (so excess properties are errors too)
 * and compiled under --strict. Resolves with the diagnostics' text ([] when all fit).
 */
export function typeErrors(requests, module, type) {
  const body = requests.map((r, n) => `export const request${n}: ${type} = ${JSON.stringify(r, null, 1)};`).join("\n");
  return compile(`import type { ${type} } from "${module}";\n${body}\n`);
}

/**
 * The members of an Anthropic `usage` the API sends as `null` when they do not apply (the
 * SDK's `Usage` type declares each, nullable).
 */
export const USAGE_NULLS = {
  cache_creation: null, cache_creation_input_tokens: null, cache_read_input_tokens: null, inference_geo: null,
  output_tokens_details: null, server_tool_use: null, service_tier: null, speed: null,
};

/** One whole reply of each provider, for the tests of a reply sent to another route. */
export const FOREIGN = {
  chat: {
    id: "chatcmpl-1", object: "chat.completion", created: 1, model: "gpt-5",
    choices: [{ index: 0, message: { role: "assistant", content: "hi", refusal: null }, finish_reason: "stop", logprobs: null }],
  },
  anthropic: {
    id: "msg_1", type: "message", role: "assistant", model: "claude-opus-4-8", content: [{ type: "text", text: "hi", citations: null }],
    stop_reason: "end_turn", stop_sequence: null, stop_details: null, container: null, diagnostics: null,
    usage: { ...USAGE_NULLS, input_tokens: 1, output_tokens: 1 },
  },
  responses: {
    id: "resp_1", object: "response", created_at: 1, model: "gpt-5", status: "completed", error: null, incomplete_details: null,
    access_programs: null, instructions: null, metadata: null, temperature: null, top_p: null, parallel_tool_calls: true, tool_choice: "auto", tools: [],
    output: [{ id: "msg_1", type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: "hi", annotations: [] }] }],
  },
};

/**
 * The SDKs' response types, by the markers every provider's reply carries. The SDKs for
 * TypeScript have no run-time models (they parse a reply with `JSON.parse` alone), so a reply
 * is checked against the types the SDK declares for it, with the compiler: each is written as
 * an object literal of that type under --strict, so a missing required field, a value of
 * another type, an unknown literal and a key the type does not declare are all errors.
 */
const REPLY_TYPES = [
  { is: (b) => b?.object === "chat.completion", module: "openai/resources/chat/completions", type: "ChatCompletion" },
  // `output_text` is no key of the reply: the SDK adds it after parsing.
  { is: (b) => b?.object === "response", module: "openai/resources/responses/responses", type: "Response", omit: "output_text" },
  { is: (b) => b?.type === "message", module: "@anthropic-ai/sdk/resources/messages", type: "Message" },
];

/**
 * A reply without the one key it may carry beyond the SDK's types: DeepSeek's
 * `reasoning_content` on a chat completion's message, which the chat-completions route reads.
 */
function withoutAllowedKeys(body) {
  if (body?.object !== "chat.completion" || !Array.isArray(body.choices)) return body;
  const choices = body.choices.map((c) => {
    if (!c?.message || !("reasoning_content" in c.message)) return c;
    const { reasoning_content: _, ...message } = c.message;
    return { ...c, message };
  });
  return { ...body, choices };
}

/**
 * Type-check whole provider replies against their SDK's response type (`ChatCompletion`,
 * `Response`, `Message`); resolves with the diagnostics' text, each `reply N: ...` after the
 * reply it is about ([] when all fit). A body of no known shape is an error of its own; a
 * `null` stands for a reply that is not checked (an error status's body).
 */
export function replyTypeErrors(bodies) {
  const unknown = [];
  const used = new Map();
  const literals = bodies.map((body, n) => {
    if (body === null) return null;
    const kind = REPLY_TYPES.findIndex((t) => t.is(body));
    if (kind < 0) {
      unknown.push(`reply ${n}: not a provider reply (no "object": "chat.completion" or "response", no "type": "message")`);
      return null;
    }
    used.set(kind, REPLY_TYPES[kind]);
    const omit = REPLY_TYPES[kind].omit;
    const type = omit ? `Omit<Reply${kind}, "${omit}">` : `Reply${kind}`;
    return `export const reply${n}: ${type} = ${JSON.stringify(withoutAllowedKeys(body), null, 1)};`;
  });
  if (unknown.length > 0) return unknown;
  if (used.size === 0) return [];
  const lines = [...used].map(([kind, t]) => `import type { ${t.type} as Reply${kind} } from "${t.module}";`);
  // The first line of each reply's literal, to say which reply a diagnostic is about.
  const firsts = literals.map((literal) => {
    if (literal === null) return Infinity;
    const first = lines.length + 1;
    lines.push(...literal.split("\n"));
    return first;
  });
  return compile(`${lines.join("\n")}\n`).map((d) => {
    const at = /^main\.ts:(\d+): /.exec(d);
    if (!at) return d;
    const n = firsts.findLastIndex((first) => first <= Number(at[1]));
    return `reply ${n}: ${d.slice(at[0].length)}`;
  });
}

/**
 * `replyTypeErrors` of a fake provider's script (`Canned` replies): the body of each reply of
 * status 200 is checked, an error status's body is not; `reply N` is the reply's place in the
 * script.
 */
export const cannedTypeErrors = (replies) => replyTypeErrors(replies.map((r) => ((r.status ?? 200) === 200 ? r.body : null)));
