//! A [`Host`] built without the `mcp` feature keeps no MCP servers: the steps' waits for
//! them and a scope's disposal of them have nothing to do. (host.toml's `[[mcp]]` entries
//! are refused when the file is loaded.)

use super::{Host, HostError};
use crate::prompt::CancelToken;

impl Host {
    /// No server to wait for (`wait_mcp_start` of the `mcp` feature).
    pub(super) async fn wait_mcp_start(
        &self,
        _scope: Option<&str>,
        _signal: Option<&CancelToken>,
    ) -> Result<(), HostError> {
        Ok(())
    }

    /// No server to shut down.
    pub(super) fn dispose_mcp_scope(&self, _key: &str) {}
}
