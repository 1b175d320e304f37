[package]
name = "__NAME__"
version = "0.1.0"
edition = "2021"
publish = false

# A plugin is a `cdylib`: `cargo build --release --target wasm32-wasip2` writes the
# WebAssembly component target/wasm32-wasip2/release/__SNAKE__.wasm.
[lib]
crate-type = ["cdylib"]

[dependencies]
# The guest SDK, vendored (vendor/prompt-plugin, with the contract's WIT in its wit/).
# It builds against prompt-host:plugin@0.2.0; for 0.1.0, add `features = ["wit-0-1"]`.
prompt-plugin = { path = "vendor/prompt-plugin" }
serde = { version = "1", features = ["derive"] }
serde_json = "1"

# A workspace of its own, so cargo builds the project wherever it lives, also inside
# another workspace's directory.
[workspace]

[profile.release]
# No debug info in the component: smaller, and the sandbox has no debugger to use it.
strip = true
