// Test support: the real `prompt-host` binary, the example plugins, and a wire recorder that
// validates every message the server sends against protocol/prompt-host.schema.json.
//
// The binary is PROMPT_HOST_BIN or <repo>/target/debug/prompt-host (`cargo build -p
// prompt-host`); the plugins PROMPT_HOST_GUESTS or <repo>/target/guests/wasm32-wasip2/release.

import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import assert from "node:assert/strict";
import Ajv2020Module from "ajv/dist/2020.js";

import { PromptHost } from "prompt-host";

const Ajv2020 = Ajv2020Module.default ?? Ajv2020Module;

export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
export const SCHEMA = JSON.parse(readFileSync(join(REPO, "protocol", "prompt-host.schema.json"), "utf8"));
export const IDENTITY = "You are an AI agent powered by the DeepSeek Harness SDK.";
export const SNAPSHOT = "Current runtime context. This snapshot supersedes earlier runtime-context snapshots.\n\n";
export const HEADER = '{"prompt-host":"session-log","version":1}\n';

const ajv = new Ajv2020({ allErrors: true, strictTuples: false });
ajv.addSchema(SCHEMA);
const pointer = (token) => token.replaceAll("~", "~0").replaceAll("/", "~1");
const root = ajv.getSchema(SCHEMA.$id);
const results = Object.fromEntries(
  Object.keys(SCHEMA.$defs.results.properties).map((m) => [m, ajv.getSchema(`${SCHEMA.$id}#/$defs/results/properties/${pointer(m)}`)]),
);
const params = Object.fromEntries(
  Object.keys(SCHEMA.$defs.params.properties).map((m) => [m, ajv.getSchema(`${SCHEMA.$id}#/$defs/params/properties/${pointer(m)}`)]),
);

export function binary() {
  const path = process.env.PROMPT_HOST_BIN || join(REPO, "target", "debug", "prompt-host");
  if (!existsSync(path)) throw new Error(`prompt-host binary not found at ${path}: run \`cargo build -p prompt-host\` or set PROMPT_HOST_BIN`);
  return path;
}

export function guests() {
  const dir = process.env.PROMPT_HOST_GUESTS || join(REPO, "target", "guests", "wasm32-wasip2", "release");
  if (!existsSync(join(dir, "declare.wasm"))) {
    throw new Error(
      `example plugins not found in ${dir}: run \`cd guest-examples && CARGO_TARGET_DIR=../target/guests cargo build --release --target wasm32-wasip2\` or set PROMPT_HOST_GUESTS`,
    );
  }
  return dir;
}

/** The path of an example plugin: wasm("declare"). */
export function wasm(name) {
  const path = join(guests(), `${name.replaceAll("-", "_")}.wasm`);
  assert.ok(existsSync(path), path);
  return path;
}

/** One compile cache for the whole run, so that each plugin compiles once. */
export const CACHE = process.env.PROMPT_HOST_CACHE_DIR || mkdtempSync(join(tmpdir(), "prompt-host-ts-cache-"));

export function tempDir() {
  return mkdtempSync(join(tmpdir(), "prompt-host-ts-"));
}

const describeErrors = (validate) => (validate.errors ?? []).map((e) => `${e.instancePath || "<root>"} ${e.message}`).join("; ");

/** A `trace` hook: records both ways, validates every received message (and a response's
 * result against its method's result schema) and every sent request's params. */
export class Wire {
  constructor() {
    this.sent = [];
    this.received = [];
    this.methods = new Map();
    this.errors = [];
    this.sendViolations = [];
    this.waiters = [];
    this.trace = (direction, message) => this.record(direction, message);
  }

  record(direction, message) {
    if (direction === "send") {
      this.sent.push(message);
      if ("id" in message) this.methods.set(message.id, message.method);
      const validate = params[message.method];
      if (validate && !validate(message.params ?? {})) this.sendViolations.push(`${message.method}: ${describeErrors(validate)}`);
      return;
    }
    if (direction === "recv-invalid") {
      this.errors.push(`a line that is not JSON: ${message}`);
      return;
    }
    this.received.push(message);
    if (!root(message)) {
      this.errors.push(`schema: ${JSON.stringify(message).slice(0, 2000)}: ${describeErrors(root)}`);
    } else {
      for (const item of Array.isArray(message) ? message : [message]) {
        if (!("result" in item)) continue;
        const validate = results[this.methods.get(item.id)];
        if (validate && !validate(item.result)) {
          this.errors.push(`result of ${this.methods.get(item.id)}: ${JSON.stringify(item).slice(0, 2000)}: ${describeErrors(validate)}`);
        }
      }
    }
    for (const waiter of [...this.waiters]) {
      if (waiter.predicate(message)) {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        waiter.resolve(message);
      }
    }
  }

  /** The first message received from now on that matches. */
  waitFor(predicate, timeoutMs = 30_000) {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("no matching message within the timeout")), timeoutMs);
      this.waiters.push({
        predicate,
        resolve: (m) => {
          clearTimeout(timer);
          resolve(m);
        },
      });
    });
  }

  responses() {
    return this.received.flatMap((m) => (Array.isArray(m) ? m : [m])).filter((m) => "id" in m);
  }

  assertClean({ allowInvalidParams = false } = {}) {
    assert.deepEqual(this.errors, [], "messages that fail protocol/prompt-host.schema.json");
    if (!allowInvalidParams) assert.deepEqual(this.sendViolations, [], "requests this suite sent that fail the params schema");
  }
}

/**
 * Start servers traced by one Wire; `done()` closes them (expecting exit status 0 unless
 * told otherwise) and checks the wire.
 */
export function session(options = {}) {
  const wire = new Wire();
  const hosts = [];
  const start = ({ expectStatus = 0, ...extra } = {}) => {
    const host = new PromptHost({
      binary: binary(),
      trace: wire.trace,
      ...extra,
      env: { PROMPT_HOST_CACHE_DIR: CACHE, ...(extra.env ?? {}) },
    });
    hosts.push({ host, expectStatus });
    return host;
  };
  const done = async () => {
    for (const { host, expectStatus } of hosts) {
      const status = await host.close();
      if (expectStatus !== null) assert.equal(status, expectStatus, `prompt-host serve exited with ${status}: ${host.stderrTail()}`);
    }
    wire.assertClean(options);
  };
  return { wire, start, done };
}

/** Run `fn(host, ctx)` against a fresh server; closes it and checks the wire afterwards. */
export async function withHost(fn, options = {}) {
  const ctx = session(options);
  try {
    await fn(ctx.start(options.host ?? {}), ctx);
  } finally {
    await ctx.done();
  }
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Rejects with the error `promise` rejects with (asserting it does). */
export async function rejection(promise) {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  assert.fail("expected a rejection");
}
