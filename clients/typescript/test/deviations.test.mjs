// Where the server departs from PROTOCOL.md. Each is a `todo` test: it fails today without
// failing the run, and shows as passing once the server is fixed.

import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

import { spawn } from "node:child_process";
import { once } from "node:events";

import { PromptHost, PromptHostError, RequestCancelled } from "prompt-host";
import { CACHE, Wire, binary, rejection, sleep, tempDir, wasm, withHost } from "./helpers.mjs";

const todo = (what) => ({ todo: `server deviation from PROTOCOL.md: ${what}` });

test("re-binding a root scope under a parent is refused (kind scope)", todo("a root scope can be re-bound as a child"), () =>
  withHost(async (host) => {
    await host.bindScope("a");
    await host.bindScope("x");
    const e = await rejection(host.bindScope("x", "a"));
    assert.ok(e instanceof PromptHostError);
    assert.deepEqual([e.kind, e.scope], ["scope", "x"]);
  }));

test("re-binding a bound child scope without a parent is refused (kind scope)", todo("accepted, and the scope stays a child"), () =>
  withHost(async (host) => {
    await host.bindScope("a");
    await host.bindScope("y", "a");
    const e = await rejection(host.bindScope("y"));
    assert.deepEqual([e.kind, e.scope], ["scope", "y"]);
  }));

test("a tool provider's failure names the entry (tool_provider)", todo("data has no tool_provider"), () =>
  withHost(async (host) => {
    await host.loadPlugin({ name: "trap", wasm: wasm("hostile"), config: { mode: "trap", in: "tools" } });
    const e = await rejection(host.assemble());
    assert.deepEqual([e.kind, e.plugin, e.export], ["plugin", "trap", "tools"]);
    assert.notEqual(e.tool_provider, undefined);
  }));

test("a listener's failure names the entry (listener)", todo("data has no listener"), () =>
  withHost(async (host) => {
    await host.loadPlugin({ name: "lst", wasm: wasm("declare"), config: { listener: { key: "L", steps: [{ fail: "stop" }] } } });
    const e = await rejection(host.assemble());
    assert.deepEqual([e.kind, e.plugin, e.export, e.listener], ["plugin", "lst", "on-assemble", "L"]);
  }));

test("a cancelled first step writes nothing to a new log", todo("the log is created with its header before the assembly"), () =>
  withHost(async (host) => {
    await host.loadPlugin({ name: "hostile", wasm: wasm("hostile"), config: { mode: "sleep", in: "section" }, limits: { call_timeout_ms: 10000 } });
    const log = join(tempDir(), "new.jsonl");
    const e = await rejection(host.step({ session: log, user: ["hi"] }, { signal: AbortSignal.timeout(200) }));
    assert.ok(e instanceof RequestCancelled);
    assert.ok(!existsSync(log) || readFileSync(log, "utf8") === "");
  }));

/** A server traced by a Wire of its own, checked inside the test. */
function ownWireHost() {
  const wire = new Wire();
  return { host: new PromptHost({ binary: binary(), trace: wire.trace, env: { PROMPT_HOST_CACHE_DIR: CACHE } }), wire };
}

test("a request with id null is refused or not answered", todo("answered with a Success whose id is null, which fails the schema"), async () => {
  const { host, wire } = ownWireHost();
  try {
    const after = wire.waitFor((m) => m.id === "after");
    host.sendRaw('{"jsonrpc": "2.0", "id": null, "method": "scopes"}');
    host.sendRaw('{"jsonrpc": "2.0", "id": "after", "method": "scopes"}');
    await after;
    await sleep(500); // answers may come in any order: give the null id's answer (if any) time to arrive
    assert.deepEqual(wire.errors, []);
  } finally {
    await host.close();
  }
});

test("the answer to a fractional number id fits the schema", { todo: "PROTOCOL.md allows any number as id; the schema allows integers only" }, async () => {
  const { host, wire } = ownWireHost();
  try {
    const answer = wire.waitFor((m) => m.id === 1.5);
    host.sendRaw('{"jsonrpc": "2.0", "id": 1.5, "method": "scopes"}');
    await answer;
    assert.deepEqual(wire.errors, []);
  } finally {
    await host.close();
  }
});

test("the server ends when its output is closed", todo("it ends only once more input arrives"), async () => {
  const child = spawn(binary(), ["serve"], { stdio: ["pipe", "pipe", "ignore"], env: { ...process.env, PROMPT_HOST_CACHE_DIR: CACHE } });
  try {
    child.stdout.destroy();
    child.stdin.write('{"jsonrpc": "2.0", "id": 1, "method": "scopes"}\n');
    const exited = await Promise.race([once(child, "exit").then(() => true), sleep(5000).then(() => false)]);
    assert.ok(exited, "still running 5 s after its output closed");
  } finally {
    child.kill("SIGKILL");
  }
});
