/**
 * The protocol's types (docs/protocol.md, "Types" and each method's result). Every name and key is
 * the wire's: a `Request` is exactly the JSON a model provider is sent.
 */

/** Caller facts: an object of strings, or `[key, value]` pairs (order kept; a later key wins). */
export type Facts = Record<string, string> | ReadonlyArray<readonly [string, string]>;

export type Role = "system" | "user" | "assistant" | "tool";

export interface WireToolCall {
  id: string;
  type: "function";
  function: {
    name: string;
    /** The arguments as JSON text. */
    arguments: string;
  };
}

export interface Message {
  role: Role;
  /** A string, content parts, or `null` (an assistant turn of tool calls only). */
  content: string | Array<Record<string, unknown>> | null;
  /** On assistant messages. */
  tool_calls?: WireToolCall[];
  /** On assistant messages, when the reply had reasoning. */
  reasoning_content?: string;
  /** On tool messages. */
  tool_call_id?: string;
}

export interface ToolSchema {
  name: string;
  description: string;
  parameters: unknown;
}

export interface WireTool {
  type: "function";
  function: ToolSchema;
}

/** What a model call sends. There is no separate system field. */
export interface Request {
  messages: Message[];
  /** Absent when there are no tools. */
  tools?: WireTool[];
}

/** A tool call of the model's reply, for `appendAssistant`; `arguments` is any JSON value. */
export interface ToolCall {
  id: string;
  name: string;
  arguments?: unknown;
}

export interface NamedText {
  name: string;
  text: string;
}

export interface Assembly {
  sections: NamedText[];
  contexts: NamedText[];
  tools: ToolSchema[];
  /** `null` = registered without a value. */
  variables: Record<string, string | null>;
}

export interface Rendered {
  /** The system prompt. */
  prompt: string;
  /** The runtime-context snapshot (`""` when none applies). */
  context: string;
}

export type Header = "initial" | "resume" | "change" | "series";

/** The result of `step` and `retry`. */
export interface StepResult {
  /** The step's number in the log, from 0. */
  step: number;
  /** The model request, derived from the log: send it as it is. */
  request: Request;
  /** How many system messages this step wrote. */
  commits: number;
  starts_series: boolean;
  /** Why a `request/header` was logged, or `null`. */
  header: Header | null;
}

/** The result of `request`: a step's request rebuilt from the log. */
export interface Replay {
  step: number;
  request: Request;
}

export interface Describe {
  name: "prompt-host";
  version: string;
  protocol: string;
  methods: string[];
  notifications: string[];
}

export interface PluginInfo {
  id: number;
  name: string;
  /** `null` for the global scope. */
  scope: string | null;
}

export interface McpStatus {
  id: number;
  server: string;
  scope: string | null;
  plugin: string;
  state: "starting" | "up" | "down";
  generations: number;
  published: number;
  rejected: number;
  failures: number;
  live_generation: number | null;
  last_error: string | null;
}

/** The params of `log`, `plugin/skipped` and `plugin/quarantined`. */
export interface LogLine {
  plugin: string;
  scope: string | null;
  /** `error`…`trace`, `stdout`, `stderr`, `skipped` or `quarantined`. */
  stream: string;
  message: string;
}

export type Notification =
  | { method: "log"; params: LogLine }
  | { method: "plugin/skipped"; params: LogLine }
  | { method: "plugin/quarantined"; params: LogLine }
  | { method: "registry/changed"; params: Record<string, never> }
  | { method: "mcp/status"; params: McpStatus };

export type LogLevel = "off" | "error" | "warn" | "info" | "debug" | "trace";

/** `load_plugin` params; `limits` takes host.toml's `limits` keys. */
export interface LoadPluginParams {
  name: string;
  wasm: string;
  scope?: string;
  config?: unknown;
  limits?: Record<string, number>;
  on_error?: "fail" | "skip";
  quarantine_after?: number;
  sha256?: string;
}

export interface TargetParams {
  scope?: string;
  facts?: Facts;
}

export interface StepParams {
  session: string;
  scope?: string;
  facts?: Facts;
  in_history?: boolean;
  starts_series?: boolean;
  /** The user's messages of this step. */
  user?: string[];
}

export interface RetryParams {
  session: string;
  facts?: Facts;
  in_history?: boolean;
  starts_series?: boolean;
}

export interface AppendAssistantParams {
  session: string;
  text?: string;
  reasoning?: string;
  tool_calls?: ToolCall[];
}

export interface AppendToolResultParams {
  session: string;
  call_id: string;
  content: string;
  is_error?: boolean;
}

export interface RequestParams {
  session: string;
  step?: number;
}

export interface SubscribeParams {
  log?: LogLevel;
  plugins?: boolean;
  registry?: boolean;
  mcp?: boolean;
}
