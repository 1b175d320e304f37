// Every error code and data.kind a request can cause, as PromptHostError with the structured
// fields (cancelled: cancel.test.mjs).

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import {
  FAILED, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR, PromptHostError, RequestCancelled,
} from "prompt-host";
import { rejection as rejected, session, tempDir, wasm, withHost } from "./helpers.mjs";

async function rejection(promise) {
  const e = await rejected(promise);
  assert.ok(e instanceof PromptHostError, String(e));
  assert.ok(!(e instanceof RequestCancelled));
  return e;
}

const fields = (e, ...keys) => keys.map((k) => e[k]);

test("parse error and invalid requests (answered by id or null)", () =>
  withHost(async (host, { wire }) => {
    let next = wire.waitFor((m) => "error" in m);
    host.sendRaw('{"jsonrpc": "2.0", "id": 1, "method": ');
    let answer = await next;
    assert.equal(answer.id, null);
    assert.equal(answer.error.code, PARSE_ERROR);
    assert.equal(answer.error.data, undefined);
    for (const [line, id] of [
      ['{"id": "raw-1", "method": "describe"}', "raw-1"],
      ['{"jsonrpc": "2.0", "id": {"x": 1}, "method": "describe"}', null],
      // A null id is not an id (JSON-RPC 2.0 reserves it): refused, and the request does not run.
      ['{"jsonrpc": "2.0", "id": null, "method": "bind_scope", "params": {"scope": "ghost"}}', null],
      ["42", null],
      ["[]", null],
      ['{"jsonrpc": "2.0", "id": "raw-2", "method": 7}', "raw-2"],
    ]) {
      next = wire.waitFor((m) => "error" in m);
      host.sendRaw(line);
      answer = await next;
      assert.equal(answer.id, id, line);
      assert.equal(answer.error.code, INVALID_REQUEST, line);
    }
    assert.equal((await host.describe()).protocol, "1.1");
    assert.deepEqual(await host.scopes(), []);
  }));

test("request-too-large", () =>
  withHost(
    async (host, { wire }) => {
      const line = JSON.stringify({ jsonrpc: "2.0", id: "big", method: "render", params: { facts: { x: "a".repeat(5000) } } });
      const next = wire.waitFor((m) => "error" in m);
      host.sendRaw(line);
      const answer = await next;
      assert.equal(answer.id, null);
      assert.equal(answer.error.code, INVALID_REQUEST);
      assert.deepEqual(answer.error.data, { kind: "request-too-large", bytes: line.length, limit: 4096 });
      assert.deepEqual(await host.scopes(), []);
    },
    { host: { maxRequestBytes: 4096 } },
  ));

test("request-too-large: refused by the client before sending (the server would answer id null)", () =>
  withHost(
    async (host, { wire }) => {
      const e = await rejection(host.render({ facts: { x: "a".repeat(5000) } }));
      assert.deepEqual(fields(e, "code", "kind", "limit", "method"), [INVALID_REQUEST, "request-too-large", 4096, "render"]);
      assert.ok(e.bytes > 5000);
      assert.ok(!wire.sent.some((m) => m.method === "render"));
      assert.deepEqual(await host.scopes(), []);
    },
    { host: { maxRequestBytes: 4096 } },
  ));

test("method-not-found", () =>
  withHost(async (host) => {
    const e = await rejection(host.call("no_such_method", {}));
    assert.deepEqual(fields(e, "code", "kind", "method"), [METHOD_NOT_FOUND, "method-not-found", "no_such_method"]);
    assert.ok(e.methods.includes("step") && e.methods.includes("$/cancelRequest"));
  }));

