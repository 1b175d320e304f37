//! The deployment `cargo demo` writes to `target/demo/host.toml` and runs (kept here, so a
//! test can hold it to what the README says of it).

/// The demo's host.toml: identity and persona, a `preset:coder` scope with a tool-guidance
/// plugin and a redactor listener, an `agent:1` child scope with a persona pack, a clock and
/// a runtime-policy plugin; compiled plugins cached beside the file.
pub fn deployment() -> String {
    format!(
        r#"# The demo deployment: identity + persona, plugins in a parent and a child scope.
[host]
# Compiled plugins are cached beside this file, so the command line reuses the demo's.
cache_dir = "cache"

[prompt]
persona = "You are a coding agent running on {{{{model}}}}."

[[scope]]
name = "preset:coder"

[[scope]]
name = "agent:1"
parent = "preset:coder"

# Tool guidance and tools for every agent of the coder preset.
[[plugin]]
name = "tool-guide"
wasm = "{tool_guide}"
scope = "preset:coder"

# A redactor listener for the preset: rewrites the assembled sections after the chain ran.
[[plugin]]
name = "redactor"
wasm = "{redactor}"
scope = "preset:coder"
config = {{ words = ["hunter2"] }}

# agent:1's own persona shadows the deployment persona, in agent:1 only.
[[plugin]]
name = "persona"
wasm = "{persona}"
scope = "agent:1"
config = {{ text = "You are agent 1, a careful reviewer on {{{{model}}}}. Today is {{{{date}}}}. Never print the password hunter2." }}

[[plugin]]
name = "clock"
wasm = "{clock}"
scope = "agent:1"

# A runtime context from the caller fact `sandbox`.
[[plugin]]
name = "runtime-policy"
wasm = "{runtime_policy}"
scope = "agent:1"
"#,
        tool_guide = env!("GUEST_TOOL_GUIDE"),
        redactor = env!("GUEST_REDACTOR"),
        persona = env!("GUEST_PERSONA"),
        clock = env!("GUEST_CLOCK"),
        runtime_policy = env!("GUEST_RUNTIME_POLICY"),
    )
}
