//! MCP skills (the Skills extension, SEP-2640, `io.modelcontextprotocol/skills`): what a
//! server's `skills/list` says, kept to what the host can check, and a skill's `SKILL.md`
//! read on request and verified against the digest the listing gave.
//!
//! The index (name, description, digest, size) is part of a generation and reaches the
//! prompt only through the instruction-provider plugin; a body is read only when an
//! embedder asks for it ([`read_skill`]), never put in the prompt by the host.
//!
//! A server is a peer the host does not trust. A skill entry that breaks the extension's
//! rules (rmcp's `Skill::validate`: a URI not ending in `/SKILL.md`, a name that is not a
//! skill name or not its folder's, a file outside the skill, a malformed digest) or its
//! limits ([`MAX_SKILL_FILES`], [`MAX_SKILL_BYTES`]) is left out, loudly; a listing is cut at
//! [`MAX_SKILLS`]. A body is checked for its size, then its digest, then its frontmatter's
//! name, and refused on the first that does not hold.

use std::time::Duration;

use base64::Engine as _;
use rmcp::model::{
    ClientRequest, ReadResourceRequest, ReadResourceRequestParams, ResourceContents, ServerResult,
    Skill, SkillIntegrityError, SkillResource, SkillResources,
};
use rmcp::service::PeerRequestOptions;
use rmcp::{Peer, RoleClient, ServiceError};
use thiserror::Error;

/// The most files one skill may list (the extension's limit).
pub const MAX_SKILL_FILES: usize = 512;
/// The most bytes one skill's files may add up to (the extension's limit, 16 MiB).
pub const MAX_SKILL_BYTES: u64 = 16 << 20;
/// The most skills kept of one server's listing: an index is for a prompt, and a server
/// listing more is cut here, loudly.
pub const MAX_SKILLS: usize = 1000;
/// The longest description kept, in bytes (the Agent Skills format allows 1,024 characters).
pub const MAX_DESCRIPTION_BYTES: usize = 4096;

/// One skill of a server's index.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct McpSkill {
    /// The URI of its `SKILL.md` (`skill://<path>/SKILL.md`).
    pub uri: String,
    /// Its name (its frontmatter's, which is its folder's).
    pub name: String,
    /// Its description, as the server gave it (cut at [`MAX_DESCRIPTION_BYTES`]).
    pub description: String,
    /// Its files with their digests, or `None` for a dynamic skill (no stable digests).
    pub files: Option<Vec<McpSkillFile>>,
}

/// One file of a skill, as listed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct McpSkillFile {
    /// Its resource URI.
    pub uri: String,
    /// `sha256:` and 64 lowercase hex digits.
    pub digest: String,
    /// Its length in bytes.
    pub size: u64,
}

impl McpSkill {
    /// The listed entry of its `SKILL.md` (`None` for a dynamic skill).
    pub fn skill_md(&self) -> Option<&McpSkillFile> {
        self.files.as_ref()?.iter().find(|f| f.uri == self.uri)
    }

    /// The digest of its `SKILL.md`, or `"dynamic"`.
    pub fn digest(&self) -> &str {
        self.skill_md().map_or("dynamic", |f| f.digest.as_str())
    }

    /// How many files it lists (0 for a dynamic skill).
    pub fn file_count(&self) -> usize {
        self.files.as_ref().map_or(0, Vec::len)
    }

    /// The bytes of all its files (0 for a dynamic skill).
    pub fn total_size(&self) -> u64 {
        self.files.iter().flatten().map(|f| f.size).sum()
    }

    /// An entry of the listing as the host keeps it, or why it is left out.
    pub(crate) fn from_listed(skill: Skill) -> Result<McpSkill, String> {
        skill.validate().map_err(|e| e.to_string())?;
        let files = match skill.resources {
            SkillResources::Files(files) => {
                if files.len() > MAX_SKILL_FILES {
                    return Err(format!(
                        "it lists {} files, more than {MAX_SKILL_FILES}",
                        files.len()
                    ));
                }
                let total = files.iter().fold(0u64, |t, f| t.saturating_add(f.size));
                if total > MAX_SKILL_BYTES {
                    return Err(format!(
                        "its files add up to {total} bytes, more than {MAX_SKILL_BYTES}"
                    ));
                }
                Some(
                    files
                        .into_iter()
                        .map(|f| McpSkillFile {
                            uri: f.uri,
                            digest: f.digest,
                            size: f.size,
                        })
                        .collect(),
                )
            }
            _ => None,
        };
        let mut description = skill.frontmatter.description;
        if description.len() > MAX_DESCRIPTION_BYTES {
            let mut end = MAX_DESCRIPTION_BYTES;
            while !description.is_char_boundary(end) {
                end -= 1;
            }
            description.truncate(end);
        }
        Ok(McpSkill {
            uri: skill.uri,
            name: skill.frontmatter.name,
            description,
            files,
        })
    }
}