test("invalid-params", () =>
  withHost(
    async (host) => {
      for (const [method, params, needle] of [
        ["render", { bogus: 1 }, "bogus"],
        ["render", { facts: { model: 1 } }, "model"],
        ["render", { facts: [["model"]] }, "pair"],
        ["step", {}, "session"],
        ["load_plugin", { name: "x", wasm: "x.wasm", limits: { call_timeout_ms: 0 } }, "call_timeout_ms"],
        ["load_plugin", { name: "x", wasm: "x.wasm", quarantine_after: 0 }, "quarantine_after"],
        ["subscribe", { log: "loud" }, "loud"],
        ["append_assistant", { session: "s.jsonl", tool_calls: [{ id: "c1" }] }, "name"],
        ["describe", { extra: true }, "extra"],
        ["render", [1], "object"],
      ]) {
        const e = await rejection(host.call(method, params));
        assert.deepEqual(fields(e, "code", "kind"), [INVALID_PARAMS, "invalid-params"], method);
        assert.ok(e.message.includes(needle), `${method}: ${e.message}`);
      }
    },
    { allowInvalidParams: true },
  ));

test("plugin: load, init and call failures", () =>
  withHost(async (host) => {
    const dir = tempDir();
    let e = await rejection(host.loadPlugin({ name: "missing", wasm: join(dir, "missing.wasm") }));
    assert.deepEqual(fields(e, "code", "kind", "plugin", "export"), [FAILED, "plugin", "missing", undefined]);
    e = await rejection(host.loadPlugin({ name: "bad-config", wasm: wasm("declare"), config: { bogus: 1 } }));
    assert.deepEqual(fields(e, "kind", "plugin", "export"), ["plugin", "bad-config", "init"]);
    await host.bindScope("f");
    const cases = [
      [{ sections: [{ name: "broken", order: 1, text: { fail: "boom" } }] }, "section-text", "section", "broken"],
      [{ contexts: [{ name: "c", order: 1, text: { fail: "no" } }] }, "context-text", "context", "c"],
      [{ variables: [{ name: "v", fail: "nope" }] }, "variable", "variable", "v"],
    ];
    for (const [config, exportName, key, name] of cases) {
      await host.loadPlugin({ name: "p", wasm: wasm("declare"), scope: "f", config });
      e = await rejection(host.assemble({ scope: "f" }));
      assert.deepEqual(fields(e, "kind", "plugin", "export", "scope", key), ["plugin", "p", exportName, "f", name]);
      await host.disposeScope("f");
    }
    await host.loadPlugin({ name: "spin", wasm: wasm("hostile"), scope: "f", config: { mode: "loop", in: "section" }, limits: { call_timeout_ms: 50 } });
    e = await rejection(host.render({ scope: "f" }));
    assert.deepEqual(fields(e, "kind", "plugin", "export", "section"), ["plugin", "spin", "section-text", "hostile"]);
    await host.disposeScope("f");
    // A tool provider and a listener are named by their keys (`hostile` declares its dynamic
    // tools under its name).
    await host.loadPlugin({ name: "trap", wasm: wasm("hostile"), scope: "f", config: { mode: "trap", in: "tools" } });
    e = await rejection(host.assemble({ scope: "f" }));
    assert.deepEqual(fields(e, "kind", "plugin", "export", "scope", "tool_provider"), ["plugin", "trap", "tools", "f", "hostile"]);
    assert.ok(e.message.includes('tool provider "hostile" (plugin "trap", scope "f") failed'), e.message);
    await host.disposeScope("f");
    await host.loadPlugin({ name: "lst", wasm: wasm("declare"), scope: "f", config: { listener: { key: "L", steps: [{ fail: "stop" }] } } });
    e = await rejection(host.assemble({ scope: "f" }));
    assert.deepEqual(fields(e, "kind", "plugin", "export", "scope", "listener"), ["plugin", "lst", "on-assemble", "f", "L"]);
    assert.ok(e.message.includes('listener "L" (plugin "lst", scope "f") failed'), e.message);
  }));

test("render", () =>
  withHost(async (host) => {
    await host.bindScope("r");
    await host.loadPlugin({ name: "rr", wasm: wasm("declare"), scope: "r", config: { sections: [{ name: "s1", order: 1, text: "x {{nope}}" }] } });
    const e = await rejection(host.render({ scope: "r" }));
    assert.deepEqual(fields(e, "code", "kind", "scope", "section", "variable", "plugin"), [FAILED, "render", "r", "s1", "nope", "rr"]);
  }));

