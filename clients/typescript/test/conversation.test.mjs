// Conversations on the default route (chat-completions): each model request compared with the
// exact JSON expected; retry re-uses the assembly; replay equals what each step returned.

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";

import { FAILED, PromptHostError } from "prompt-host";
import { IDENTITY, SNAPSHOT, rejection, session, tempDir, wasm, withHost } from "./helpers.mjs";

const SCOPE = "agent:conv";
const TOOLS = [
  { name: "ls", description: "List a directory.", parameters: { type: "object", properties: { path: { type: "string" } } } },
  { name: "read_file", description: "Read a file.", parameters: { type: "object", properties: { path: { type: "string" } } } },
];
const WIRE_TOOLS = TOOLS.map((t) => ({ type: "function", function: t }));
const system = (model) => ({ role: "system", content: `${IDENTITY}\n\nWork in /repo. You run on ${model}.` });
const user = (content) => ({ role: "user", content });
const CONTEXT = user(`${SNAPSHOT}Sandbox: read-only.`);

async function deploy(host) {
  await host.bindScope(SCOPE);
  await host.loadPlugin({
    name: "conv", wasm: wasm("declare"), scope: SCOPE,
    config: {
      sections: [{ name: "rules", order: 100, text: "Work in {{cwd}}. You run on {{model}}." }],
      contexts: [{ name: "sandbox", order: 10, text: "Sandbox: read-only." }],
      tools: [{ schemas: TOOLS }],
    },
  });
}

test("five turns, three tool calls: every request exactly as expected; replay equal", () =>
  withHost(async (host, { wire }) => {
    await deploy(host);
    const log = join(tempDir(), "session.jsonl");
    const m1 = { model: "m1", cwd: "/repo" };
    const m2 = { model: "m2", cwd: "/repo" };
    const results = [];
    const step = async (params) => {
      const r = await host.step({ session: log, scope: SCOPE, ...params });
      results.push(r);
      return r;
    };
    const head = (r) => [r.step, r.commits, r.header, r.starts_series];

    // Turn 1
    let r = await step({ facts: m1, user: ["List the files."] });
    assert.deepEqual(head(r), [0, 1, "initial", false]);
    assert.deepEqual(r.request, { messages: [system("m1"), user("List the files."), CONTEXT], tools: WIRE_TOOLS, model: "m1" });
    // seq 6 is the step's request/context (route chat-completions, model m1).
    assert.equal(await host.appendAssistant({ session: log, tool_calls: [{ id: "call_1", name: "ls", arguments: { path: "." } }] }), 7);
    assert.equal(await host.appendToolResult({ session: log, call_id: "call_1", content: "README.md\nsrc" }), 8);
    r = await step({ facts: m1 });
    const turn1 = [
      system("m1"), user("List the files."), CONTEXT,
      // Tool calls only: no content key (the plain form; a provider's reply keeps its own).
      { role: "assistant", tool_calls: [{ id: "call_1", type: "function", function: { name: "ls", arguments: '{"path":"."}' } }] },
      { role: "tool", content: "README.md\nsrc", tool_call_id: "call_1" },
    ];
    assert.deepEqual(head(r), [1, 0, null, false]);
    assert.deepEqual(r.request, { messages: turn1, tools: WIRE_TOOLS, model: "m1" });
    await host.appendAssistant({ session: log, text: "README.md and src." });

    // Turn 2: two calls in one reply, one result an error.
    r = await step({ facts: m1, user: ["Read them."] });
    const turn2Start = [...turn1, { role: "assistant", content: "README.md and src." }, user("Read them.")];
    assert.deepEqual(head(r), [2, 0, null, false]);
    assert.deepEqual(r.request, { messages: turn2Start, tools: WIRE_TOOLS, model: "m1" });
    await host.appendAssistant({
      session: log, text: "Reading both.",
      tool_calls: [{ id: "call_2", name: "read_file", arguments: { path: "README.md" } }, { id: "call_3", name: "read_file", arguments: { path: "src" } }],
    });
    await host.appendToolResult({ session: log, call_id: "call_2", content: "# Demo" });
    await host.appendToolResult({ session: log, call_id: "call_3", content: "src is a directory", is_error: true });
    r = await step({ facts: m1 });
    const turn2 = [
      ...turn2Start,
      {
        role: "assistant", content: "Reading both.",
        tool_calls: [
          { id: "call_2", type: "function", function: { name: "read_file", arguments: '{"path":"README.md"}' } },
          { id: "call_3", type: "function", function: { name: "read_file", arguments: '{"path":"src"}' } },
        ],
      },
      { role: "tool", content: "# Demo", tool_call_id: "call_2" },
      // chat-completions has no error flag: a failed call's result is stated as an error.
      { role: "tool", content: "Error: src is a directory", tool_call_id: "call_3" },
    ];
    assert.deepEqual(head(r), [3, 0, null, false]);
    assert.deepEqual(r.request, { messages: turn2, tools: WIRE_TOOLS, model: "m1" });
    await host.appendAssistant({ session: log, text: "README is a title.", reasoning: "src failed to read" });

    // Turn 3
    r = await step({ facts: m1, user: ["Thanks."] });
    // Reasoning is recorded, not sent: chat-completions' default is reasoning "omit".
    const turn3Start = [...turn2, { role: "assistant", content: "README is a title." }, user("Thanks.")];
    assert.deepEqual(head(r), [4, 0, null, false]);
    assert.deepEqual(r.request, { messages: turn3Start, tools: WIRE_TOOLS, model: "m1" });
    await host.appendAssistant({ session: log, text: "You're welcome.", reasoning: "polite" });

    // Turn 4: another model re-renders the prompt.
    r = await step({ facts: m2, user: ["Which model are you?"] });
    const turn4Start = [system("m2"), ...turn3Start.slice(1), { role: "assistant", content: "You're welcome." }, user("Which model are you?")];
    assert.deepEqual(head(r), [5, 1, null, false]);
    assert.deepEqual(r.request, { messages: turn4Start, tools: WIRE_TOOLS, model: "m2" });
    await host.appendAssistant({ session: log, text: "m2." });

    // Turn 5: two user messages, a new series.
    r = await step({ facts: m2, user: ["One.", "Two."], starts_series: true });
    assert.deepEqual(head(r), [6, 0, "series", true]);
    assert.deepEqual(r.request, { messages: [...turn4Start, { role: "assistant", content: "m2." }, user("One."), user("Two.")], tools: WIRE_TOOLS, model: "m2" });

    for (const s of results) assert.deepEqual(await host.request({ session: log, step: s.step }), { step: s.step, request: s.request });
    const text = (method) =>
      Object.fromEntries(wire.responses().filter((m) => wire.methods.get(m.id) === method).map((m) => [m.result.step, JSON.stringify(m.result.request)]));
    assert.deepEqual(text("request"), text("step"));
  }));

