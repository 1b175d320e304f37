/**
 * `PromptHost` starts `prompt-host serve` and speaks JSON-RPC 2.0 to it over its stdio:
 * requests go out concurrently and are matched to responses by id; an `AbortSignal` cancels
 * one (`$/cancelRequest`); notifications arrive as `notification` events or through an async
 * iterator.
 */

import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { EventEmitter } from "node:events";
import { accessSync, constants } from "node:fs";
import { createRequire } from "node:module";
import { delimiter, dirname, join } from "node:path";

import { INVALID_REQUEST, PromptHostError, ServerExited, type RpcErrorObject } from "./errors.js";
import type {
  AppendAssistantParams,
  AppendToolResultParams,
  Assembly,
  CompactParams,
  Compacted,
  Describe,
  Facts,
  LoadPluginParams,
  McpSkillBody,
  McpSkillParams,
  McpStatus,
  Notification,
  PluginInfo,
  RenderParams,
  Rendered,
  Replay,
  RequestParams,
  RetryParams,
  StepParams,
  StepResult,
  SubscribeParams,
  TargetParams,
} from "./types.js";

/** `trace(direction, message)`: every message sent (`"send"`) and received (`"recv"`, a
 * batch answer as an array); `"recv-invalid"` with the text of a line that is not JSON. */
export type Trace = (direction: "send" | "recv" | "recv-invalid", message: unknown) => void;

export interface PromptHostOptions {
  /** A host.toml (`--config`). */
  config?: string;
  /** The executable; else `PROMPT_HOST_BIN`, else the platform package's (`bundledBinary`),
   * else `prompt-host` on PATH. */
  binary?: string;
  /** `--max-request-bytes`. */
  maxRequestBytes?: number;
  /** More arguments after `serve`. */
  args?: string[];
  /** Variables added to this process's environment for the server. */
  env?: Record<string, string>;
  cwd?: string;
  /** Sees every message both ways (for protocol tests and debugging). */
  trace?: Trace;
}

export interface CallOptions {
  /** Aborting it sends `$/cancelRequest`; the call then rejects with the server's
   * `RequestCancelled` (or resolves, if the request finished first). */
  signal?: AbortSignal;
}

interface Pending {
  method: string;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
  timedOut: boolean;
}

/** The C library this Linux process runs on: `"gnu"` (glibc) or `"musl"`; asked once. */
let linuxLibc: "gnu" | "musl" | undefined;

function libc(): "gnu" | "musl" {
  if (linuxLibc === undefined) {
    const report = process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined;
    linuxLibc = report?.header?.glibcVersionRuntime ? "gnu" : "musl";
  }
  return linuxLibc;
}

/**
 * The npm package that carries the `prompt-host` executable for this platform, which
 * `npm run pack:bundled` packs beside this one and names as its optional dependency:
 * `@prompt-host/<platform>-<arch>`, with `-gnu` or `-musl` on Linux (the C library the
 * executable links), such as `@prompt-host/linux-x64-gnu`. npm installs it only where its
 * `os`, `cpu` and `libc` match.
 */
export function platformPackage(): string {
  const suffix = process.platform === "linux" ? `-${libc()}` : "";
  return `@prompt-host/${process.platform}-${process.arch}${suffix}`;
}

/**
 * The executable of the platform package installed beside this one (`platformPackage`):
 * `prompt-host` at its top, with the plugins it ships in `plugins/` beside it.
 */
export function bundledBinary(): string | undefined {
  let dir: string;
  try {
    dir = dirname(createRequire(import.meta.url).resolve(`${platformPackage()}/package.json`));
  } catch {
    return undefined;
  }
  const candidate = join(dir, process.platform === "win32" ? "prompt-host.exe" : "prompt-host");
  try {
    accessSync(candidate, constants.X_OK);
    return candidate;
  } catch {
    return undefined;
  }
}

/**
 * The `prompt-host` executable: `binary`, else `PROMPT_HOST_BIN`, else the one this package
 * installs for the platform (`bundledBinary`), else `prompt-host` on PATH.
 */
