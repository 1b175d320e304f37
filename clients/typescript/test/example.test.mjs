// The examples run (so they keep working), their every message validated: the agent loop
// against a scripted model, and one loop per route through the provider's official SDK.

import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import ts from "typescript";

import { CACHE, IDENTITY, Wire, binary, guests } from "./helpers.mjs";
import { cannedTypeErrors } from "./routes.mjs";
import { main } from "../dist-examples/agent-loop.js";
import * as anthropicExample from "../dist-examples/anthropic-messages.js";
import * as chatExample from "../dist-examples/openai-chat.js";
import * as responsesExample from "../dist-examples/openai-responses.js";

test("examples/agent-loop.ts", async () => {
  const wire = new Wire();
  const out = await main({ binary: binary(), guests: guests(), host: { trace: wire.trace, env: { PROMPT_HOST_CACHE_DIR: CACHE } } });
  assert.equal(out.answers.length, 4);
  assert.deepEqual(out.toolCalls, ["read_file", "read_file", "bash"]);
  assert.equal(out.retries.length, 1);
  const system = out.retries[0].request.messages[0];
  assert.equal(system.role, "system");
  assert.ok(system.content.startsWith(`${IDENTITY}\n\nYou are a careful file assistant on fallback-model.`));
  assert.ok(out.cancelledAfterMs !== undefined && out.cancelledAfterMs < 1000);
  assert.equal(out.logUnchangedByCancel, true);
  const users = out.requests.at(-1).messages.filter((m) => m.role === "user").map((m) => m.content);
  assert.ok(!users.includes("Index the whole disk. (No, stop!)"));
  assert.equal(users.at(-1), "Never mind the indexing.");
  assert.ok(wire.received.length > 20);
  wire.assertClean();
});

test("the example runs as a script", async () => {
  const { stdout } = await promisify(execFile)(process.execPath, [fileURLToPath(new URL("../dist-examples/agent-loop.js", import.meta.url))], {
    env: { ...process.env, PROMPT_HOST_BIN: binary(), PROMPT_HOST_GUESTS: guests(), PROMPT_HOST_CACHE_DIR: CACHE },
    timeout: 120_000,
  });
  assert.ok(stdout.trim().endsWith("4 answers, 3 tool calls, 1 retry, 6 steps"), stdout);
});

// -- the provider examples: the official SDKs against a recording fake provider ---------------

const EXAMPLES = {
  "openai-chat": { module: chatExample, path: "/v1/chat/completions", fallback: "gpt-5-mini" },
  "anthropic-messages": { module: anthropicExample, path: "/v1/messages", fallback: "claude-sonnet-4-5" },
  "openai-responses": { module: responsesExample, path: "/v1/responses", fallback: "gpt-5-mini" },
};

for (const [name, { module, path, fallback }] of Object.entries(EXAMPLES)) {
  test(`examples/${name}.ts`, async () => {
    const wire = new Wire();
    const out = await module.main({ binary: binary(), guests: guests(), host: { trace: wire.trace, env: { PROMPT_HOST_CACHE_DIR: CACHE } } });
    assert.deepEqual(out.answers, [
      "The README says this project assembles system prompts from plugins.",
      "It is a Rust workspace with a host crate and tests.",
      `You are talking to ${fallback} now.`,
    ]);
    assert.deepEqual(out.toolCalls, ["read_file", "read_file", "bash"]);
    assert.equal(out.retries.length, 1);
    assert.equal(out.retries[0].route.model, fallback);
    // Six model calls (one failed and was retried), each received as prompt-host prepared it.
    assert.equal(out.calls.length, 6);
    for (const call of out.calls) {
      assert.equal(call.path, path);
      assert.equal(call.received, JSON.stringify(call.step.request));
    }
    assert.equal(out.calls[4].step.step + 1, out.calls[5].step.step);
    assert.deepEqual(out.replays, out.steps.map((s) => ({ step: s.step, request: s.request })));
    assert.equal(new Set(out.steps.map((s) => s.route.name)).size, 1);
    wire.assertClean();
  });

  test(`examples/${name}.ts runs as a script`, async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [fileURLToPath(new URL(`../dist-examples/${name}.js`, import.meta.url))], {
      env: { ...process.env, PROMPT_HOST_BIN: binary(), PROMPT_HOST_GUESTS: guests(), PROMPT_HOST_CACHE_DIR: CACHE },
      timeout: 120_000,
    });
    assert.ok(stdout.trim().endsWith("6 model calls; the provider received prompt-host's request byte for byte: true"), stdout);
  });
}