/** The seq of the user's message `text`, from the log on disk. */
function userMessageSeq(log, text) {
  const events = readFileSync(log, "utf8").trim().split("\n").slice(1).map((line) => JSON.parse(line));
  const found = events.find((e) => e.type === "user/message" && JSON.stringify(e.data).includes(JSON.stringify(text)));
  assert.ok(found, `no user message ${text} in ${log}`);
  return found.seq;
}

test("compact: a range that splits a tool call is refused, nothing written; the summary is sent after the system prompt; earlier steps replay unchanged", () =>
  withHost(async (host) => {
    await deploy(host);
    const log = join(tempDir(), "session.jsonl");
    const m1 = { model: "m1", cwd: "/repo" };
    const steps = [await host.step({ session: log, scope: SCOPE, facts: m1, user: ["List the files."] })];
    const call = await host.appendAssistant({ session: log, tool_calls: [{ id: "call_1", name: "ls", arguments: { path: "." } }] });
    const result = await host.appendToolResult({ session: log, call_id: "call_1", content: "README.md\nsrc" });
    steps.push(await host.step({ session: log, scope: SCOPE, facts: m1 }));
    await host.appendAssistant({ session: log, text: "README.md and src." });
    steps.push(await host.step({ session: log, scope: SCOPE, facts: m1, user: ["Thanks."] }));
    await host.appendAssistant({ session: log, text: "You're welcome." });
    const userSeq = userMessageSeq(log, "List the files.");
    assert.ok(userSeq < call && call < result);
    const before = readFileSync(log);

    // From the user's message to the call, leaving its result out: refused, nothing written.
    const e = await rejection(host.compact({ session: log, summary: "They listed the files.", start_seq: userSeq, end_seq: call }));
    assert.ok(e instanceof PromptHostError);
    assert.deepEqual([e.code, e.kind, e.session, e.method], [FAILED, "compaction", log, "compact"]);
    assert.ok(e.message.startsWith(`session log ${log}: compaction refused: `), e.message);
    assert.ok(
      e.message.includes(`the range would separate tool call call_1 (seq ${call}) from its result (seq ${result}); end the range at seq ${result} or later`),
      e.message,
    );
    assert.deepEqual(readFileSync(log), before);

    // Everything but the newest turn becomes the summary.
    const summary = "The user asked for the files: README.md and src.";
    const done = await host.compact({ session: log, summary, keep_turns: 1 });
    assert.deepEqual([done.summary_seq, done.end_event], [done.start_event + 1, done.start_event + 2]);
    assert.equal(done.replaced[0], userSeq);
    assert.ok(done.replaced.includes(call) && done.replaced.includes(result), JSON.stringify(done));
    assert.equal(done.prefix_messages_kept, 1);

    // The next request: the system prompt, the summary, the kept turn, the new input (and the
    // runtime-context snapshot, which was in the range, sent again).
    const next = await host.step({ session: log, scope: SCOPE, facts: m1, user: ["And the tests?"] });
    const messages = next.request.messages;
    assert.deepEqual(messages.slice(0, 4), [system("m1"), user(summary), user("Thanks."), { role: "assistant", content: "You're welcome." }]);
    assert.ok(messages.slice(4).some((m) => m.content === "And the tests?"), JSON.stringify(messages));
    assert.equal(messages.filter((m) => m.content === CONTEXT.content).length, 1, JSON.stringify(messages));
    assert.ok(!messages.some((m) => m.content === "List the files." || m.tool_call_id === "call_1"), JSON.stringify(messages));

    // The log keeps what was replaced: every step replays as it was sent.
    for (const s of [...steps, next]) assert.deepEqual(await host.request({ session: log, step: s.step }), { step: s.step, request: s.request });
  }));