export function findBinary(binary?: string): string {
  if (binary) return binary;
  const fromEnv = process.env.PROMPT_HOST_BIN;
  if (fromEnv) return fromEnv;
  const bundled = bundledBinary();
  if (bundled) return bundled;
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, "prompt-host");
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  throw new Error(
    "prompt-host executable not found: pass `binary`, set PROMPT_HOST_BIN, install the platform package packed beside this one (npm run pack:bundled packs both), or put prompt-host on PATH",
  );
}

function factsParam(facts: Facts | undefined): unknown {
  if (facts === undefined) return undefined;
  if (Array.isArray(facts)) return facts.map(([k, v]) => [k, v]);
  return facts;
}

/** Drop the keys whose value is `undefined`, so only what the caller gave is sent. */
function defined<T extends object>(params: T): T {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(params)) if (v !== undefined) out[k] = v;
  return out as T;
}

const END = Symbol("end");

/** The server's default `--max-request-bytes`. */
export const DEFAULT_MAX_REQUEST_BYTES = 16 << 20;

/**
 * A running `prompt-host serve`. Events: `notification` (a `Notification`), `stderr` (a line
 * the server wrote to stderr), `exit` (`ServerExited`).
 */
export class PromptHost extends EventEmitter {
  readonly process: ChildProcessWithoutNullStreams;
  /** Requests longer than this are refused before sending (the server's limit). */
  readonly maxRequestBytes: number;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly trace: Trace | undefined;
  private readonly stderrLines: string[] = [];
  private readonly streams = new Set<(item: Notification | typeof END) => void>();
  private exited: ServerExited | undefined;
  private readonly exitPromise: Promise<ServerExited>;
  private chunks: Buffer[] = [];

  constructor(options: PromptHostOptions = {}) {
    super();
    this.trace = options.trace;
    this.maxRequestBytes = options.maxRequestBytes ?? DEFAULT_MAX_REQUEST_BYTES;
    const args = ["serve"];
    if (options.config !== undefined) args.push("--config", options.config);
    if (options.maxRequestBytes !== undefined) args.push("--max-request-bytes", String(options.maxRequestBytes));
    args.push(...(options.args ?? []));
    this.process = spawn(findBinary(options.binary), args, {
      stdio: ["pipe", "pipe", "pipe"],
      env: { ...process.env, ...(options.env ?? {}) },
      cwd: options.cwd,
    });
    this.process.stdout.on("data", (chunk: Buffer) => this.onStdout(chunk));
    let stderrRest = "";
    this.process.stderr.setEncoding("utf8");
    this.process.stderr.on("data", (text: string) => {
      const parts = (stderrRest + text).split("\n");
      stderrRest = parts.pop() ?? "";
      for (const line of parts) this.onStderrLine(line);
    });
    // A write after the server exited fails here; the pending calls are rejected on exit.
    this.process.stdin.on("error", () => {});
    this.exitPromise = new Promise((resolve) => {
      let spawnError: Error | undefined;
      this.process.on("error", (e) => {
        spawnError = e;
      });
      this.process.on("close", (code, signal) => {
        if (stderrRest) this.onStderrLine(stderrRest);
        const why = spawnError ? `prompt-host serve could not start: ${spawnError.message}` : `prompt-host serve exited (status ${code}${signal ? `, signal ${signal}` : ""})`;
        this.exited = new ServerExited(why, code, signal, this.stderrTail());
        for (const [, call] of this.pending) {
          call.reject(new ServerExited(why, code, signal, this.stderrTail(), call.method));
        }
        this.pending.clear();
        for (const push of this.streams) push(END);
        this.streams.clear();
        this.emit("exit", this.exited);
        resolve(this.exited);
      });
    });
  }

  /** The server's process id. */
  get pid(): number | undefined {
    return this.process.pid;
  }

