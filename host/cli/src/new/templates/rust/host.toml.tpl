# Try the plugin with prompt-host. Paths are relative to this file. Build first:
#   cargo build --release --target wasm32-wasip2
# then
#   prompt-host check target/wasm32-wasip2/release/__SNAKE__.wasm
#   prompt-host render --config host.toml --fact cwd=/work
# (With CARGO_TARGET_DIR set, cargo writes the component there instead: adjust `wasm`.)

[[plugin]]
name = "__NAME__"
wasm = "target/wasm32-wasip2/release/__SNAKE__.wasm"
# config = { ... }          # handed to the plugin's init as JSON (see src/lib.rs)
# scope = "agent:1"         # load it into a scope instead of globally (declare the scope with [[scope]])
# dev = { build = "cargo build --release --target wasm32-wasip2", watch = ["src"] }
