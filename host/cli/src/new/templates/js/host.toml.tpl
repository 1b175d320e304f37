# Try the plugin with prompt-host. Paths are relative to this file. Build first (./build.sh),
# then
#   prompt-host check dist/plugin.wasm
#   prompt-host render --config host.toml --fact cwd=/work

[[plugin]]
name = "__NAME__"
wasm = "dist/plugin.wasm"
# The first call in a fresh process warms a 10+ MB language runtime; on a loaded machine that
# can take longer than the 50 ms default deadline.
limits = { call_timeout_ms = 500 }
# config = { ... }          # handed to the plugin's init as JSON (see src/plugin.js)
# scope = "agent:1"         # load it into a scope instead of globally (declare the scope with [[scope]])
# dev = { build = "./build.sh", watch = ["src"] }
