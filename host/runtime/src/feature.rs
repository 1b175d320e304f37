//! The crate features a build of prompt-host may lack, and how a refusal names them: a
//! host.toml entry or a call that needs one is refused, never ignored.

use std::fmt;

/// A crate feature of `prompt-host` that is on by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Feature {
    /// MCP servers (`[[mcp]]`).
    Mcp,
    /// Plugins from OCI registries (`oci://`, `[host.registry]`).
    Oci,
    /// Token counts and budgets (`[prompt] tokenizer`, the `*_tokens` budgets).
    Tokens,
    /// Outgoing HTTP for plugins (`grants.http`).
    Http,
}

impl Feature {
    /// The feature's name in Cargo.toml.
    pub fn name(self) -> &'static str {
        match self {
            Self::Mcp => "mcp",
            Self::Oci => "oci",
            Self::Tokens => "tokens",
            Self::Http => "http",
        }
    }

    /// What it brings, as a refusal says it.
    fn support(self) -> &'static str {
        match self {
            Self::Mcp => "MCP",
            Self::Oci => "OCI registry",
            Self::Tokens => "tokenizer",
            Self::Http => "outgoing HTTP",
        }
    }
}

/// `this build of prompt-host has no MCP support (the crate feature "mcp")`.
impl fmt::Display for Feature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "this build of prompt-host has no {} support (the crate feature \"{}\")",
            self.support(),
            self.name()
        )
    }
}
