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
 * body it received. `send(step, fn)` ties them together.
 */
export async function provider(replies) {
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
