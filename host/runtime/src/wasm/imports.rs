//! The host side of the plugin contract's imports, on a store's data: `registry` (what a
//! plugin declares), `assembly` (what a listener edits), `log`, 0.2.0's `control` and 0.3.0's
//! `freshness`. Each is thin: it checks and charges what the guest hands in and delegates to
//! the store's parts (the declaration window, the listener frame, the output buffers, the
//! running call).

mod assembly;
mod control;
mod freshness;
mod log;
mod registry;
