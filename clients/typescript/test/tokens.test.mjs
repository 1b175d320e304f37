// Token counts, token budgets and timings through the TypeScript client.

import { test } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";

import { PromptHostError } from "prompt-host";
import { rejection, tempDir, wasm, withHost } from "./helpers.mjs";

/** A host.toml with `prompt` settings and one section of eight words. */
function deployment(prompt) {
  const dir = tempDir();
  const path = join(dir, "host.toml");
  writeFileSync(
    path,
    `[prompt]\ninclude_harness_identity = false\n${prompt}\n\n[[plugin]]\nname = "guide"\nwasm = ${JSON.stringify(wasm("declare"))}\n` +
      `config = { sections = [{ name = "a", order = 150, text = "one two three four five six seven eight" }] }\n`,
  );
  return path;
}

test("render and step count tokens and report timings on request", () =>
  withHost(
    async (host) => {
      const plain = await host.render();
      assert.equal(plain.tokens, undefined);
      assert.equal(plain.timings, undefined);
      const r = await host.render({ tokens: true, timings: true });
      assert.equal(r.tokens.tokenizer, "cl100k_base");
      assert.deepEqual(r.tokens.sections.map((s) => [s.name, s.bytes, s.tokens]), [["a", 39, 8]]);
      assert.equal(r.tokens.prompt, 8);
      assert.deepEqual(r.timings.phases.map((p) => p.phase), ["assemble", "render"]);
      assert.ok(r.timings.phases.every((p) => p.micros >= 0));
      const named = await host.render({ tokens: "o200k_base" });
      assert.equal(named.tokens.tokenizer, "o200k_base");
      const log = join(tempDir(), "s.jsonl");
      const step = await host.step({ session: log, facts: { model: "m1" }, tokens: true, timings: true });
      assert.equal(r.tokens.tools_as, undefined);
      const { tools_as, ...counted } = step.tokens;
      assert.equal(tools_as, "chat-completions");
      assert.deepEqual(counted, r.tokens);
      assert.deepEqual(step.timings.phases.map((p) => p.phase), ["assemble", "render", "commit"]);
      const e = await rejection(host.render({ tokens: "gpt2" }));
      assert.ok(e instanceof PromptHostError);
      assert.equal(e.kind, "tokenizer");
      assert.match(e.message, /^unknown tokenizer "gpt2"/);
    },
    { host: { config: deployment('tokenizer = "cl100k_base"') } },
  ));

test("a rendering over its token budget is a token-budget error naming the largest section", () =>
  withHost(
    async (host) => {
      const e = await rejection(host.render());
      assert.ok(e instanceof PromptHostError);
      assert.equal(e.kind, "token-budget");
      assert.deepEqual(
        [e.data.budget, e.data.tokenizer, e.data.tokens, e.data.limit, e.data.section, e.data.plugin],
        ["max_prompt_tokens", "cl100k_base", 8, 5, "a", "guide"],
      );
      assert.equal(
        e.message,
        'rendering for scope "global" failed: the rendered system prompt has 8 tokens (cl100k_base), over max_prompt_tokens = 5; ' +
          'the largest: section "a" 8 tokens from plugin "guide" (global)',
      );
    },
    { host: { config: deployment('tokenizer = "cl100k_base"\nmax_prompt_tokens = 5') } },
  ));