test("retry re-uses the assembly: no plugin call", () =>
  withHost(async (host) => {
    await host.bindScope("r");
    await host.loadPlugin({
      name: "counter", wasm: wasm("declare"), scope: "r",
      config: {
        sections: [{ name: "model", order: 10, text: "You run on {{model}}." }, { name: "counter", order: 20, text: { dynamic: "Assembly number ${call}." } }],
        contexts: [{ name: "ctx", order: 10, text: { dynamic: "Context call ${call}." } }],
      },
    });
    const log = join(tempDir(), "s.jsonl");
    const first = await host.step({ session: log, scope: "r", facts: { model: "primary" }, user: ["hi"] });
    assert.deepEqual(first.request.messages, [
      { role: "system", content: `${IDENTITY}\n\nYou run on primary.\n\nAssembly number 1.` },
      user("hi"),
      user(`${SNAPSHOT}Context call 1.`),
    ]);
    const size = readFileSync(log).length;
    const retried = await host.retry({ session: log, facts: { model: "fallback" } });
    assert.deepEqual([retried.step, retried.commits, retried.header], [1, 1, null]);
    assert.deepEqual(retried.request.messages, [
      { role: "system", content: `${IDENTITY}\n\nYou run on fallback.\n\nAssembly number 1.` },
      user("hi"),
      user(`${SNAPSHOT}Context call 1.`),
    ]);
    const added = readFileSync(log, "utf8").slice(size).trim().split("\n").map((l) => JSON.parse(l));
    // Another model: the retry's resolved route is logged (request/context).
    assert.deepEqual(added.map((e) => e.type), ["step/start", "system/message", "request/context", "step/end"]);
    assert.deepEqual(added[0].data, { step: 1, retryOf: 0 });
    // The counter moved once, for the first step only.
    assert.ok((await host.render({ scope: "r", facts: { model: "x" } })).prompt.endsWith("Assembly number 2."));
    assert.deepEqual(await host.request({ session: log }), { step: 1, request: retried.request });
    assert.deepEqual(await host.request({ session: log, step: 0 }), { step: 0, request: first.request });
  }));

test("replay from another process; resume header", async () => {
  const { start, done } = session();
  const writer = start();
  await deploy(writer);
  const log = join(tempDir(), "s.jsonl");
  const facts = { model: "m1", cwd: "/repo" };
  const steps = [await writer.step({ session: log, scope: SCOPE, facts, user: ["hi"] })];
  await writer.appendAssistant({ session: log, tool_calls: [{ id: "c1", name: "ls", arguments: { path: "/" } }] });
  await writer.appendToolResult({ session: log, call_id: "c1", content: "bin etc" });
  steps.push(await writer.step({ session: log, scope: SCOPE, facts }));
  await writer.appendAssistant({ session: log, text: "done" });
  await writer.closeSession(log);
  const reader = start();
  for (const s of steps) assert.deepEqual(await reader.request({ session: log, step: s.step }), { step: s.step, request: s.request });
  await deploy(reader);
  const resumed = await reader.step({ session: log, scope: SCOPE, facts, user: ["again"] });
  assert.equal(resumed.header, "resume");
  await done();
});

test("a session's pipelined requests run in arrival order", () =>
  withHost(async (host) => {
    await deploy(host);
    const log = join(tempDir(), "s.jsonl");
    const facts = { model: "m1", cwd: "/repo" };
    const results = await Promise.all([
      host.step({ session: log, scope: SCOPE, facts, user: ["List."] }),
      host.appendAssistant({ session: log, tool_calls: [{ id: "c1", name: "ls", arguments: {} }] }),
      host.appendToolResult({ session: log, call_id: "c1", content: "x" }),
      host.step({ session: log, scope: SCOPE, facts }),
      host.appendAssistant({ session: log, text: "Done." }),
      host.step({ session: log, scope: SCOPE, facts, user: ["Again."] }),
      host.request({ session: log, step: 1 }),
      host.closeSession(log),
    ]);
    assert.deepEqual([results[0].step, results[3].step, results[5].step], [0, 1, 2]);
    assert.deepEqual([results[1], results[2], results[4]], [7, 8, 11]);
    assert.deepEqual(results[6], { step: 1, request: results[3].request });
    assert.equal(results[7], true);
  }));