test("invariant and assembly", () =>
  withHost(async (host) => {
    await host.bindScope("inv");
    await host.loadPlugin({
      name: "dup", wasm: wasm("declare"), scope: "inv",
      config: { sections: [{ name: "s", order: 1, text: "x" }], listener: { key: "k", steps: [{ next: true }, { push_section: { name: "s", text: "again" } }] } },
    });
    let e = await rejection(host.render({ scope: "inv" }));
    assert.deepEqual(fields(e, "kind", "plugin", "scope"), ["invariant", "dup", "inv"]);
    await host.bindScope("asm");
    await host.loadPlugin({
      name: "two", wasm: wasm("declare"), scope: "asm",
      config: { sections: [{ name: "a", order: 1, text: "A", complete: true }, { name: "b", order: 2, text: "B", complete: true }] },
    });
    e = await rejection(host.render({ scope: "asm" }));
    assert.deepEqual(fields(e, "kind", "scope"), ["assembly", "asm"]);
  }));

test("scope and unknown-scope", () =>
  withHost(async (host) => {
    await host.bindScope("agent:1");
    await host.bindScope("b", "agent:1");
    let e = await rejection(host.bindScope("agent:1", "b"));
    assert.deepEqual(fields(e, "kind", "scope"), ["scope", "agent:1"]);
    e = await rejection(host.bindScope("c", "nowhere"));
    assert.deepEqual(fields(e, "kind", "scope"), ["scope", "c"]);
    e = await rejection(host.bindScope(""));
    assert.deepEqual(fields(e, "kind", "scope"), ["scope", ""]);
    // A scope is bound once: a root is not re-bound under a parent (nor as a root), a child
    // not as a root (nor under its parent again); the message says what it is bound to.
    await host.bindScope("x");
    for (const parent of ["agent:1", undefined]) {
      e = await rejection(host.bindScope("x", parent));
      assert.deepEqual(fields(e, "kind", "scope"), ["scope", "x"]);
      assert.ok(e.message.includes('"x" is a root scope'), e.message);
    }
    for (const parent of [undefined, "agent:1"]) {
      e = await rejection(host.bindScope("b", parent));
      assert.deepEqual(fields(e, "kind", "scope"), ["scope", "b"]);
      assert.ok(e.message.includes('"b" is a child of "agent:1"'), e.message);
    }
    e = await rejection(host.render({ scope: "agnet:1" }));
    assert.deepEqual(fields(e, "code", "kind", "scope", "suggestion"), [FAILED, "unknown-scope", "agnet:1", "agent:1"]);
  }));

test("session, conversation, replay", async () => {
  const { start, done } = session();
  const host = start();
  const dir = tempDir();
  let e = await rejection(host.step({ session: dir }));
  assert.deepEqual(fields(e, "kind", "session"), ["session", dir]);
  const notes = join(dir, "notes.txt");
  writeFileSync(notes, "my notes\n");
  e = await rejection(host.step({ session: notes }));
  assert.equal(e.kind, "session");
  assert.equal(readFileSync(notes, "utf8"), "my notes\n");
  const log = join(dir, "s.jsonl");
  e = await rejection(host.retry({ session: log }));
  assert.deepEqual(fields(e, "kind", "session"), ["session", log]);
  e = await rejection(host.request({ session: log }));
  assert.equal(e.kind, "replay");
  await host.step({ session: log, user: ["hi"] });
  // The log is locked by the server that holds it.
  const other = start();
  e = await rejection(other.step({ session: log }));
  assert.deepEqual(fields(e, "kind", "session"), ["session", log]);
  e = await rejection(host.appendAssistant({ session: log }));
  assert.deepEqual(fields(e, "kind", "session"), ["conversation", log]);
  e = await rejection(host.appendToolResult({ session: log, call_id: "call_9", content: "x" }));
  assert.equal(e.kind, "conversation");
  await host.appendAssistant({ session: log, tool_calls: [{ id: "call_1", name: "ls", arguments: {} }] });
  e = await rejection(host.step({ session: log }));
  assert.equal(e.kind, "conversation");
  assert.match(e.message, /call_1/);
  e = await rejection(host.request({ session: log, step: 5 }));
  assert.deepEqual(fields(e, "code", "kind"), [FAILED, "replay"]);
  await done();
});
