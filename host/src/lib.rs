//! prompt-host: a WebAssembly plugin host for an LLM agent's system prompt.
