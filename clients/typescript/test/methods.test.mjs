// Every method of PROTOCOL.md against the real binary; every message validated (Wire).

import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { cpSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import { PromptHost, PromptHostError, ServerExited, PROTOCOL_VERSION } from "prompt-host";
import { CACHE, IDENTITY, REPO, SNAPSHOT, Wire, binary, rejection, session, sleep, tempDir, wasm, withHost } from "./helpers.mjs";

const METHODS = [
  "describe", "bind_scope", "dispose_scope", "scopes", "load_plugin", "reload_plugin", "dispose_plugin", "plugins", "assemble", "render",
  "step", "retry", "append_assistant", "append_tool_result", "request", "compact", "close_session", "mcp_status", "mcp_skill",
  "subscribe",
  "$/cancelRequest",
];

test("describe", () =>
  withHost(async (host, { wire }) => {
    const d = await host.describe();
    assert.equal(d.name, "prompt-host");
    assert.equal(d.protocol, PROTOCOL_VERSION);
    assert.deepEqual(d.methods, METHODS);
    assert.deepEqual(d.notifications, ["log", "plugin/skipped", "plugin/quarantined", "registry/changed", "mcp/status", "mcp/instructions_cut"]);
    assert.deepEqual(wire.sent, [{ jsonrpc: "2.0", id: 1, method: "describe", params: {} }]);
  }));

test("scopes: bind, layers, dispose", () =>
  withHost(async (host) => {
    assert.deepEqual(await host.scopes(), []);
    await host.bindScope("preset:coder");
    await host.bindScope("agent:1", "preset:coder");
    await host.bindScope("agent:2", "preset:coder");
    assert.deepEqual(await host.scopes(), ["agent:1", "agent:2", "preset:coder"]);
    await host.loadPlugin({ name: "p", wasm: wasm("declare"), scope: "preset:coder", config: { sections: [{ name: "p", order: 5, text: "From the preset." }] } });
    await host.loadPlugin({ name: "a", wasm: wasm("declare"), scope: "agent:1", config: { sections: [{ name: "a", order: 6, text: "From agent 1." }] } });
    assert.equal((await host.render({ scope: "agent:1" })).prompt, `${IDENTITY}\n\nFrom the preset.\n\nFrom agent 1.`);
    assert.equal((await host.render({ scope: "agent:2" })).prompt, `${IDENTITY}\n\nFrom the preset.`);
    await host.disposeScope("preset:coder");
    assert.equal((await host.render({ scope: "agent:1" })).prompt, `${IDENTITY}\n\nFrom agent 1.`);
    assert.deepEqual(await host.scopes(), ["agent:1", "agent:2", "preset:coder"]);
    assert.deepEqual((await host.plugins()).map((p) => p.name), ["a"]);
  }));

test("load_plugin, plugins, dispose_plugin, sha256", () =>
  withHost(async (host) => {
    await host.bindScope("s");
    const path = wasm("declare");
    const digest = createHash("sha256").update(readFileSync(path)).digest("hex");
    const one = await host.loadPlugin({ name: "one", wasm: path, config: { sections: [{ name: "one", order: 1, text: "One." }] }, sha256: digest });
    const two = await host.loadPlugin({
      name: "two", wasm: path, scope: "s", config: { sections: [{ name: "two", order: 2, text: "Two." }] },
      limits: { memory_bytes: 33554432, call_timeout_ms: 200 }, on_error: "fail", quarantine_after: 3,
    });
    assert.deepEqual(
      (await host.plugins()).sort((a, b) => a.id - b.id),
      [
        { id: one, name: "one", scope: null, grants: { dirs: [], env: [], http: [] } },
        { id: two, name: "two", scope: "s", grants: { dirs: [], env: [], http: [] } },
      ].sort((a, b) => a.id - b.id),
    );
    assert.equal((await host.render({ scope: "s" })).prompt, `${IDENTITY}\n\nOne.\n\nTwo.`);
    assert.equal(await host.disposePlugin(two), true);
    assert.equal(await host.disposePlugin(two), false);
    const e = await rejection(host.loadPlugin({ name: "mismatch", wasm: path, sha256: "0".repeat(64) }));
    assert.ok(e instanceof PromptHostError);
    assert.equal(e.kind, "plugin");
    assert.equal(e.plugin, "mismatch");
  }));

test("reload_plugin: a rebuilt plugin replaces the old one, a failing one leaves it serving", () =>
  withHost(async (host) => {
    const config = { sections: [{ name: "one", order: 1, text: "One." }] };
    const id = await host.loadPlugin({ name: "one", wasm: wasm("declare"), config });
    assert.equal(await host.reloadPlugin(id, wasm("declare")), 1);
    assert.equal((await host.render()).prompt, `${IDENTITY}\n\nOne.`);
    const failed = await rejection(host.reloadPlugin(id, wasm("tool_guide")));
    assert.ok(failed instanceof PromptHostError);
    assert.deepEqual([failed.kind, failed.plugin], ["plugin", "one"]);
    assert.equal((await host.render()).prompt, `${IDENTITY}\n\nOne.`);
    const unknown = await rejection(host.reloadPlugin(id + 100, wasm("declare")));
    assert.equal(unknown.kind, "unknown-plugin");
  }));

test("assemble and render: typed results, facts as an object or pairs", () =>
  withHost(async (host, { wire }) => {
    await host.bindScope("a");
    await host.loadPlugin({
      name: "d", wasm: wasm("declare"), scope: "a",
      config: {
        sections: [{ name: "rules", order: 10, text: "Model {{model}} in {{cwd}}." }],
        contexts: [{ name: "ctx", order: 10, text: "Sandbox." }],
        variables: [{ name: "team", value: "core" }, { name: "empty", value: null }],
        tools: [{ schemas: [{ name: "ls", description: "List.", parameters: { type: "object" } }] }],
      },
    });
    const a = await host.assemble({ scope: "a", facts: { model: "m1" } });
    assert.deepEqual(a, {
      sections: [
        { name: "harness:identity", text: IDENTITY },
        { name: "deployment:persona", text: "" },
        { name: "rules", text: "Model {{model}} in {{cwd}}." },
      ],
      contexts: [{ name: "ctx", text: "Sandbox." }],
      tools: [{ name: "ls", description: "List.", parameters: { type: "object" } }],
      variables: { provider: null, model: "m1", cwd: null, team: "core", empty: null },
    });
    const facts = [["model", "m1"], ["cwd", "/w"], ["model", "m2"]];
    assert.deepEqual(await host.render({ scope: "a", facts }), { prompt: `${IDENTITY}\n\nModel m2 in /w.`, context: `${SNAPSHOT}Sandbox.` });
    assert.deepEqual(wire.sent.at(-1).params, { scope: "a", facts });
  }));

test("close_session", () =>
  withHost(async (host) => {
    const log = join(tempDir(), "s.jsonl");
    assert.equal(await host.closeSession(log), false);
    await host.step({ session: log, user: ["hi"] });
    assert.equal(await host.closeSession(log), true);
    assert.equal(await host.closeSession(log), false);
  }));

test("only the params given are sent", () =>
  withHost(async (host, { wire }) => {
    const log = join(tempDir(), "s.jsonl");
    await host.step({ session: log, scope: undefined, facts: undefined });
    assert.deepEqual(wire.sent[0].params, { session: log });
  }));

test("mcp_status without servers", () =>
  withHost(async (host) => {
    assert.deepEqual(await host.mcpStatus(), []);
    assert.deepEqual(await host.mcpStatus({ wait_ms: 10 }), []);
  }));

test("mcp_status and mcp/status notifications", async () => {
  const dir = tempDir();
  const config = join(dir, "host.toml");
  writeFileSync(
    config,
    `[host]
mcp_provider = ${JSON.stringify(wasm("mcp-instructions"))}

[[scope]]
name = "agent"

[[mcp]]
name = "silent"
command = "python3"
args = [${JSON.stringify(join(REPO, "tests", "fixtures", "mcp", "hang.py"))}]
scope = "agent"
timeout_ms = 300
`,
  );
  await withHost(
    async (host) => {
      const notes = [];
      host.on("notification", (n) => notes.push(n));
      await host.subscribe({ mcp: true });
      const first = await host.mcpStatus();
      assert.equal(first.length, 1);
      assert.deepEqual([first[0].server, first[0].scope, first[0].plugin], ["silent", "agent", "mcp:silent"]);
      const [status] = await host.mcpStatus({ wait_ms: 5000 });
      assert.equal(status.state, "down");
      assert.equal(status.live_generation, null);
      assert.match(status.last_error ?? "", /no answer to server\/discover or initialize within 300 ms/);
      for (let i = 0; i < 100 && !notes.some((n) => n.method === "mcp/status"); i++) await sleep(50);
      const note = notes.find((n) => n.method === "mcp/status");
      assert.ok(note);
      assert.equal(note.params.server, "silent");
    },
    { host: { config } },
  );
});

test("an MCP server's instructions cut to their token budget: the prompt, mcp_status, the step, mcp/instructions_cut", async () => {
  const dir = tempDir();
  const config = join(dir, "host.toml");
  const line = "Always cite the file you read before you change it.";
  const server = join(REPO, "tests", "fixtures", "mcp", "server.py");
  writeFileSync(
    config,
    `[prompt]
tokenizer = "cl100k_base"

[host]
mcp_provider = ${JSON.stringify(wasm("mcp-instructions"))}

[[scope]]
name = "agent"

[[mcp]]
name = "fixture"
command = "python3"
args = [${JSON.stringify(server)}, "--instructions", ${JSON.stringify(line)}, "--instructions-repeat", "200"]
scope = "agent"
timeout_ms = 20000
max_instruction_tokens = 60
config = { max_bytes = 1048576 }
`,
  );
  await withHost(
    async (host) => {
      const notes = [];
      host.on("notification", (n) => notes.push(n));
      await host.subscribe({ mcp: true });
      const [status] = await host.mcpStatus({ wait_ms: 30000 });
      assert.equal(status.state, "up", JSON.stringify(status));
      const cut = status.instructions_cut;
      assert.ok(cut, JSON.stringify(status));
      const whole = Array(200).fill(line).join("\n");
      assert.deepEqual([cut.server, cut.generation, cut.budget, cut.tokenizer, cut.bytes], ["fixture", status.live_generation, 60, "cl100k_base", whole.length]);
      assert.ok(cut.tokens > 60 && cut.kept_tokens > 0 && cut.kept_tokens <= 60);
      assert.equal(cut.kept_bytes + cut.dropped_bytes, cut.bytes);
      const kept = whole.slice(0, cut.kept_bytes);
      assert.ok(kept.endsWith(line), "the cut ends at a line break");
      const note =
        `[prompt-host: the instructions of MCP server "fixture" were cut to their first ${cut.kept_tokens} of ${cut.tokens} tokens ` +
        `(60 tokens at most, counted with cl100k_base); ${cut.dropped_bytes} bytes were dropped]`;
      const rendered = await host.render({ scope: "agent" });
      assert.ok(rendered.prompt.includes(`${note}\n\n${kept}\n>>>`), rendered.prompt);
      assert.deepEqual(rendered.mcp_cuts, [cut]);
      assert.equal((await host.render({})).mcp_cuts, undefined);
      const log = join(dir, "s.jsonl");
      const step = await host.step({ session: log, scope: "agent", user: ["hi"] });
      assert.deepEqual(step.mcp_cuts, [cut]);
      const retried = await host.retry({ session: log, tokens: true, timings: true });
      assert.deepEqual(retried.mcp_cuts, [cut]);
      assert.ok(retried.tokens && retried.timings);
      // The request as its route sends it, counted with the same tokenizer.
      const counted = retried.request_tokens;
      assert.equal(counted.tokenizer, retried.tokens.tokenizer);
      assert.equal(counted.system, retried.tokens.prompt);
      assert.ok(counted.messages > 0);
      assert.equal(counted.total, counted.system + counted.tools + counted.messages);
      assert.equal(step.request_tokens, undefined);
      for (let i = 0; i < 100 && !notes.some((n) => n.method === "mcp/instructions_cut"); i++) await sleep(50);
      assert.deepEqual(notes.filter((n) => n.method === "mcp/instructions_cut").map((n) => n.params), [cut]);
    },
    { host: { config } },
  );
});

test("subscribe: log, plugin/skipped, plugin/quarantined, registry/changed; event and iterator", () =>
  withHost(async (host) => {
    const events = [];
    host.on("notification", (n) => events.push(n));
    const iterator = host.notifications();
    await host.subscribe({ log: "info", plugins: true, registry: true });
    await host.bindScope("n");
    await host.loadPlugin({ name: "logger", wasm: wasm("declare"), scope: "n", config: { listener: { key: "k", steps: [{ record_context: true }, { next: true }] } } });
    await host.loadPlugin({
      name: "skipper", wasm: wasm("declare"), scope: "n", on_error: "skip", quarantine_after: 2,
      config: { sections: [{ name: "sk", order: 5, text: { fail: "nope" } }] },
    });
    for (let i = 0; i < 2; i++) await host.render({ scope: "n", facts: [["model", "m"]] });
    // Everything the renders caused arrived before their responses.
    const methods = events.map((n) => n.method);
    assert.ok(methods.filter((m) => m === "registry/changed").length >= 2);
    assert.equal(methods.filter((m) => m === "plugin/skipped").length, 2);
    assert.equal(methods.filter((m) => m === "plugin/quarantined").length, 1);
    const log = events.find((n) => n.method === "log");
    assert.deepEqual([log.params.plugin, log.params.scope, log.params.stream], ["logger", "n", "info"]);
    assert.deepEqual(JSON.parse(log.params.message), { listener: "k", record: "context", value: { facts: [["model", "m"]], scope_chain: ["n"] } });
    const quarantined = events.find((n) => n.method === "plugin/quarantined");
    assert.equal(quarantined.params.stream, "quarantined");
    assert.match(quarantined.params.message, /quarantined after 2 consecutive failures/);
    // The iterator saw the same, in the same order.
    const fromIterator = [];
    for await (const n of iterator) {
      fromIterator.push(n);
      if (fromIterator.length === events.length) break;
    }
    assert.deepEqual(fromIterator, events);
    // A new choice replaces the old one.
    await host.subscribe({});
    const before = events.length;
    await host.render({ scope: "n", facts: [["model", "m"]] });
    await host.loadPlugin({ name: "quiet", wasm: wasm("declare") });
    await sleep(200);
    assert.equal(events.length, before);
  }));

test("log levels filter; control characters are escaped", () =>
  withHost(async (host) => {
    await host.loadPlugin({ name: "say", wasm: wasm("hostile"), on_error: "skip", config: { mode: "say", in: "section", text: "hi\u001b[31m" } });
    const events = [];
    host.on("notification", (n) => events.push(n));
    await host.subscribe({ log: "warn" });
    await host.render();
    await host.subscribe({});
    assert.deepEqual(events.map((n) => [n.method, n.params.stream]), [["log", "warn"], ["log", "error"]]);
    assert.equal(events[0].params.message, "hi\\u{1b}[31m");
  }));

test("the notification iterator ends when the server exits", async () => {
  const { start, done } = session();
  const host = start();
  const iterator = host.notifications();
  await host.close();
  const seen = [];
  for await (const n of iterator) seen.push(n);
  assert.deepEqual(seen, []);
  await done();
});

test("a request without id runs and is not answered", () =>
  withHost(async (host, { wire }) => {
    host.notify("bind_scope", { scope: "by-notification" });
    host.notify("no_such_method");
    for (let i = 0; i < 500; i++) {
      if ((await host.scopes()).length === 1) break;
      await sleep(10);
    }
    assert.deepEqual(await host.scopes(), ["by-notification"]);
    const ids = wire.sent.filter((m) => "id" in m).map((m) => m.id);
    assert.deepEqual(wire.received.map((m) => m.id), ids);
  }));

test("any number is an id, echoed (and the answer fits the schema)", () =>
  withHost(async (host, { wire }) => {
    const answer = wire.waitFor((m) => m.id === 1.5);
    host.sendRaw('{"jsonrpc": "2.0", "id": 1.5, "method": "scopes"}');
    assert.deepEqual((await answer).result, []);
  }));

test("$/cancelRequest with an id is answered {}", () =>
  withHost(async (host) => {
    assert.deepEqual(await host.call("$/cancelRequest", { id: 9999 }), {});
  }));

test("a batch is answered in order, in one array", () =>
  withHost(async (host, { wire }) => {
    const answer = wire.waitFor((m) => Array.isArray(m));
    host.sendRaw(
      JSON.stringify([
        { jsonrpc: "2.0", id: "b1", method: "bind_scope", params: { scope: "x" } },
        { jsonrpc: "2.0", id: "b2", method: "scopes" },
        { jsonrpc: "2.0", method: "bind_scope", params: { scope: "y" } },
        { jsonrpc: "2.0", id: "b3", method: "render", params: { scope: "nope" } },
        { jsonrpc: "2.0", id: "b4", method: "scopes" },
      ]),
    );
    const items = await answer;
    assert.deepEqual(items.map((a) => a.id), ["b1", "b2", "b3", "b4"]);
    assert.deepEqual(items[1].result, ["x"]);
    assert.deepEqual(items[2].error.data, { kind: "unknown-scope", scope: "nope" });
    assert.deepEqual(items[3].result, ["x", "y"]);
  }));

test("300 concurrent requests matched by id", () =>
  withHost(async (host) => {
    await host.loadPlugin({ name: "d", wasm: wasm("declare"), config: { sections: [{ name: "s", order: 1, text: "On {{model}}." }] } });
    const all = await Promise.all(Array.from({ length: 300 }, (_, i) => host.render({ facts: { model: `m${i}` } })));
    assert.deepEqual(all.map((r) => r.prompt), Array.from({ length: 300 }, (_, i) => `${IDENTITY}\n\nOn m${i}.`));
  }));

test("closing the input: requests in flight are answered first", async () => {
  const { start, done } = session();
  const host = start();
  await host.loadPlugin({ name: "slow", wasm: wasm("hostile"), config: { mode: "sleep", in: "section" }, limits: { call_timeout_ms: 500 } });
  const pending = rejection(host.render());
  await sleep(50);
  assert.equal(await host.close(), 0);
  const e = await pending;
  assert.deepEqual([e.kind, e.plugin, e.export], ["plugin", "slow", "section-text"]);
  const after = await rejection(host.describe());
  assert.ok(after instanceof ServerExited);
  await done();
});

test("the server ends when its output is closed, without more input", async () => {
  const child = spawn(binary(), ["serve"], { stdio: ["pipe", "pipe", "ignore"], env: { ...process.env, PROMPT_HOST_CACHE_DIR: CACHE } });
  try {
    const exited = once(child, "exit");
    child.stdout.destroy();
    // Its input stays open: only the answer it cannot write tells it to stop.
    child.stdin.write('{"jsonrpc": "2.0", "id": 1, "method": "scopes"}\n');
    let timer;
    const timeout = new Promise((resolve) => {
      timer = setTimeout(() => resolve("still running 10 s after its output closed"), 10000);
    });
    const code = await Promise.race([exited.then(([status]) => status), timeout]);
    clearTimeout(timer);
    assert.equal(code, 0);
  } finally {
    child.kill("SIGKILL");
  }
});

test("a killed server fails the requests in flight", async () => {
  const { start, done } = session();
  const host = start({ expectStatus: null });
  await host.loadPlugin({ name: "sleepy", wasm: wasm("hostile"), config: { mode: "sleep", in: "section" }, limits: { call_timeout_ms: 20000 } });
  const pending = rejection(host.render());
  await sleep(100);
  await host.kill();
  const e = await pending;
  assert.ok(e instanceof ServerExited);
  assert.equal(e.method, "render");
  assert.equal(e.signal, "SIGKILL");
  await done();
});

test("a bad --config: the server exits with its message", async () => {
  const config = join(tempDir(), "host.toml");
  writeFileSync(config, "[prompt]\nno_such_key = 1\n");
  const { start, done } = session();
  const host = start({ config, expectStatus: 1 });
  const e = await rejection(host.describe());
  assert.ok(e instanceof ServerExited);
  await host.close();
  assert.match(host.stderrTail(), /no_such_key/);
  await done();
});

test("binary from PROMPT_HOST_BIN", async () => {
  const saved = process.env.PROMPT_HOST_BIN;
  process.env.PROMPT_HOST_BIN = binary();
  try {
    const wire = new Wire();
    const host = new PromptHost({ env: { PROMPT_HOST_CACHE_DIR: CACHE }, trace: wire.trace });
    assert.equal((await host.describe()).name, "prompt-host");
    assert.equal(await host.close(), 0);
    wire.assertClean();
  } finally {
    if (saved === undefined) delete process.env.PROMPT_HOST_BIN;
    else process.env.PROMPT_HOST_BIN = saved;
  }
});

test("mcp_skill: a skill's body read verified by name, a tampered one refused with kind mcp-skill", async () => {
  const dir = tempDir();
  const root = join(dir, "skills");
  cpSync(join(REPO, "tests", "fixtures", "mcp-skills", "skills"), root, { recursive: true });
  const config = join(dir, "host.toml");
  writeFileSync(
    config,
    `[host]
mcp_provider = ${JSON.stringify(wasm("mcp-instructions"))}

[[scope]]
name = "agent"

[[mcp]]
name = "docs"
command = "python3"
args = [${JSON.stringify(join(REPO, "tests", "fixtures", "mcp-skills", "server.py"))}, ${JSON.stringify(root)}, "--tamper", "code-review"]
scope = "agent"
timeout_ms = 20000
`,
  );
  const sha = (bytes) => `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
  await withHost(
    async (host) => {
      const [status] = await host.mcpStatus({ wait_ms: 30000 });
      assert.deepEqual(status.skills.map((s) => s.name), ["code-review", "release-notes"], JSON.stringify(status));
      const notes = readFileSync(join(root, "release-notes", "SKILL.md"));
      const body = await host.mcpSkill({ server: "docs", scope: "agent", skill: "release-notes" });
      assert.equal(body.text, notes.toString("utf8"));
      assert.deepEqual([body.digest, body.verified, body.skill.digest], [sha(notes), true, sha(notes)]);
      const refused = await rejection(host.mcpSkill({ server: "docs", scope: "agent", skill: "code-review" }));
      assert.ok(refused instanceof PromptHostError);
      assert.equal(refused.kind, "mcp-skill");
      const review = readFileSync(join(root, "code-review", "SKILL.md"));
      assert.ok(refused.message.endsWith(`the manifest says ${sha(review)}`), refused.message);
    },
    { host: { config } },
  );
});
