//! The `freshness` import of contract 0.3.0: asking the host to reuse an answer, whatever
//! the context, for a time the plugin names.

use std::time::Duration;

use super::super::contract::wit::freshness;
use super::super::store::StoreData;

impl freshness::Host for StoreData {
    fn keep_for(&mut self, nanoseconds: u64) -> wasmtime::Result<()> {
        // Read by the dynamic-entry providers after the call; other calls ignore it.
        self.call
            .keep
            .for_duration(Duration::from_nanos(nanoseconds));
        Ok(())
    }
}
