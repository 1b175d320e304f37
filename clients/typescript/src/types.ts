/**
 * The protocol's types (docs/protocol.md, "Types" and each method's result; docs/routes.md for
 * routes, replies and usage). Every name and key is the wire's: a `Request` is exactly the JSON
 * body a model provider is sent, in the shape of the step's route.
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

/** A chat-completions message (the `chat-completions` route's `messages`). */
export interface Message {
  role: Role;
  /** A string, content parts, or `null` (an assistant turn of tool calls only). */
  content?: string | Array<Record<string, unknown>> | null;
  /** On assistant messages. */
  tool_calls?: WireToolCall[];
  /** On assistant messages: a refusal the provider sent, sent back as it was. */
  refusal?: string;
  /** On assistant messages that made tool calls, with the route's `reasoning: "send"`
   * (DeepSeek's thinking mode). */
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

/** The provider APIs a request can be prepared for (docs/routes.md). */
export type RouteName = "chat-completions" | "anthropic-messages" | "openai-responses";

/** The `chat-completions` request: `{model?, messages, tools?, ...options}`; the system
 * prompt is the first message. */
export interface ChatRequest {
  /** Absent when neither the `model` fact nor the route names a model. */
  model?: string;
  messages: Message[];
  /** Absent when there are no tools. */
  tools?: WireTool[];
  /** The route's generation options, as given (`temperature`, `stop`, …). */
  [option: string]: unknown;
}

/** A text block of an Anthropic request's `system`. */
export interface AnthropicTextBlock {
  type: "text";
  text: string;
  cache_control?: { type: "ephemeral"; ttl?: string };
}

/** A content block of an Anthropic message (`text`, `tool_use`, `tool_result`, `thinking`, …). */
export interface AnthropicBlock {
  type: string;
  [key: string]: unknown;
}

export interface AnthropicMessage {
  /** `system`: a mid-conversation system message (in-history updates on the models that
   * take them). */
  role: "user" | "assistant" | "system";
  content: string | AnthropicBlock[];
}

export interface AnthropicTool {
  name: string;
  description?: string;
  input_schema: Record<string, unknown>;
  cache_control?: { type: "ephemeral"; ttl?: string };
}

/** The `anthropic-messages` request: `{model, max_tokens, system?, messages, tools?,
 * ...options}`. */
export interface AnthropicRequest {
  model: string;
  max_tokens: number;
  system?: AnthropicTextBlock[];
  messages: AnthropicMessage[];
  tools?: AnthropicTool[];
  [option: string]: unknown;
}

/** A Responses input item: a message (`{role, content}`), a `function_call`, a
 * `function_call_output`, a `reasoning` item, or an output item sent back as it was. */
export interface ResponsesItem {
  type?: string;
  role?: "user" | "assistant" | "developer" | "system";
  [key: string]: unknown;
}

export interface ResponsesTool {
  type: "function";
  name: string;
  description?: string;
  parameters: unknown;
  strict: boolean | null;
}

/** The `openai-responses` request: `{model, instructions?, input, tools?, ...options}`. */
export interface ResponsesRequest {
  model: string;
  /** The system prompt. */
  instructions?: string;
  input: ResponsesItem[];
  tools?: ResponsesTool[];
  [option: string]: unknown;
}

/** What a model call sends: one provider API's request body, the step's route decides which
 * (`StepResult.route.name`). `openaiChat`, `anthropicMessages` and `openaiResponses` from
 * `prompt-host/routes` give it the provider SDK's own type. */
export type Request = ChatRequest | AnthropicRequest | ResponsesRequest;

/** A tool call of the model's reply, for `appendAssistant`'s plain form. */
export interface ToolCall {
  id: string;
  name: string;
  /** A JSON object, or the JSON text of one (parsed; the text is kept and sent back as it
   * was). Absent: `{}`. */
  arguments?: Record<string, unknown> | string;
}

/** Token counts of a reply (`input_tokens` includes the cached ones). */
export interface Usage {
  input_tokens?: number;
  output_tokens?: number;
  cached_input_tokens?: number;
  cache_creation_input_tokens?: number;
}

/** The generation options and modes a route is asked for (docs/routes.md, "Asking for a
 * route"). Everything but `name` defaults. */
export interface RouteSpec {
  name: RouteName;
  /** The model the request names; else the `model` fact. */
  model?: string;
  /** Top-level keys of the request, passed through (`max_tokens`, `temperature`, …); a key
   * the route builds is refused. */
  options?: Record<string, unknown>;
  /** `in-history`: a changed system prompt is appended where the conversation stands;
   * `replace`: the first system text is replaced. Default: what the route takes. */
  system_updates?: SystemUpdates;
  /** Send recorded reasoning back: `omit` on `chat-completions`, `send` elsewhere by default. */
  reasoning?: ReasoningMode;
  /** `anthropic-messages` only: place prompt-cache breakpoints (on by default). */
  cache?: boolean;
}

export type SystemUpdates = "in-history" | "replace";
export type ReasoningMode = "send" | "omit";

/** What a route takes, for the step's model. */
export interface RouteCapabilities {
  /** System-prompt updates can stand in history. */
  in_history: boolean;
  /** Where the system prompt goes. */
  system: "first-message" | "system" | "instructions";
  /** How reasoning is sent back. */
  reasoning: "reasoning-content" | "thinking-blocks" | "reasoning-items";
  /** How a failed tool call's result is marked. */
  tool_error: "stated-in-content" | "is-error";
  /** How many prompt-cache breakpoints a request may carry (0: cached automatically). */
  cache_breakpoints: number;
}

/** The route a step resolved. */
export interface Route {
  name: RouteName;
  /** `null`: a `chat-completions` request without a model. */
  model: string | null;
  system_updates: SystemUpdates;
  reasoning: ReasoningMode;
  options: Record<string, unknown>;
  capabilities: RouteCapabilities;
}

/** Where a prompt-cache breakpoint (`cache_control`) stands: on the last block of `system`,
 * on the last tool, or on the last block of message `index`. */
export interface CacheBreakpoint {
  at: "system" | "tools" | "message";
  index: number;
}

/** A step's prompt-cache placement, beside the usage recorded with the previous reply. */
export interface StepCache {
  /** Empty on routes that cache on their own. */
  breakpoints: CacheBreakpoint[];
  last_usage: Usage | null;
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
  /** Token counts, when `render({ tokens })` asked for them. */
  tokens?: TokenReport;
  /** Where the time went, when `render({ timings: true })` asked. */
  timings?: TimingReport;
  /** The MCP servers the scope sees whose instructions were cut (absent when none). */
  mcp_cuts?: InstructionsCut[];
}

/** One plugin call of an assembly (a listener's time includes the listeners it ran). */
export interface CallTiming {
  kind: "section" | "context" | "variable" | "tool provider" | "listener";
  /** The entry's name (a keyed provider's or listener's key), or `null`. */
  name: string | null;
  plugin: string;
  /** The layer: a scope key or `global`. */
  layer: string;
  micros: number;
}

/** Where a rendering's (or step's) time went: the phases and each plugin call, in order. */
export interface TimingReport {
  phases: { phase: "assemble" | "render" | "commit"; micros: number }[];
  calls: CallTiming[];
}

/** One section, runtime context or tool schema, counted alone. */
export interface PartTokens {
  name: string;
  bytes: number;
  tokens: number;
}

/**
 * What a rendering costs in tokens. Per-part counts can differ from the whole (a merge can
 * span the blank line between two sections), so `prompt` and `sections_sum` are both given.
 */
export interface TokenReport {
  /** The tokenizer's name. */
  tokenizer: string;
  /** The whole system prompt, counted as one text: what a request pays. */
  prompt: number;
  /** The sections counted alone, added up. */
  sections_sum: number;
  sections: PartTokens[];
  /** The runtime-context snapshot, counted as one text. */
  context: number;
  contexts: PartTokens[];
  /**
   * Each tool as compact JSON: in the shape `tools_as` sends it, else of its name,
   * description and parameters.
   */
  tools: PartTokens[];
  /** The route whose request shape the tools were counted in (a step's route). */
  tools_as?: RouteName;
}

/**
 * A step's request counted as its route sends it: the system prompt's text, the tool list
 * as JSON, and each message or input item as JSON.
 */
export interface RequestTokens {
  /** The tokenizer that counted. */
  tokenizer: string;
  /** The system prompt's text. */
  system: number;
  /** The tool list, as JSON. */
  tools: number;
  /** The messages (or input items), each as JSON. */
  messages: number;
  /** The sum. */
  total: number;
}

/**
 * `tokens` of `render` and `step`: `true` counts with host.toml's `[prompt] tokenizer`; a
 * name (`"o200k_base"`, `"cl100k_base"` or a `tokenizer.json` path) counts with that one.
 */
export type TokensParam = boolean | string;

export type Header = "initial" | "resume" | "change" | "series";

/** The result of `step` and `retry`. */
export interface StepResult {
  /** The step's number in the log, from 0. */
  step: number;
  /** The model request, derived from the log in the route's shape: send it as it is. */
  request: Request;
  /** The route the request was prepared for, as resolved (model, options, capabilities). */
  route: Route;
  /** Prompt-cache breakpoints placed in `request`, and the previous reply's usage. */
  cache: StepCache;
  /** How many system messages this step wrote. */
  commits: number;
  starts_series: boolean;
  /** Why a `request/header` was logged, or `null`. */
  header: Header | null;
  /** Token counts of the step's rendering, when `step({ tokens })` asked for them. */
  tokens?: TokenReport;
  /** Where the step's time went, when `step({ timings: true })` asked. */
  timings?: TimingReport;
  /**
   * The request's tokens as its route sends it (system prompt, tools, messages), counted with
   * the tokenizer `step({ tokens })` asked for.
   */
  request_tokens?: RequestTokens;
  /** Why a count asked for (`tokens`, `request_tokens`) is missing: the step was written,
   * and a count that failed afterwards does not make it an error. */
  tokens_error?: string;
  /** The MCP servers the step's scope sees whose instructions were cut (absent when none). */
  mcp_cuts?: InstructionsCut[];
}

/** The result of `request`: a step's request rebuilt from the log, byte for byte. */
export interface Replay {
  step: number;
  request: Request;
}

/** The result of `compact`: the events it wrote, the nodes the summary replaced, and what it
 * left of the request's cached prefix. */
export interface Compacted {
  /** The seq of the `compaction/start` event. */
  start_event: number;
  /** The seq of the summary message, which now stands where the range was. */
  summary_seq: number;
  /** The seq of the `compaction/end` event. */
  end_event: number;
  /** The surface nodes replaced (seqs), in surface order. */
  replaced: number[];
  /** How many of the request's messages before the range are sent as they were: a
   * provider's prompt cache keeps at most the tools, the system prompt and these. */
  prefix_messages_kept: number;
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
  /** What the plugin was granted outside its sandbox. */
  grants: PluginGrants;
}

/** A directory a plugin may read: `host` (on the host) seen at `guest` (in its sandbox). */
export interface GrantDir {
  host: string;
  guest: string;
}

/** An origin a plugin may send HTTP requests to (`https://host[:port]`, `http://` on
 * loopback, `https://*.domain`), with the headers the host adds to them: a value's
 * `${env:NAME}` is read by the host when the plugin loads, and the plugin never sees it. */
export interface OriginGrant {
  origin: string;
  headers?: Record<string, string>;
  /** PEM certificates trusted for this origin besides the platform's. */
  ca_file?: string | null;
}

/** What a plugin reaches outside its sandbox (docs/host-toml.md, "Grants"): read-only
 * directories, environment variables and HTTP origins. An absent key grants nothing of that
 * kind. */
export interface Grants {
  dirs?: GrantDir[];
  env?: string[];
  http?: OriginGrant[];
}

/** What a loaded plugin was granted, as `plugins` lists it: every key, always. */
export interface PluginGrants {
  dirs: GrantDir[];
  env: string[];
  http: OriginGrant[];
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
  /** How the live generation's instructions were cut to the server's budget, or `null`. */
  instructions_cut: InstructionsCut | null;
  /** How the server is reached. */
  transport: "stdio" | "http";
  /** The lifecycle the last connection used, or `null` before one was made. */
  lifecycle: "discover" | "initialize" | null;
  /** The protocol revision the last connection agreed, or `null`. */
  protocol_version: string | null;
  /** What the server injects: its instructions on or off, and the text handed to the
   * provider plugin (after any cut) with its size in bytes. */
  instructions: { enabled: boolean; bytes: number; text: string };
  /** The live generation's skills index (the MCP Skills extension), in server order; empty
   * when the server offers no skills. */
  skills: McpSkillEntry[];
}

/** One skill of an MCP server's index. */
export interface McpSkillEntry {
  /** Its name: what `mcpSkill` asks for. */
  name: string;
  /** The URI of its `SKILL.md`. */
  uri: string;
  /** Its description, as the server gave it (third-party text). */
  description: string;
  /** The digest of its `SKILL.md` (`sha256:…`), or `"dynamic"`. */
  digest: string;
  /** How many files it lists (0 for a dynamic skill). */
  files: number;
  /** The bytes of all its files (0 for a dynamic skill). */
  size: number;
}

/** `mcp_skill`'s params: the skill `skill` of server `server` connected into `scope`
 * (absent or null: the global one). */
export interface McpSkillParams {
  server: string;
  scope?: string | null;
  skill: string;
}

/** A skill's `SKILL.md`, read from its server and checked against the index. */
export interface McpSkillBody {
  /** The server's name. */
  server: string;
  /** The skill, as the live index lists it. */
  skill: McpSkillEntry;
  /** The text of its `SKILL.md`. */
  text: string;
  /** The digest of the bytes read. */
  digest: string;
  /** Whether the bytes were checked against the index's digest (false only for a dynamic
   * skill, which lists none). */
  verified: boolean;
}

/**
 * How an MCP server's instructions were cut to its instruction budget
 * (`[[mcp]] max_instruction_tokens`). The section the instructions make begins with a note
 * that says so: `[prompt-host: the instructions of MCP server "S" were cut to their first K
 * of T tokens (B tokens at most, counted with TOK); D bytes were dropped]`.
 */
export interface InstructionsCut {
  server: string;
  /** The server's instruction generation that was cut. */
  generation: number;
  /** The budget, in tokens. */
  budget: number;
  /** The tokenizer that counted them. */
  tokenizer: string;
  /** The whole text's tokens; `null` when it was too long to count in full (over 1 MiB). */
  tokens: number | null;
  bytes: number;
  kept_tokens: number;
  kept_bytes: number;
  dropped_bytes: number;
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
  | { method: "mcp/status"; params: McpStatus }
  | { method: "mcp/instructions_cut"; params: InstructionsCut };

export type LogLevel = "off" | "error" | "warn" | "info" | "debug" | "trace";

/** `load_plugin` params; `limits` takes host.toml's `limits` keys. */
export interface LoadPluginParams {
  name: string;
  /** A component file, or the name of a plugin the package ships (`"persona"`,
   * `"project-instructions"`): the README's "Plugins found by name". */
  wasm: string;
  scope?: string;
  config?: unknown;
  limits?: Record<string, number>;
  on_error?: "fail" | "skip";
  quarantine_after?: number;
  sha256?: string;
  /** Read-only directories and environment variables the plugin may reach. */
  grants?: Grants;
}

export interface TargetParams {
  scope?: string;
  facts?: Facts;
}

export interface RenderParams extends TargetParams {
  /** Add the rendering's token counts (see `TokensParam`). */
  tokens?: TokensParam;
  /** Add where the time went (`TimingReport`). */
  timings?: boolean;
}

export interface StepParams {
  session: string;
  scope?: string;
  facts?: Facts;
  /** The provider API to prepare the request for: a name or a `RouteSpec`. Default: the
   * route of the log's newest step (`chat-completions` for a new log). */
  route?: RouteName | RouteSpec;
  /** Ask for `system_updates: "in-history"`. */
  in_history?: boolean;
  starts_series?: boolean;
  /** The user's messages of this step. */
  user?: string[];
  /** Add the rendering's token counts (see `TokensParam`). */
  tokens?: TokensParam;
  /** Add where the step's time went (`TimingReport`, with the `commit` phase). */
  timings?: boolean;
}

export interface RetryParams {
  session: string;
  facts?: Facts;
  /** Re-derive the step for this route (another model, other options). */
  route?: RouteName | RouteSpec;
  in_history?: boolean;
  starts_series?: boolean;
  /** As for `step`: the rendering's token counts. */
  tokens?: TokensParam;
  /** As for `step`: where the time went. */
  timings?: boolean;
}

/**
 * A provider's own reply: an OpenAI `ChatCompletion` or its `choices[0].message`; an
 * Anthropic `Message` (or `{role, content}`) or its content blocks; a Responses `Response` or
 * its `output` items. Recorded whole and sent back exactly as the provider sent it.
 */
export type ProviderReply = object;

/** `appendAssistant` with the provider's reply. */
export interface AppendReplyParams {
  session: string;
  reply: ProviderReply;
  /** The route whose provider sent `reply`; default: the route of the log's newest step. */
  route?: RouteName;
  /** Usage figures, when the reply carries none (a reply's own `usage` is read). */
  usage?: Usage;
  text?: never;
  reasoning?: never;
  tool_calls?: never;
}

/** `appendAssistant` in the plain form: text, reasoning and tool calls. */
export interface AppendTextParams {
  session: string;
  text?: string;
  reasoning?: string;
  tool_calls?: ToolCall[];
  usage?: Usage;
  reply?: never;
  route?: never;
}

export type AppendAssistantParams = AppendReplyParams | AppendTextParams;

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

/** `compact` of a range: the surface nodes from `start_seq` to `end_seq`, both given. */
export interface CompactRangeParams {
  session: string;
  /** The text that replaces the range (the caller's model wrote it; at most 1 MiB). */
  summary: string;
  /** The first surface node replaced (its seq). */
  start_seq: number;
  /** The last surface node replaced (its seq). */
  end_seq: number;
  keep_turns?: never;
}

/** `compact` by turns: everything after the system prompt but the newest `keep_turns` turns. */
export interface CompactKeepParams {
  session: string;
  /** The text that replaces the range (the caller's model wrote it; at most 1 MiB). */
  summary: string;
  keep_turns: number;
  start_seq?: never;
  end_seq?: never;
}

/** `compact`'s params: a range, or `keep_turns`; not both. */
export type CompactParams = CompactRangeParams | CompactKeepParams;

export interface SubscribeParams {
  log?: LogLevel;
  plugins?: boolean;
  registry?: boolean;
  mcp?: boolean;
}