  /** The last lines the server wrote to stderr. */
  stderrTail(): string {
    return this.stderrLines.join("\n");
  }

  /** Close the server's input (it answers what is in flight, then exits) and wait for it;
   * killed after `timeoutMs`. Resolves with the exit status. */
  async close(timeoutMs = 30_000): Promise<number | null> {
    if (!this.exited) this.process.stdin.end();
    const timer = setTimeout(() => this.process.kill("SIGKILL"), timeoutMs);
    try {
      return (await this.exitPromise).exitCode;
    } finally {
      clearTimeout(timer);
    }
  }

  /** End the server at once (requests in flight reject with `ServerExited`). */
  async kill(): Promise<void> {
    this.process.kill("SIGKILL");
    await this.exitPromise;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  // -- the wire -------------------------------------------------------------------------------

  private write(message: Record<string, unknown>): void {
    const line = JSON.stringify(message);
    const bytes = Buffer.byteLength(line, "utf8");
    if (bytes > this.maxRequestBytes) {
      // The server would answer with id null, so the request could not be told apart.
      throw new PromptHostError(
        INVALID_REQUEST,
        `invalid request: the request line has ${bytes} bytes, more than the limit of ${this.maxRequestBytes} (serve --max-request-bytes); not sent`,
        { kind: "request-too-large", bytes, limit: this.maxRequestBytes },
        typeof message.method === "string" ? message.method : undefined,
      );
    }
    this.trace?.("send", message);
    if (this.exited) throw this.exited;
    this.process.stdin.write(line + "\n");
  }

  /** Write a line as it is (for protocol tests); its answer reaches only `trace`. */
  sendRaw(line: string | Buffer): void {
    if (this.exited) throw this.exited;
    this.process.stdin.write(line);
    const last = typeof line === "string" ? line.endsWith("\n") : line[line.length - 1] === 0x0a;
    if (!last) this.process.stdin.write("\n");
  }

  private onStdout(chunk: Buffer): void {
    let start = 0;
    for (;;) {
      const at = chunk.indexOf(0x0a, start);
      if (at < 0) break;
      const piece = chunk.subarray(start, at);
      let line: Buffer;
      if (this.chunks.length > 0) {
        this.chunks.push(piece);
        line = Buffer.concat(this.chunks);
        this.chunks = [];
      } else {
        line = piece;
      }
      this.onLine(line.toString("utf8"));
      start = at + 1;
    }
    if (start < chunk.length) this.chunks.push(chunk.subarray(start));
  }

  private onLine(text: string): void {
    if (text.trim() === "") return;
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      this.trace?.("recv-invalid", text);
      return;
    }
    this.trace?.("recv", message);
    if (Array.isArray(message)) for (const item of message) this.dispatch(item);
    else this.dispatch(message);
  }

  private dispatch(message: unknown): void {
    if (!message || typeof message !== "object") return;
    const m = message as Record<string, unknown>;
    if (typeof m.method === "string" && !("id" in m)) {
      const note = { method: m.method, params: (m.params ?? {}) } as Notification;
      this.emit("notification", note);
      for (const push of this.streams) push(note);
      return;
    }
    if (typeof m.id !== "number") return;
    const call = this.pending.get(m.id);
    if (!call) return;
    this.pending.delete(m.id);
    if ("error" in m) call.reject(PromptHostError.fromResponse(m.error as RpcErrorObject, call.method, call.timedOut));
    else call.resolve(m.result);
  }

  private onStderrLine(line: string): void {
    this.stderrLines.push(line);
    if (this.stderrLines.length > 200) this.stderrLines.shift();
    this.emit("stderr", line);
  }

  // -- generic calls -----------------------------------------------------------------------

