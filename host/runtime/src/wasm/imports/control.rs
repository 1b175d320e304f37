//! The `control` import of contract 0.2.0: whether the running call was cancelled, and
//! asking the host to keep an answer until the context changes.

use super::super::contract::wit::control;
use super::super::store::StoreData;

impl control::Host for StoreData {
    fn cancelled(&mut self) -> wasmtime::Result<bool> {
        Ok(self.call.signal.as_ref().is_some_and(|s| s.is_cancelled()))
    }

    fn keep_until_context_changes(&mut self) -> wasmtime::Result<()> {
        // Read by the dynamic-entry providers after the call; other calls ignore it.
        self.call.keep.until_context_changes();
        Ok(())
    }
}
