//! The `ResourceLimiter` of one store: it enforces the memory and table caps of the plugin's
//! limits and remembers that a cap was hit, so a failed call is reported as a `limit` error
//! rather than as the trap the guest's allocator turns the refusal into.

use crate::policy::Limits;

/// Enforces the memory/table/instance caps of one store and records the first cap hit.
#[derive(Debug)]
pub(crate) struct Limiter {
    memory_bytes: usize,
    table_elements: usize,
    instances: usize,
    tables: usize,
    memories: usize,
    /// Set when a growth was refused; cleared at the start of every call.
    pub(crate) hit: Option<String>,
}

impl Limiter {
    pub(crate) fn new(limits: &Limits) -> Self {
        Self {
            memory_bytes: limits.memory_bytes,
            table_elements: limits.table_elements,
            instances: limits.instances,
            tables: limits.tables,
            memories: limits.memories,
            hit: None,
        }
    }
}

impl wasmtime::ResourceLimiter for Limiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.memory_bytes {
            // Refuse (memory.grow returns -1) rather than trap here: the guest may cope; if
            // it does not, the resulting trap is reported as this limit.
            self.hit = Some(format!(
                "memory limit of {} bytes exceeded (growing from {current} to {desired} bytes)",
                self.memory_bytes
            ));
            return Ok(false);
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.table_elements {
            self.hit = Some(format!(
                "table limit of {} elements exceeded (growing from {current} to {desired})",
                self.table_elements
            ));
            return Ok(false);
        }
        Ok(true)
    }

    fn instances(&self) -> usize {
        self.instances
    }

    fn tables(&self) -> usize {
        self.tables
    }

    fn memories(&self) -> usize {
        self.memories
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limiter_refuses_and_records() {
        use wasmtime::ResourceLimiter;
        let mut l = Limiter::new(&Limits::default().memory_bytes(100));
        assert!(l.memory_growing(0, 50, None).unwrap());
        assert!(l.hit.is_none());
        assert!(!l.memory_growing(50, 150, None).unwrap());
        assert!(l.hit.as_deref().unwrap().contains("memory limit"));
    }
}
