// The example agent loop runs (so it keeps working), its every message validated.

import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

import { CACHE, IDENTITY, Wire, binary, guests } from "./helpers.mjs";
import { main } from "../dist-examples/agent-loop.js";

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