// -- the examples' canned replies fit the SDKs' response types (test/replies.test.mjs) -----------

test("every example that has canned replies is one of the provider examples", async () => {
  const dir = new URL("../dist-examples/", import.meta.url);
  const scripted = [];
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".js")).sort()) {
    if ("REPLIES" in (await import(new URL(file, dir).href))) scripted.push(file.slice(0, -".js".length));
  }
  assert.deepEqual(scripted, Object.keys(EXAMPLES).sort());
});

for (const [name, { module }] of Object.entries(EXAMPLES)) {
  test(`examples/${name}.ts: every reply the provider sends fits the SDK's response type`, () => {
    assert.ok(module.REPLIES.filter((r) => (r.status ?? 200) === 200).length >= 5);
    assert.deepEqual(cannedTypeErrors(module.REPLIES), []);
  });
}

test("a broken copy of an example's replies is refused, in the compiler's words", () => {
  const copy = (value) => JSON.parse(JSON.stringify(value));
  // The Anthropic usage without its nullable members, the Responses one without cache_write_tokens.
  const anthropic = copy(anthropicExample.REPLIES);
  anthropic[1].body.usage = { input_tokens: 50, cache_creation_input_tokens: 400, cache_read_input_tokens: 1000, output_tokens: 60 };
  const responses = copy(responsesExample.REPLIES);
  delete responses[5].body.usage.input_tokens_details.cache_write_tokens;
  const chat = copy(chatExample.REPLIES);
  chat[2].body.created = "1780000003";
  assert.deepEqual([anthropic, responses, chat].map(cannedTypeErrors), [
    [
      "reply 1: Type '{ input_tokens: number; cache_creation_input_tokens: number; cache_read_input_tokens: number; output_tokens: number; }' is missing the following properties from type 'Usage': cache_creation, inference_geo, output_tokens_details, server_tool_use, and 2 more.",
    ],
    ["reply 5: Property 'cache_write_tokens' is missing in type '{ cached_tokens: number; }' but required in type 'InputTokensDetails'."],
    ["reply 2: Type 'string' is not assignable to type 'number'."],
  ]);
});

test("examples/anthropic-messages.ts: a mid-conversation system message on Opus 4.8, `system` on the fallback", async () => {
  const out = await anthropicExample.main({ binary: binary(), guests: guests(), host: { env: { PROMPT_HOST_CACHE_DIR: CACHE } } });
  const [failed, retried] = [out.calls[4].step, out.calls[5].step];
  assert.equal(failed.route.capabilities.in_history, true);
  assert.equal(failed.request.messages.at(-1).role, "system");
  assert.ok(failed.request.messages.at(-1).content.includes("You work in /work/project/host."));
  assert.ok(failed.request.system[0].text.includes("You work in /work/project."));
  assert.equal(retried.route.capabilities.in_history, false);
  assert.equal(retried.request.messages.filter((m) => m.role === "system").length, 0);
  assert.ok(retried.request.system[0].text.includes("You work in /work/project/host."));
  assert.deepEqual(failed.request.thinking, { type: "adaptive" });
  assert.equal(out.calls[1].step.request.messages[1].content[0].signature, "RXhhbXBsZVNpZ25hdHVyZQ==");
});

test("the examples' code has no casts, no `any`, no ts-ignore, no non-null assertions", () => {
  const dir = fileURLToPath(new URL("../examples/", import.meta.url));
  const found = [];
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".ts"))) {
    const text = readFileSync(join(dir, file), "utf8");
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
    const at = (node) => `${file}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}`;
    const visit = (node) => {
      if (ts.isAsExpression(node) || ts.isTypeAssertionExpression(node)) found.push(`${at(node)}: a cast: ${node.getText()}`);
      if (ts.isNonNullExpression(node)) found.push(`${at(node)}: a non-null assertion: ${node.getText()}`);
      if (node.kind === ts.SyntaxKind.AnyKeyword) found.push(`${at(node)}: any`);
      ts.forEachChild(node, visit);
    };
    visit(source);
    for (const [n, line] of text.split("\n").entries()) if (/@ts-(ignore|expect-error|nocheck)/.test(line)) found.push(`${file}:${n + 1}: ${line.trim()}`);
  }
  assert.deepEqual(found, []);
});
