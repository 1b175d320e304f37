//! What the tests share, no test area of its own: running the binary and `serve`, the Wasm
//! runtime and guests, the hostile-peer kit, a fake registry made of it, and the hostile
//! matrix. A kit's own tests sit beside it.

pub(crate) mod cli;
pub(crate) mod fake_registry;
pub(crate) mod hostile_matrix;
pub(crate) mod hostile_peer;
pub(crate) mod postgres;
pub(crate) mod serve;
pub(crate) mod wasm;
