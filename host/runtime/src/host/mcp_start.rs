//! [`Host::wait_mcp_start`]: before an assembly, the MCP servers it sees get their start
//! wait ([`crate::mcp::StartWait`]), so that the first step of a scope has what they offer,
//! through every interface alike (the command line, `serve`, the in-process hosts, the
//! library), or fails when a required one has nothing.

use std::sync::Arc;

use tokio::sync::watch;

use super::{Host, HostError, KeptMcp, McpId};
use crate::mcp::{McpStatus, StartWait};
use crate::prompt::{AssembleError, CancelToken};

impl Host {
    /// Wait for the MCP servers an assembly for `scope` sees (the global ones and those of
    /// `scope` and its ancestors) whose start wait is not over: each until its first
    /// generation or failure ([`StartWait`] says which, and until when at the latest). A
    /// server that published nothing is then left out with a warning logged once, or, when
    /// it is required, fails the call naming it and its last error. Returns the status of
    /// each server waited for, in connection order.
    ///
    /// Every assembly runs this first ([`Host::assemble`], and so `render` and `step`);
    /// once the servers have published or their waits are over it costs a look at each.
    /// `signal` cancels the wait.
    pub async fn wait_mcp_start(
        &self,
        scope: Option<&str>,
        signal: Option<&CancelToken>,
    ) -> Result<Vec<KeptMcp>, HostError> {
        // Every step asks: a host without servers answers at once.
        if self.lock_mcp().is_empty() {
            return Ok(Vec::new());
        }
        let sees = self.seen_from(scope);
        let waits: Vec<(McpId, watch::Receiver<McpStatus>, Arc<StartWait>)> = self
            .lock_mcp()
            .iter()
            .filter(|(_, bridge)| sees(bridge) && !bridge.start_wait().passed())
            .map(|(id, bridge)| (*id, bridge.watch(), Arc::clone(bridge.start_wait())))
            .collect();
        let mut reached = Vec::with_capacity(waits.len());
        for (id, mut watch, wait) in waits {
            let waiting = tokio::time::timeout_at(
                wait.deadline(),
                watch.wait_for(|status| wait.is_over(status)),
            );
            match signal {
                Some(signal) => tokio::select! {
                    _ = waiting => {}
                    () = signal.cancelled() => return Err(cancelled(scope)),
                },
                None => {
                    let _ = waiting.await;
                }
            }
            let status = watch.borrow().clone();
            wait.outcome(&status)?;
            reached.push(KeptMcp { id, status });
        }
        Ok(reached)
    }
}

fn cancelled(scope: Option<&str>) -> HostError {
    HostError::Assemble {
        scope: super::scope_label(scope),
        error: Box::new(AssembleError::Cancelled(
            "the caller cancelled the assembly while it waited for an MCP server's first generation"
                .into(),
        )),
    }
}
