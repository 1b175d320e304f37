// Where the server departs from PROTOCOL.md. Each is a `todo` test: it fails today without
// failing the run, and shows as passing once the server is fixed.

import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

import { PromptHostError, RequestCancelled } from "prompt-host";
import { rejection, tempDir, wasm, withHost } from "./helpers.mjs";

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