/// A skill's `SKILL.md` as read from its server.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SkillBody {
    /// The skill, as the generation the body was checked against listed it.
    pub skill: McpSkill,
    /// The text of its `SKILL.md`.
    pub text: String,
    /// The digest of the bytes read (`sha256:…`).
    pub digest: String,
    /// Whether the bytes were checked against a listed digest (`false` for a dynamic skill,
    /// which has none).
    pub verified: bool,
}

/// Why a skill's body was not returned. Every message names the server.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum SkillError {
    /// No connected server of that name in that scope.
    #[error("mcp-client({server}): no such MCP server{}{}", in_scope(.scope), connected_in(.elsewhere))]
    NoServer {
        /// The server name asked for.
        server: String,
        /// The scope asked for.
        scope: Option<String>,
        /// The scopes a server of that name is connected into (`None`: the global one).
        elsewhere: Vec<Option<String>>,
    },
    /// The server's live generation lists no skill of that name.
    #[error("mcp-client({server}): no skill \"{skill}\" in its index ({listed} listed)")]
    Unknown {
        /// The server name.
        server: String,
        /// The skill asked for, escaped.
        skill: String,
        /// How many skills the index lists.
        listed: usize,
    },
    /// The server is not connected now.
    #[error("mcp-client({server}): not connected; skill \"{skill}\" cannot be read now")]
    NotConnected {
        /// The server name.
        server: String,
        /// The skill asked for.
        skill: String,
    },
    /// `resources/read` got no answer in time.
    #[error("mcp-client({server}): no answer to resources/read of {uri} within {} ms", timeout.as_millis())]
    Timeout {
        /// The server name.
        server: String,
        /// The URI read.
        uri: String,
        /// The bound that expired.
        timeout: Duration,
    },
    /// `resources/read` failed, or answered without the file.
    #[error("mcp-client({server}): resources/read of {uri} failed: {message}")]
    Read {
        /// The server name.
        server: String,
        /// The URI read.
        uri: String,
        /// What went wrong, escaped.
        message: String,
    },
    /// The bytes are not what the index promised.
    #[error("mcp-client({server}): skill \"{skill}\" refused: {source}")]
    Integrity {
        /// The server name.
        server: String,
        /// The skill.
        skill: String,
        /// The size or digest that did not match.
        source: SkillIntegrityError,
    },
    /// The bytes match, but their frontmatter does not name the skill.
    #[error("mcp-client({server}): skill \"{skill}\" refused: {message}")]
    Frontmatter {
        /// The server name.
        server: String,
        /// The skill.
        skill: String,
        /// What the frontmatter says instead.
        message: String,
    },
}

fn in_scope(scope: &Option<String>) -> String {
    match scope {
        Some(scope) => format!(" in scope \"{scope}\""),
        None => " in the global scope".to_owned(),
    }
}

/// Where a server of the name asked for is connected, if anywhere.
fn connected_in(scopes: &[Option<String>]) -> String {
    let named: Vec<String> = scopes
        .iter()
        .map(|s| in_scope(s).trim_start_matches(" in ").to_owned())
        .collect();
    match named.as_slice() {
        [] => String::new(),
        _ => format!(" (it is connected in {})", named.join(", ")),
    }
}

/// Read `skill`'s `SKILL.md` from `peer` within `timeout`, and check it: its size and digest
/// against the listing (a dynamic skill's at most [`MAX_SKILL_BYTES`]), then that its
/// frontmatter names the skill.
pub(crate) async fn read_skill(
    peer: &Peer<RoleClient>,
    server: &str,
    skill: &McpSkill,
    timeout: Duration,
) -> Result<SkillBody, SkillError> {
    let uri = skill.uri.clone();
    let read_error = |message: String| SkillError::Read {
        server: server.to_owned(),
        uri: prompt_host_peer::shown(&uri),
        message,
    };
    let request = ClientRequest::ReadResourceRequest(ReadResourceRequest::new(
        ReadResourceRequestParams::new(skill.uri.clone()),
    ));
    let answer = async {
        let handle = peer
            .send_request_with_option(request, PeerRequestOptions::with_timeout(timeout))
            .await?;
        handle.await_response().await
    };
    // The request's own timeout bounds the wait for an answer; this bounds sending it too.
    let result = match tokio::time::timeout(timeout, answer).await {
        Ok(Ok(ServerResult::ReadResourceResult(result))) => result,
        Ok(Ok(_)) => return Err(read_error("an answer that is not a resource".to_owned())),
        Ok(Err(ServiceError::Timeout { .. })) | Err(_) => {
            return Err(SkillError::Timeout {
                server: server.to_owned(),
                uri: prompt_host_peer::shown(&uri),
                timeout,
            })
        }
        Ok(Err(e)) => return Err(read_error(crate::session::remote_error(&e.to_string()))),
    };
    let bytes = result
        .contents
        .into_iter()
        .find_map(|content| match content {
            ResourceContents::TextResourceContents { uri, text, .. } if uri == skill.uri => {
                Some(Ok(text.into_bytes()))
            }
            ResourceContents::BlobResourceContents { uri, blob, .. } if uri == skill.uri => Some(
                base64::engine::general_purpose::STANDARD
                    .decode(blob)
                    .map_err(|e| format!("its blob is not base64: {e}")),
            ),
            _ => None,
        })
        .ok_or_else(|| read_error("the answer holds no content of that URI".to_owned()))?
        .map_err(read_error)?;
    let integrity = |source| SkillError::Integrity {
        server: server.to_owned(),
        skill: skill.name.clone(),
        source,
    };
    let verified = match skill.skill_md() {
        Some(listed) => {
            // The URI is only the error's text: shown escaped, as everything a server says.
            let shown_uri = prompt_host_peer::shown(&listed.uri);
            SkillResource::new(shown_uri, &listed.digest, listed.size)
                .verify(&bytes)
                .map_err(integrity)?;
            true
        }
        None if bytes.len() as u64 > MAX_SKILL_BYTES => {
            return Err(read_error(format!(
                "{} bytes, more than a skill may hold ({MAX_SKILL_BYTES})",
                bytes.len()
            )))
        }
        None => false,
    };
    let digest = rmcp::model::sha256_digest(&bytes);
    let text = String::from_utf8(bytes).map_err(|_| SkillError::Frontmatter {
        server: server.to_owned(),
        skill: skill.name.clone(),
        message: "its SKILL.md is not UTF-8 text".to_owned(),
    })?;
    check_frontmatter(&text, &skill.name).map_err(|message| SkillError::Frontmatter {
        server: server.to_owned(),
        skill: skill.name.clone(),
        message,
    })?;
    Ok(SkillBody {
        skill: skill.clone(),
        text,
        digest,
        verified,
    })
}

