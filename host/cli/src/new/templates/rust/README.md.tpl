# __NAME__

A prompt-host plugin in Rust: a WebAssembly component that contributes to an LLM agent's
system prompt. `src/lib.rs` implements the `prompt_plugin::Plugin` trait of the guest SDK
(vendored in `vendor/prompt-plugin`; `cargo doc --open -p prompt-plugin` shows its API); it
declares:

__ENTRIES__

## Build

```sh
rustup target add wasm32-wasip2      # once
cargo build --release --target wasm32-wasip2
```

This writes the component `target/wasm32-wasip2/release/__SNAKE__.wasm`. The project is a
cargo workspace of its own and needs nothing outside this directory; the first build
downloads the crates in `Cargo.lock` (wit-bindgen, serde), later builds work offline.

## Check, render, test

```sh
prompt-host check target/wasm32-wasip2/release/__SNAKE__.wasm   # loads it, runs init, lists what it declares
prompt-host render --config host.toml --fact cwd=/work          # the system prompt with the plugin loaded
cargo test                                                      # the unit tests, natively
```

`check` runs `init` with `--config '{…}'` (default `{}`) and prints the declarations,
e.g. `__CHECK__`. `render` loads `host.toml`, which loads the built component globally;
its output includes

```
__RENDER__
```

`prompt-host assemble --config host.toml` prints the whole assembly as JSON (sections,
contexts, tools, variables); to see a scoped one, declare a scope in host.toml (a
`[[scope]]` table with `name = "agent:1"`), add `scope = "agent:1"` to the plugin and pass
`--scope agent:1`. `prompt-host --help` lists the rest.

The unit tests in `src/lib.rs` call the plugin's logic directly on your machine. What calls
into the host (`declare::*`, `log::*`, the `Assembly` handle) only works inside it, which is
what `check` and `render` try.

## Logs

`prompt_plugin::log::{trace, debug, info, warn, error}` write one line to the host's log,
attributed to the plugin and capped per instance; so does anything the plugin prints to
stdout or stderr (a panic message, too). The command line (`check`, `render`, …) shows the
`warn` and `error` lines on stderr, as `plugin "__NAME__" (global) warn: …`. `prompt-host
serve` sends every line at or above the level a client subscribed to as a `log`
notification; an embedding Rust program gets them from the `log` crate (target
`prompt_host::plugin`) or the runtime's log sink.

## The contract version

The SDK builds against `prompt-host:plugin@0.2.0` (`vendor/prompt-plugin/wit/0.2.0`, which
imports the interfaces of `wit/0.1.0`): a dynamic entry whose answer did not change since
the previous assembly is sent as "unchanged", and `prompt_plugin::cancelled()` tells a long
callback that the caller gave up. For `prompt-host:plugin@0.1.0` (hosts that predate 0.2.0),
enable the SDK's feature in `Cargo.toml`:

```toml
prompt-plugin = { path = "vendor/prompt-plugin", features = ["wit-0-1"] }
```

The plugin's code is the same for both; `prompt-host check` prints the version a component
was built against (`wit: prompt-host:plugin@…`). The `.wit` files are the contract's
reference documentation: every item carries a doc comment.
