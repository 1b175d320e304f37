//! `prompt-host serve`: JSON-RPC 2.0 over stdio. Placeholder until the server lands.

use std::path::Path;

/// Serve requests from stdin until it closes.
pub async fn run(config: Option<&Path>) -> anyhow::Result<()> {
    let _ = config;
    anyhow::bail!("serve is not available in this build")
}
