//! What the sandbox's WASI replacements need of a store's data: a leaf, so the replacements
//! and the store that implements it both depend on it and not on each other.

use std::sync::Arc;
use std::time::Instant;

use wasmtime::component::ResourceTable;

use super::grants::Granted;

/// What the sandbox's WASI replacements need of a store's data.
pub(crate) trait SandboxState: Send + 'static {
    /// The store's resource table.
    fn table(&mut self) -> &mut ResourceTable;
    /// What the plugin was granted.
    fn granted(&self) -> Option<&Arc<Granted>>;
    /// Count `n` bytes handed to the guest against the running call's output budget.
    fn charge(&mut self, n: usize, what: &str) -> wasmtime::Result<()>;
    /// The running call's deadline.
    fn deadline(&self) -> Option<Instant>;
    /// The running call's signal.
    fn signal(&self) -> Option<crate::prompt::CancelToken>;
    /// Nanoseconds since the store was created, on the clock its WASI context reads.
    fn now_ns(&self) -> u64;
    /// Whether the running call must stop now (deadline passed, or cancelled).
    fn must_stop(&mut self) -> bool;
    /// The plugin's memory limit, in bytes.
    fn memory_limit(&self) -> usize;
    /// Fail the running call as over a limit, with `message`.
    fn refuse(&mut self, message: String) -> wasmtime::Error;
}
