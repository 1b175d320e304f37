//! The single integration-test binary. The tests sit in one folder per area under
//! `integration/`, each area named by a file beside its folder (`integration/oci.rs` lists
//! `integration/oci/*.rs`); a new test file is a `mod` line in its area's file, a new area a
//! `mod` line in the block below (the inline module makes `mod x;` resolve to
//! `integration/x.rs`). Helpers that several areas share are in `integration/support/`.
//!
//! A file is named for what it tests, without the area its folder already names
//! (`oci/registry.rs`, not `oci/oci_registry.rs`). Two words name a kind of test the same way
//! in every area:
//!
//! - `attacked`: a surface of the host attacked from outside, by someone on the same machine
//!   or at its input: files and directories swapped or planted, processes killed or flooded,
//!   the stdio or a log fed input at its limits (`wasm/attacked_cache.rs`,
//!   `sessions/attacked.rs`, `serve/attacked.rs`).
//! - `hostile`: a party the host runs or talks to turns against it: a plugin
//!   (`wasm/hostile.rs`), a registry (`oci/hostile.rs`), an MCP server, a token endpoint or a
//!   collector (`peers/hostile_*.rs`).
//!
//! One area's tests run with a filter on its module path, e.g.
//! `cargo test -p prompt-host-tests --test integration -- oci::`.

// Test code: a failed unwrap is a failed test, with its message.
#![allow(clippy::unwrap_used)]

mod integration {
    mod cli;
    mod containment;
    mod docs;
    mod library;
    mod mcp;
    mod observability;
    mod oci;
    mod peers;
    mod serve;
    mod sessions;
    mod support;
    mod tokens;
    mod wasm;
}