  /** Send a request; resolves with its raw result, rejects with `PromptHostError`. */
  call<T = unknown>(method: string, params?: object, options: CallOptions = {}): Promise<T> {
    if (this.exited) return Promise.reject(new ServerExited(this.exited.message, this.exited.exitCode, this.exited.signal, "", method));
    const id = this.nextId++;
    const { signal } = options;
    return new Promise<T>((resolve, reject) => {
      let onAbort: (() => void) | undefined;
      const call: Pending = {
        method,
        resolve: (v) => {
          if (onAbort) signal?.removeEventListener("abort", onAbort);
          resolve(v as T);
        },
        reject: (e) => {
          if (onAbort) signal?.removeEventListener("abort", onAbort);
          reject(e);
        },
        timedOut: false,
      };
      this.pending.set(id, call);
      const message: Record<string, unknown> = { jsonrpc: "2.0", id, method };
      if (params !== undefined) message.params = params;
      try {
        this.write(message);
      } catch (e) {
        this.pending.delete(id);
        reject(e);
        return;
      }
      if (signal) {
        onAbort = () => {
          if (!this.pending.has(id)) return;
          const reason: unknown = signal.reason;
          call.timedOut = reason instanceof Error && reason.name === "TimeoutError";
          this.cancelRequest(id);
        };
        if (signal.aborted) onAbort();
        else signal.addEventListener("abort", onAbort, { once: true });
      }
    });
  }

  /** Send a notification (a request without id: nothing is answered). */
  notify(method: string, params?: object): void {
    const message: Record<string, unknown> = { jsonrpc: "2.0", method };
    if (params !== undefined) message.params = params;
    this.write(message);
  }

  /** Send `$/cancelRequest` for request `id` (as a notification). */
  cancelRequest(id: number | string): void {
    try {
      this.notify("$/cancelRequest", { id });
    } catch {
      // the server is gone; the call rejects with ServerExited
    }
  }

  /** The notifications received from now on, as an async iterator (ends when the server
   * exits, or when the loop is left). `subscribe` chooses which the server sends. */
  notifications(): AsyncIterableIterator<Notification> {
    const queue: Array<Notification | typeof END> = [];
    let wake: (() => void) | undefined;
    const push = (item: Notification | typeof END) => {
      queue.push(item);
      wake?.();
      wake = undefined;
    };
    if (this.exited) push(END);
    else this.streams.add(push);
    const streams = this.streams;
    const iterator: AsyncIterableIterator<Notification> = {
      async next(): Promise<IteratorResult<Notification>> {
        while (queue.length === 0) await new Promise<void>((r) => (wake = r));
        const item = queue[0]!;
        if (item === END) return { value: undefined, done: true };
        queue.shift();
        return { value: item, done: false };
      },
      async return(): Promise<IteratorResult<Notification>> {
        streams.delete(push);
        queue.length = 0;
        queue.push(END);
        return { value: undefined, done: true };
      },
      [Symbol.asyncIterator]() {
        return iterator;
      },
    };
    return iterator;
  }

  // -- the methods --------------------------------------------------------------------------

  describe(options?: CallOptions): Promise<Describe> {
    return this.call("describe", {}, options);
  }

  async bindScope(scope: string, parent?: string, options?: CallOptions): Promise<void> {
    await this.call("bind_scope", defined({ scope, parent }), options);
  }

  async disposeScope(scope: string, options?: CallOptions): Promise<void> {
    await this.call("dispose_scope", { scope }, options);
  }

  scopes(options?: CallOptions): Promise<string[]> {
    return this.call("scopes", {}, options);
  }

  /** Load a plugin; resolves with its id (for `disposePlugin`). */
  async loadPlugin(params: LoadPluginParams, options?: CallOptions): Promise<number> {
    return (await this.call<{ id: number }>("load_plugin", defined(params), options)).id;
  }

  /**
   * Replace loaded plugin `id` by the component at `wasm` (a rebuilt plugin), with the same
   * name, scope, config and limits; resolves to how many entries the new instance declared.
   * If the new one fails to load, the old one stays and the error says why.
   */
  async reloadPlugin(id: number, wasm: string, options?: CallOptions): Promise<number> {
    return (await this.call<{ id: number; declarations: number }>("reload_plugin", { id, wasm }, options)).declarations;
  }

