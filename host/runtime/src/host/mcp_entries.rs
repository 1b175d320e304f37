//! The `[[mcp]]` entries of a host.toml made into the connections
//! [`Host::from_config`](super::Host::from_config)
//! opens: the server (a command, or a remote URL with its secrets), its lifecycle and
//! instruction budget, and the provider plugin.

use std::path::Path;
use std::sync::Arc;

use super::{HostError, McpSpec};
use crate::config::HostConfig;

/// The connection of `[[mcp]]` entry `index`, its instruction budget counted with
/// `tokenizer` (`[prompt] tokenizer`); a missing provider or tokenizer is a config error.
pub(super) fn mcp_spec(
    config: &HostConfig,
    index: usize,
    tokenizer: Option<&Arc<crate::tokens::Tokenizer>>,
) -> Result<McpSpec, HostError> {
    let entry = &config.mcp[index];
    let provider = config.mcp_provider(index).ok_or_else(|| {
        HostError::Config(crate::config::ConfigFileError::Invalid {
            path: shown_path(config),
            key: format!("mcp[{index}].provider"),
            message: format!(
                "MCP server \"{}\" has no instruction-provider plugin; set mcp[{index}].provider or [host] mcp_provider",
                entry.name
            ),
        })
    })?;
    // Relative paths in the entry mean "next to host.toml", like every other path there:
    // the server runs in that directory, and a relative command path is resolved against it.
    let dir = config
        .path
        .as_deref()
        .and_then(Path::parent)
        .map(|d| {
            if d.as_os_str().is_empty() {
                Path::new(".")
            } else {
                d
            }
        })
        .map(Path::to_path_buf);
    let invalid = |key: String, message: String| {
        HostError::Config(crate::config::ConfigFileError::Invalid {
            path: shown_path(config),
            key,
            message,
        })
    };
    let server = match (&entry.command, &entry.url) {
        (Some(command), _) => {
            let command = match &dir {
                Some(dir) if command.contains('/') && Path::new(command).is_relative() => {
                    dir.join(command).display().to_string()
                }
                _ => command.clone(),
            };
            let mut server = crate::mcp::McpServerSpec::new(entry.name.clone(), command)
                .args(entry.args.clone())
                .env(entry.env.clone());
            server.dir = dir;
            server
        }
        (None, Some(url)) => {
            let remote = remote_server(entry, url, index, |name| std::env::var(name).ok())
                .map_err(|(key, message)| invalid(key, message))?;
            crate::mcp::McpServerSpec::remote(entry.name.clone(), remote)
        }
        (None, None) => {
            return Err(invalid(
                format!("mcp[{index}].command"),
                "expected `command` or `url`".into(),
            ))
        }
    };
    let lifecycle = match entry.lifecycle {
        crate::config::McpLifecycleConfig::Auto => crate::mcp::McpLifecycle::Auto,
        crate::config::McpLifecycleConfig::Discover => crate::mcp::McpLifecycle::Discover,
        crate::config::McpLifecycleConfig::Initialize => crate::mcp::McpLifecycle::Initialize,
    };
    let server = server
        .timeout(std::time::Duration::from_millis(entry.timeout_ms))
        .lifecycle(lifecycle)
        .instructions(entry.instructions)
        .required(entry.required);
    let server = match entry.start_wait_ms {
        Some(ms) => server.start_wait(std::time::Duration::from_millis(ms)),
        None => server,
    };
    let server = match (entry.max_instruction_tokens, tokenizer) {
        (None, _) => server,
        (Some(max), Some(tokenizer)) => server.instruction_budget(
            crate::mcp::InstructionBudget::new(max, Arc::clone(tokenizer)),
        ),
        (Some(_), None) => {
            return Err(HostError::BudgetNeedsTokenizer {
                budget: format!("mcp[{index}].max_instruction_tokens"),
            })
        }
    };
    let mut spec = McpSpec::new(server, provider)
        .config(serde_json::to_value(&entry.config).unwrap_or_default());
    spec.scope = entry.scope.clone();
    Ok(spec)
}

/// The remote server of `[[mcp]]` entry `index` at `url`: its secrets resolved with
/// `lookup` (the environment), its timeouts and CA file; `(key, message)` naming the entry's
/// key when a secret cannot be resolved (the message names the variable, never a value).
fn remote_server(
    entry: &crate::config::McpConfig,
    url: &str,
    index: usize,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<crate::mcp::RemoteServer, (String, String)> {
    use crate::mcp::{resolve_secret, ClientCredentials, RemoteServer, Secret};
    let mut remote = RemoteServer::new(url).timeouts(
        std::time::Duration::from_millis(entry.connect_timeout_ms),
        std::time::Duration::from_millis(entry.idle_timeout_ms),
    );
    for (name, value) in &entry.headers {
        let value = resolve_secret(value, &lookup)
            .map_err(|m| (format!("mcp[{index}].headers.{name}"), m))?;
        remote = remote.header(name.clone(), Secret::new(value));
    }
    if let Some(ca) = &entry.ca_file {
        remote = remote.ca_file(ca.clone());
    }
    if let Some(oauth) = &entry.oauth {
        let secret = resolve_secret(&oauth.client_secret, &lookup)
            .map_err(|m| (format!("mcp[{index}].oauth.client_secret"), m))?;
        let mut grant =
            ClientCredentials::new(&oauth.token_url, &oauth.client_id, Secret::new(secret));
        grant.scopes = oauth
            .scope
            .as_deref()
            .map(|s| s.split_whitespace().map(str::to_owned).collect())
            .unwrap_or_default();
        grant.resource = oauth.resource.clone();
        remote = remote.oauth(grant);
    }
    Ok(remote)
}

fn shown_path(config: &HostConfig) -> String {
    config
        .path
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "host.toml".into())
}
