/**
 * A client for `prompt-host serve`: an LLM agent's system prompt, assembled from sandboxed
 * WebAssembly plugins, over JSON-RPC 2.0 on a child process's stdio. See README.md and the
 * repository's docs/protocol.md and docs/routes.md. The provider SDKs' request types are in
 * `prompt-host/routes` (`openaiChat`, `anthropicMessages`, `openaiResponses`).
 */

export { DEFAULT_MAX_REQUEST_BYTES, PromptHost, bundledBinary, findBinary, platformPackage } from "./client.js";
export type { CallOptions, PromptHostOptions, Trace } from "./client.js";
export {
  CANCELLED,
  FAILED,
  INVALID_PARAMS,
  INVALID_REQUEST,
  METHOD_NOT_FOUND,
  PARSE_ERROR,
  PromptHostError,
  RequestCancelled,
  RouteMismatchError,
  ServerExited,
} from "./errors.js";
export type { ErrorData, ErrorKind, RpcErrorObject } from "./errors.js";
export type * from "./types.js";

/** The protocol version this client speaks (`describe().protocol`). */
export const PROTOCOL_VERSION = "1.1";
