/**
 * Errors: a JSON-RPC error response becomes a `PromptHostError` carrying the structured
 * fields of `error.data` (docs/protocol.md, "Errors"); a cancelled request a `RequestCancelled`.
 */

export const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;
export const METHOD_NOT_FOUND = -32601;
export const INVALID_PARAMS = -32602;
export const FAILED = -32000;
/** The host failed inside while serving the request; the server goes on. */
export const INTERNAL = -32603;
export const CANCELLED = -32800;

export type ErrorKind =
  | "plugin"
  | "render"
  | "invariant"
  | "assembly"
  | "scope"
  | "unknown-scope"
  | "session"
  | "conflict"
  | "conversation"
  | "compaction"
  | "replay"
  | "unknown-plugin"
  | "config"
  | "registration"
  | "mcp"
  | "mcp-skill"
  | "oci"
  | "cancelled"
  | "internal"
  | "invalid-params"
  | "method-not-found"
  | "request-too-large"
  | "too-many-sessions"
  | "route"
  | "token-budget"
  | "tokenizer";

/** `error.data` of a response. */
export interface ErrorData {
  kind: ErrorKind;
  plugin?: string;
  export?: string;
  scope?: string;
  section?: string;
  context?: string;
  variable?: string;
  tool_provider?: string;
  listener?: string;
  session?: string;
  suggestion?: string;
  methods?: string[];
  bytes?: number;
  limit?: number;
  /** `token-budget`: the host.toml key of the budget passed. */
  budget?: "max_prompt_tokens" | "max_context_tokens" | "max_request_tokens";
  /** `token-budget`: the tokenizer that counted. */
  tokenizer?: string;
  /** `token-budget`: the rendering's tokens (`limit` is the budget). */
  tokens?: number;
  /** `token-budget` of a request: the first node of the oldest range `compact` could replace. */
  start_seq?: number;
  /** `token-budget` of a request: the last node of that range. */
  end_seq?: number;
  /** `conflict`: the seq this server would have written. */
  expected?: number;
  /** `conflict`: the session's next seq in the store (another writer appended first). */
  actual?: number;
}

/** The `error` object of a response. */
export interface RpcErrorObject {
  code: number;
  message: string;
  data?: ErrorData;
}

/**
 * An error the server answered. `code` is the JSON-RPC code, `data` the whole `error.data`;
 * its keys are also properties (`undefined` when absent). `method` is the failed request's.
 */
export class PromptHostError extends Error {
  readonly code: number | null;
  readonly data: Partial<ErrorData>;
  readonly method: string | undefined;
  readonly kind: ErrorKind | undefined;
  readonly plugin: string | undefined;
  readonly export: string | undefined;
  readonly scope: string | undefined;
  readonly section: string | undefined;
  readonly context: string | undefined;
  readonly variable: string | undefined;
  readonly tool_provider: string | undefined;
  readonly listener: string | undefined;
  readonly session: string | undefined;
  readonly suggestion: string | undefined;
  readonly methods: string[] | undefined;
  readonly bytes: number | undefined;
  readonly limit: number | undefined;

  constructor(code: number | null, message: string, data?: Partial<ErrorData>, method?: string) {
    super(message);
    this.name = new.target.name;
    this.code = code;
    this.data = { ...(data ?? {}) };
    this.method = method;
    const d = this.data;
    this.kind = d.kind;
    this.plugin = d.plugin;
    this.export = d.export;
    this.scope = d.scope;
    this.section = d.section;
    this.context = d.context;
    this.variable = d.variable;
    this.tool_provider = d.tool_provider;
    this.listener = d.listener;
    this.session = d.session;
    this.suggestion = d.suggestion;
    this.methods = d.methods;
    this.bytes = d.bytes;
    this.limit = d.limit;
  }

  /** The error for a response's `error` object (`RequestCancelled` for -32800). */
  static fromResponse(error: RpcErrorObject, method?: string, timedOut = false): PromptHostError {
    const data = error.data && typeof error.data === "object" ? error.data : undefined;
    if (error.code === CANCELLED || data?.kind === "cancelled") {
      return new RequestCancelled(error.code, error.message, data, method, timedOut);
    }
    return new PromptHostError(error.code, error.message, data, method);
  }
}

/**
 * The request was cancelled (code -32800, kind `cancelled`), through its `AbortSignal`;
 * `timedOut` is true when the signal's reason was a `TimeoutError` (`AbortSignal.timeout`).
 */
export class RequestCancelled extends PromptHostError {
  readonly timedOut: boolean;

  constructor(code: number | null, message: string, data?: Partial<ErrorData>, method?: string, timedOut = false) {
    super(code, message, data, method);
    this.timedOut = timedOut;
  }
}

/**
 * A step's request was read as another route's: `openaiChat`, `anthropicMessages` and
 * `openaiResponses` (`prompt-host/routes`) throw it when the step's route is not theirs, or
 * when the request is not one the SDK's non-streaming type describes. Thrown by the client;
 * the server was not asked.
 */
export class RouteMismatchError extends Error {
  /** The route the accessor reads. */
  readonly expected: string;
  /** The step's route (`undefined` when the value has none). */
  readonly actual: string | undefined;

  constructor(message: string, expected: string, actual: string | undefined) {
    super(message);
    this.name = new.target.name;
    this.expected = expected;
    this.actual = actual;
  }
}

/** The server process ended (or its output closed) before answering. */
export class ServerExited extends PromptHostError {
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly stderr: string;

  constructor(message: string, exitCode: number | null, signal: string | null, stderr: string, method?: string) {
    super(null, stderr ? `${message}\n${stderr}` : message, undefined, method);
    this.exitCode = exitCode;
    this.signal = signal;
    this.stderr = stderr;
  }
}
