//! The single integration-test binary. Each test area is a file under `integration/`; add it
//! as a `mod` line inside the block below (the inline module makes `mod x;` resolve to
//! `integration/x.rs`).

// Test code: a failed unwrap is a failed test, with its message.
#![allow(clippy::unwrap_used)]

mod integration {
    mod attacked_cache;
    mod attacked_grants;
    mod attacked_logs;
    mod attacked_processes;
    mod attacked_routes;
    mod attacked_serve;
    mod boundaries;
    mod cache_in_place;
    mod capabilities;
    mod cli;
    mod cli_details;
    mod cli_support;
    mod conformance_wasm;
    mod containment_cli;
    mod containment_defects;
    mod containment_library;
    mod containment_serve;
    mod determinism;
    mod dev_loop;
    mod docs_match_code;
    mod embedding;
    mod guests_built;
    mod hostile_matrix;
    mod hostile_peer;
    mod load_side_by_side;
    mod mcp_budget;
    mod mcp_client;
    mod mcp_config;
    mod mcp_prompt;
    mod mcp_remote;
    mod mcp_start;
    mod module_graph;
    mod oci_attacked;
    mod oci_fake_registry;
    mod oci_hostile;
    mod oci_hostile_origins;
    mod oci_hostile_serve;
    mod oci_registry;
    mod otlp_export;
    mod outputs_unchanged;
    mod peers_hostile;
    mod peers_hostile_mcp;
    mod peers_hostile_text;
    mod peers_hostile_tokens;
    mod plugin_names;
    mod polyglot;
    mod readme_tutorial;
    mod routes;
    mod scaffold;
    mod serve_protocol;
    mod serve_rules;
    mod serve_support;
    mod session_attack;
    mod session_files;
    mod spans;
    mod stress;
    mod timings;
    mod token_budgets;
    mod tokens;
    mod wasm_hostile;
    mod wasm_hostile_extra;
    mod wasm_load;
    mod wasm_sandbox;
    mod wasm_support;
    mod wit_versions;
}
