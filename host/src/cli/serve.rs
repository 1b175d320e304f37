//! `prompt-host serve`: JSON-RPC 2.0 over stdio (see `prompt_host::serve`).

use std::path::Path;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::host::Host;
use crate::serve::Server;

/// Serve requests from stdin until it closes.
pub async fn run(config: Option<&Path>) -> anyhow::Result<()> {
    let host = match config {
        Some(path) => super::commands::load_host(path)?,
        None => Host::new(
            crate::prompt::PromptConfig::default(),
            super::commands::runtime_config(),
        )?,
    };
    let mut server = Server::new(host);
    let mut input = BufReader::new(tokio::io::stdin());
    let mut stdout = tokio::io::stdout();
    let mut buffer = Vec::new();
    loop {
        buffer.clear();
        if input.read_until(b'\n', &mut buffer).await? == 0 {
            break;
        }
        // Invalid UTF-8 becomes replacement characters, hence a parse error for that line
        // rather than the end of the server.
        let line = String::from_utf8_lossy(&buffer);
        if let Some(response) = server.handle_line(&line).await {
            stdout.write_all(response.as_bytes()).await?;
            stdout.write_all(b"\n").await?;
            stdout.flush().await?;
        }
    }
    Ok(())
}
