//! `tools/list` (and `skills/list`) drained page by page: each page bounded by the timeout, a server that keeps
//! returning cursors stopped after [`MAX_PAGES`], and what a server sends that is not a
//! list (an unexpected answer, a tool's name in a warning) shown escaped and capped.

use std::time::Duration;

use rmcp::model::{
    ClientRequest, ListSkillsRequest, ListToolsRequest, PaginatedRequestParams, ServerResult,
};
use rmcp::service::PeerRequestOptions;
use rmcp::{Peer, RoleClient, ServiceError};
use serde_json::Value;
use tracing::Instrument;

use super::super::skills::{McpSkill, MAX_SKILLS};
use super::super::{McpError, McpTool};
use super::peer_text::remote_error;
use super::spans::exchange_span;

/// A server that keeps returning cursors is broken, not large; stop after this many pages.
const MAX_PAGES: usize = 1000;

/// Every tool of every page, and the shortest time to live the pages gave.
pub(super) async fn list_all_tools(
    peer: &Peer<RoleClient>,
    server: &str,
    transport: &str,
    timeout: Duration,
) -> Result<(Vec<McpTool>, Option<u64>), McpError> {
    let list_error = |message: String| McpError::List {
        server: server.to_owned(),
        message,
    };
    let mut tools = Vec::new();
    let mut cursor = None;
    // The shortest time to live of the pages (the list is as fresh as its stalest page).
    let mut ttl: Option<u64> = None;
    for _ in 0..MAX_PAGES {
        let params = PaginatedRequestParams::default().with_cursor(cursor.take());
        // Sent directly rather than through `Peer::list_tools`, whose response cache would
        // answer a failed re-list with the stale list and hide the failure.
        let request = ClientRequest::ListToolsRequest(ListToolsRequest::with_param(params));
        let span = exchange_span("tools/list", server, transport);
        let answer = async {
            let handle = peer
                .send_request_with_option(request, PeerRequestOptions::with_timeout(timeout))
                .await?;
            handle.await_response().await
        };
        let page = match answer.instrument(span).await {
            Ok(ServerResult::ListToolsResult(page)) => page,
            Ok(other) => {
                let other = prompt_host_peer::shown(&format!("{other:?}"));
                return Err(list_error(format!("unexpected answer {other}")));
            }
            Err(ServiceError::Timeout { .. }) => {
                return Err(McpError::ListTimeout {
                    server: server.to_owned(),
                    timeout,
                })
            }
            Err(e) => return Err(list_error(remote_error(&e.to_string()))),
        };
        if let Some(page_ttl) = page.ttl_ms {
            ttl = Some(ttl.map_or(page_ttl, |t| t.min(page_ttl)));
        }
        for t in page.tools {
            let input_schema = Value::Object((*t.input_schema).clone());
            // An untrusted server's schema deeper than a session log can hold would fail
            // every step; that one tool is left out, loudly.
            use prompt_host_core::session::{too_deep, MAX_TOOL_PARAMETERS_DEPTH};
            if let Some(at) = too_deep(&input_schema, MAX_TOOL_PARAMETERS_DEPTH) {
                log::warn!(
                    "MCP server \"{server}\": tool \"{}\" left out: its inputSchema nests more than {MAX_TOOL_PARAMETERS_DEPTH} levels deep (at {at}), deeper than a session log can hold",
                    prompt_host_peer::shown(&t.name)
                );
                continue;
            }
            tools.push(McpTool {
                name: t.name.into_owned(),
                description: t.description.map(|d| d.into_owned()).unwrap_or_default(),
                input_schema,
            });
        }
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok((tools, ttl)),
        }
    }
    Err(list_error(format!(
        "still paginating after {MAX_PAGES} pages"
    )))
}

/// Every skill of every `skills/list` page (SEP-2640) kept to what the host can check, and
/// the shortest time to live the pages gave. Entries that break the extension's rules or
/// limits are left out, loudly; the listing is cut at [`MAX_SKILLS`]. An empty list, with
/// nothing asked, from a server that does not declare the extension.
pub(super) async fn list_all_skills(
    peer: &Peer<RoleClient>,
    server: &str,
    transport: &str,
    timeout: Duration,
) -> Result<(Vec<McpSkill>, Option<u64>), McpError> {
    let offered = peer
        .peer_info()
        .is_some_and(|info| info.capabilities.supports_skills());
    if !offered {
        return Ok((Vec::new(), None));
    }
    let list_error = |message: String| McpError::SkillsList {
        server: server.to_owned(),
        message,
    };
    let mut skills: Vec<McpSkill> = Vec::new();
    let mut cursor = None;
    let mut ttl: Option<u64> = None;
    let mut cut = false;
    for _ in 0..MAX_PAGES {
        let params = PaginatedRequestParams::default().with_cursor(cursor.take());
        let request = ClientRequest::ListSkillsRequest(ListSkillsRequest::with_param(params));
        let span = exchange_span("skills/list", server, transport);
        let answer = async {
            let handle = peer
                .send_request_with_option(request, PeerRequestOptions::with_timeout(timeout))
                .await?;
            handle.await_response().await
        };
        let page = match tokio::time::timeout(timeout, answer.instrument(span)).await {
            Ok(Ok(ServerResult::ListSkillsResult(page))) => page,
            Ok(Ok(other)) => {
                let other = prompt_host_peer::shown(&format!("{other:?}"));
                return Err(list_error(format!("unexpected answer {other}")));
            }
            Ok(Err(ServiceError::Timeout { .. })) | Err(_) => {
                return Err(McpError::SkillsListTimeout {
                    server: server.to_owned(),
                    timeout,
                })
            }
            Ok(Err(e)) => return Err(list_error(remote_error(&e.to_string()))),
        };
        if let Some(page_ttl) = page.ttl_ms {
            ttl = Some(ttl.map_or(page_ttl, |t| t.min(page_ttl)));
        }
        for skill in page.skills {
            let shown_uri = prompt_host_peer::shown(&skill.uri);
            if skills.len() >= MAX_SKILLS {
                cut = true;
                break;
            }
            match McpSkill::from_listed(skill) {
                Ok(skill) if skills.iter().any(|s| s.name == skill.name) => log::warn!(
                    "MCP server \"{server}\": skill {shown_uri} left out: its name \"{}\" is listed already",
                    skill.name
                ),
                Ok(skill) => skills.push(skill),
                Err(why) => log::warn!(
                    "MCP server \"{server}\": skill {shown_uri} left out: {}",
                    prompt_host_peer::shown(&why)
                ),
            }
        }
        match page.next_cursor {
            Some(next) if !cut => cursor = Some(next),
            _ => {
                if cut {
                    log::warn!(
                        "MCP server \"{server}\": its skills index is cut at {MAX_SKILLS} skills"
                    );
                }
                return Ok((skills, ttl));
            }
        }
    }
    Err(list_error(format!(
        "still paginating after {MAX_PAGES} pages"
    )))
}
