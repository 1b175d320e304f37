// Cancellation through AbortSignal: a step stuck in `hostile` (a busy loop, a WASI sleep) with
// its deadline raised to 10 s, so only the cancel stops it. Measured from the abort to the
// rejection; the log stays byte-for-byte the same (a new one is not created); another scope is
// served meanwhile.

import { test, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import { CANCELLED, RequestCancelled } from "prompt-host";
import { HEADER, IDENTITY, rejection, sleep, tempDir, wasm, withHost } from "./helpers.mjs";

const MAX_CANCEL_MS = 1000; // generous for a debug build on a loaded machine; PROTOCOL.md: ~1 ms + one epoch tick
const STUCK_FOR_MS = 300;
const timings = [];

after(() => {
  for (const [label, ms, other] of timings) {
    console.log(`cancel ${label}: ${ms.toFixed(1)} ms from the abort to the rejection${other === undefined ? "" : `; another scope answered meanwhile in ${other.toFixed(1)} ms`}`);
  }
});

async function setup(host, mode) {
  const stuck = `stuck:${mode}`;
  await host.bindScope("calm");
  await host.bindScope(stuck);
  await host.loadPlugin({ name: "calm", wasm: wasm("declare"), scope: "calm", config: { sections: [{ name: "calm", order: 1, text: "Calm." }] } });
  await host.loadPlugin({ name: "hostile", wasm: wasm("hostile"), scope: stuck, config: { mode, in: "section" }, limits: { call_timeout_ms: 10000 } });
  return stuck;
}

for (const mode of ["loop", "sleep"]) {
  test(`AbortSignal cancels a step stuck in a plugin (${mode})`, () =>
    withHost(async (host, { wire }) => {
      const stuck = await setup(host, mode);
      const log = join(tempDir(), "s.jsonl");
      await host.step({ session: log, scope: "calm", user: ["before"] });
      const before = readFileSync(log);
      const controller = new AbortController();
      let settled = false;
      const pending = rejection(host.step({ session: log, scope: stuck, user: ["stuck"] }, { signal: controller.signal })).finally(() => {
        settled = true;
      });
      await sleep(STUCK_FOR_MS);
      assert.equal(settled, false);
      let t0 = performance.now();
      assert.equal((await host.render({ scope: "calm" })).prompt, `${IDENTITY}\n\nCalm.`);
      const other = performance.now() - t0;
      assert.equal(settled, false);
      t0 = performance.now();
      controller.abort();
      const e = await pending;
      const elapsed = performance.now() - t0;
      timings.push([`AbortController, ${mode}`, elapsed, other]);
      assert.ok(e instanceof RequestCancelled);
      assert.deepEqual([e.code, e.kind, e.scope, e.method, e.timedOut], [CANCELLED, "cancelled", stuck, "step", false]);
      assert.ok(elapsed < MAX_CANCEL_MS, `${elapsed} ms`);
      assert.deepEqual(readFileSync(log), before);
      const stepId = wire.sent.filter((m) => m.method === "step").at(-1).id;
      assert.ok(wire.sent.some((m) => m.method === "$/cancelRequest" && m.params.id === stepId && !("id" in m)));
      const r = await host.step({ session: log, scope: "calm", user: ["after"] });
      assert.deepEqual(r.request.messages.filter((m) => m.role === "user").map((m) => m.content), ["before", "after"]);
    }));

  test(`AbortSignal.timeout cancels too, marked timedOut (${mode})`, () =>
    withHost(async (host) => {
      const stuck = await setup(host, mode);
      const log = join(tempDir(), "s.jsonl");
      const t0 = performance.now();
      const e = await rejection(host.step({ session: log, scope: stuck, user: ["stuck"] }, { signal: AbortSignal.timeout(STUCK_FOR_MS) }));
      const elapsed = performance.now() - t0;
      timings.push([`AbortSignal.timeout(${STUCK_FOR_MS}), ${mode}`, elapsed - STUCK_FOR_MS]);
      assert.ok(e instanceof RequestCancelled);
      assert.equal(e.timedOut, true);
      assert.ok(elapsed >= STUCK_FOR_MS - 5 && elapsed < STUCK_FOR_MS + MAX_CANCEL_MS, `${elapsed} ms`);
      assert.ok(!existsSync(log));
    }));
}

test("an aborted signal cancels at once; one signal, several requests", () =>
  withHost(async (host) => {
    const stuck = await setup(host, "loop");
    const log = join(tempDir(), "s.jsonl");
    const e = await rejection(host.step({ session: log, scope: stuck }, { signal: AbortSignal.abort() }));
    assert.ok(e instanceof RequestCancelled);
    assert.ok(!existsSync(log));
    const controller = new AbortController();
    const pending = [1, 2, 3].map(() => rejection(host.render({ scope: stuck }, { signal: controller.signal })));
    await sleep(100);
    controller.abort();
    for (const p of pending) assert.ok((await p) instanceof RequestCancelled);
  }));

test("a cancelled first step writes nothing to a new log", () =>
  withHost(async (host) => {
    const stuck = await setup(host, "sleep");
    const dir = tempDir();
    const log = join(dir, "new.jsonl");
    let e = await rejection(host.step({ session: log, scope: stuck, user: ["hi"] }, { signal: AbortSignal.timeout(200) }));
    assert.ok(e instanceof RequestCancelled);
    assert.ok(!existsSync(log));
    const empty = join(dir, "empty.jsonl");
    writeFileSync(empty, "");
    e = await rejection(host.step({ session: empty, scope: stuck, user: ["hi"] }, { signal: AbortSignal.timeout(200) }));
    assert.ok(e instanceof RequestCancelled);
    assert.equal(readFileSync(empty, "utf8"), "");
    // The session goes on: its first step that is written creates the log.
    const r = await host.step({ session: log, scope: "calm", user: ["after"] });
    assert.equal(r.step, 0);
    assert.ok(readFileSync(log, "utf8").startsWith(HEADER));
  }));

test("cancelling queued session requests leaves the log untouched", () =>
  withHost(async (host) => {
    const stuck = await setup(host, "sleep");
    const log = join(tempDir(), "s.jsonl");
    await host.step({ session: log, scope: "calm", user: ["before"] });
    const before = readFileSync(log);
    const first = new AbortController();
    const second = new AbortController();
    const p1 = rejection(host.step({ session: log, scope: stuck, user: ["one"] }, { signal: first.signal }));
    const p2 = rejection(host.step({ session: log, scope: "calm", user: ["two"] }, { signal: second.signal }));
    await sleep(STUCK_FOR_MS);
    second.abort();
    first.abort();
    assert.ok((await p1) instanceof RequestCancelled);
    assert.ok((await p2) instanceof RequestCancelled);
    assert.deepEqual(readFileSync(log), before);
  }));

test("aborting after the answer does nothing", () =>
  withHost(async (host, { wire }) => {
    const log = join(tempDir(), "s.jsonl");
    const controller = new AbortController();
    const r = await host.step({ session: log, user: ["hi"] }, { signal: controller.signal });
    controller.abort();
    assert.ok(!wire.sent.some((m) => m.method === "$/cancelRequest"));
    host.cancelRequest(1);
    assert.deepEqual((await host.request({ session: log })).request, r.request);
  }));