  async disposePlugin(id: number, options?: CallOptions): Promise<boolean> {
    return (await this.call<{ disposed: boolean }>("dispose_plugin", { id }, options)).disposed;
  }

  plugins(options?: CallOptions): Promise<PluginInfo[]> {
    return this.call("plugins", {}, options);
  }

  assemble(params: TargetParams = {}, options?: CallOptions): Promise<Assembly> {
    return this.call("assemble", defined({ ...params, facts: factsParam(params.facts) }), options);
  }

  render(params: RenderParams = {}, options?: CallOptions): Promise<Rendered> {
    return this.call("render", defined({ ...params, facts: factsParam(params.facts) }), options);
  }

  /** Take a step: assemble, commit what changed, and derive the request for the route. */
  step(params: StepParams, options?: CallOptions): Promise<StepResult> {
    return this.call("step", defined({ ...params, facts: factsParam(params.facts) }), options);
  }

  /** Re-derive the newest step (another model or route) re-using its assembly. */
  retry(params: RetryParams, options?: CallOptions): Promise<StepResult> {
    return this.call("retry", defined({ ...params, facts: factsParam(params.facts) }), options);
  }

  /**
   * Append the model's reply: the provider's own (`{ session, reply, route?, usage? }`: a chat
   * completion, an Anthropic `Message`, a Responses `Response`, or the part of it docs/routes.md
   * names), or the plain form (`{ session, text?, reasoning?, tool_calls?, usage? }`). Resolves
   * with its `seq` in the log; a reply the route cannot read is refused, nothing appended.
   */
  async appendAssistant(params: AppendAssistantParams, options?: CallOptions): Promise<number> {
    return (await this.call<{ seq: number }>("append_assistant", defined(params), options)).seq;
  }

  /** Append a tool's result; resolves with its `seq` in the log. */
  async appendToolResult(params: AppendToolResultParams, options?: CallOptions): Promise<number> {
    return (await this.call<{ seq: number }>("append_tool_result", defined(params), options)).seq;
  }

  /** The request step `step` returned (the newest when absent), rebuilt from the log. */
  request(params: RequestParams, options?: CallOptions): Promise<Replay> {
    return this.call("request", defined(params), options);
  }

  /**
   * Replace a range of the session's surface by `summary` (text the caller's model wrote, at
   * most 1 MiB): the nodes from `start_seq` to `end_seq`, or everything after the system
   * prompt but the newest `keep_turns` turns. One durable write; the log keeps what was
   * replaced, so `request` rebuilds every earlier step as it was sent, and the next `step`
   * sends the summary in the range's place. Rejects with kind `compaction`, nothing written,
   * when the range is not on the surface, is reversed, starts at the system prompt, holds
   * system prompt nodes only, separates a tool call from its result or covers a call with no
   * result yet, or the summary is empty or over 1 MiB.
   */
  compact(params: CompactParams, options?: CallOptions): Promise<Compacted> {
    return this.call("compact", defined(params), options);
  }

  async closeSession(session: string, options?: CallOptions): Promise<boolean> {
    return (await this.call<{ closed: boolean }>("close_session", { session }, options)).closed;
  }

  mcpStatus(params: { wait_ms?: number } = {}, options?: CallOptions): Promise<McpStatus[]> {
    return this.call("mcp_status", defined(params), options);
  }

  /**
   * The `SKILL.md` of an MCP server's skill, read now and checked against the server's skills
   * index: a body whose size, digest or frontmatter name differ is refused (`PromptHostError`,
   * kind `mcp-skill`). Nothing is put in the prompt.
   */
  mcpSkill(params: McpSkillParams, options?: CallOptions): Promise<McpSkillBody> {
    return this.call("mcp_skill", defined(params), options);
  }

  /** Choose the notifications to receive (replaces the previous choice). */
  async subscribe(params: SubscribeParams, options?: CallOptions): Promise<void> {
    await this.call("subscribe", defined(params), options);
  }
}
