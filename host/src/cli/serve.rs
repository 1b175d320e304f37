//! `prompt-host serve`: JSON-RPC 2.0 over stdio (see `prompt_host::serve` and PROTOCOL.md).

use std::path::Path;

use tokio::io::BufReader;

use crate::host::Host;
use crate::serve::{Notifier, Server};

pub use crate::serve::DEFAULT_MAX_REQUEST_BYTES;

/// Serve requests from stdin until it closes (or stdout does).
pub async fn run(config: Option<&Path>, max_request_bytes: usize) -> anyhow::Result<()> {
    let notifier = Notifier::new();
    let mut runtime = super::commands::runtime_config();
    // Plugin lines become notifications for a subscribed client, and still reach stderr.
    runtime.log_sink = Some(notifier.sink(runtime.log_sink.take()));
    let host = match config {
        Some(path) => super::commands::load_host_with(path, runtime)?,
        None => Host::new(crate::prompt::PromptConfig::default(), runtime)?,
    };
    let server = Server::with_notifier(host, notifier);
    server
        .serve(
            BufReader::new(tokio::io::stdin()),
            tokio::io::stdout(),
            max_request_bytes,
        )
        .await?;
    Ok(())
}