/// That `text` opens with a frontmatter (`---` lines) whose `name:` is `name`. Only the
/// `name` line is read: the rest of the frontmatter is the skill author's.
pub fn check_frontmatter(text: &str, name: &str) -> Result<(), String> {
    let mut lines = text.lines();
    if lines.next().map(str::trim_end) != Some("---") {
        return Err("its SKILL.md does not open with a frontmatter".to_owned());
    }
    for line in lines {
        let line = line.trim_end();
        if line == "---" {
            break;
        }
        if let Some(value) = line.strip_prefix("name:") {
            let value = value.trim().trim_matches(|c| c == '"' || c == '\'');
            return if value == name {
                Ok(())
            } else {
                Err(format!(
                    "its frontmatter names \"{}\"",
                    prompt_host_peer::shown(value)
                ))
            };
        }
    }
    Err("its frontmatter has no name".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::SkillFrontmatter;

    fn listed(name: &str, files: Vec<SkillResource>) -> Skill {
        Skill::new(
            format!("skill://{name}/SKILL.md"),
            SkillFrontmatter::new(name, "Does things."),
            SkillResources::Files(files),
        )
    }

    #[test]
    fn an_entry_that_breaks_the_extension_s_rules_or_limits_is_left_out_with_why() {
        let md = |name: &str| SkillResource::from_bytes(format!("skill://{name}/SKILL.md"), b"x");
        assert!(McpSkill::from_listed(listed("ok", vec![md("ok")])).is_ok());
        let traversal = Skill::new(
            "skill://../../etc/SKILL.md",
            SkillFrontmatter::new("etc", "x"),
            SkillResources::Files(vec![]),
        );
        assert!(McpSkill::from_listed(traversal).is_err());
        let outside = listed(
            "ok",
            vec![
                md("ok"),
                SkillResource::from_bytes("skill://ok/../other/secret", b"y"),
            ],
        );
        assert!(McpSkill::from_listed(outside).is_err());
        let many: Vec<_> = std::iter::once(md("ok"))
            .chain(
                (0..MAX_SKILL_FILES)
                    .map(|i| SkillResource::from_bytes(format!("skill://ok/f{i}.md"), b"z")),
            )
            .collect();
        assert_eq!(
            McpSkill::from_listed(listed("ok", many)),
            Err(format!("it lists 513 files, more than {MAX_SKILL_FILES}"))
        );
        let huge = listed(
            "ok",
            vec![
                SkillResource::new(
                    "skill://ok/SKILL.md",
                    rmcp::model::sha256_digest(b"x"),
                    u64::MAX,
                ),
                SkillResource::new("skill://ok/b.md", rmcp::model::sha256_digest(b"x"), 9),
            ],
        );
        assert_eq!(
            McpSkill::from_listed(huge),
            Err(format!(
                "its files add up to {} bytes, more than {MAX_SKILL_BYTES}",
                u64::MAX
            ))
        );
    }

    #[test]
    fn the_frontmatter_must_name_the_skill() {
        let md = "---\nname: code-review\ndescription: x\n---\nbody";
        assert_eq!(check_frontmatter(md, "code-review"), Ok(()));
        assert_eq!(
            check_frontmatter(md, "other"),
            Err("its frontmatter names \"code-review\"".into())
        );
        assert_eq!(
            check_frontmatter("body", "x"),
            Err("its SKILL.md does not open with a frontmatter".into())
        );
        assert_eq!(
            check_frontmatter("---\ndescription: x\n---\nname: x", "x"),
            Err("its frontmatter has no name".into())
        );
    }
}
