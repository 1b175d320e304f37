//! The Wasm runtime: sandboxed components implement the core's provider traits.

pub mod bindings;

/// Marker type behind the `assembly` resource handle given to listeners.
pub struct AssemblyHandle;
