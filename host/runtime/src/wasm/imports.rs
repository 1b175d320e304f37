//! The host side of the plugin contract's imports, on a store's data: `registry` (what a
//! plugin declares), `assembly` (what a listener edits), `log`, and 0.2.0's `control`. Each
//! is thin: it checks and charges what the guest hands in and delegates to the store's parts
//! (the declaration window, the listener frame, the output buffers, the running call).

mod assembly;
mod control;
mod log;
mod registry;
