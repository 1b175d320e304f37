//! MCP client connections: the source of the instructions and tools that instruction-provider
//! plugins turn into prompt sections and tool schemas.
//!
//! One [`McpConnection`] per configured server. It spawns the server over stdio, runs the
//! `initialize` handshake, drains the paginated `tools/list` and hands the result to its
//! consumer as an [`McpSnapshot`] (a "generation"). It re-lists on
//! `notifications/tools/list_changed`, reports failures as [`McpEvent::Failed`] and
//! reconnects with exponential backoff. The consumer keeps the last good generation across a
//! failure; nothing here ever blocks the prompt assembly, since every wait is bounded by the
//! server's timeout and runs on the connection's own task. Only while the host starts does
//! an assembly wait, for a server's first generation, within the server's [`StartWait`].
//!
//! Public tool names follow the rule of the TypeScript DeepSeek Harness, in [`names`].
//!
//! The `prompt-host` library's `McpBridge` joins a connection to a sandboxed
//! instruction-provider plugin: each generation is handed to the plugin's `publish`, which
//! decides what reaches the prompt (`mcp:<server>:instructions` at order 190 and
//! `mcp__<server>__<tool>` tools with the default `mcp-instructions` plugin); [`McpStatus`]
//! reports on a bridge. This crate names no wasmtime type: the library re-exports it as
//! `prompt_host::mcp`, with the bridge.

mod connection;
mod cut;
pub mod names;
mod remote;
mod session;
mod skills;
mod start_wait;
mod status;

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;
use thiserror::Error;

pub use connection::{McpConnection, McpListener, ReconnectPolicy, SkillReader};
pub use cut::{
    cut_instructions, InstructionBudget, InstructionsCut, MAX_COUNTED_INSTRUCTION_BYTES,
};
pub use names::{check_unique_tools, public_tool_name};
pub use prompt_host_peer::{resolve_secret, shown, Secret};
pub use remote::{ClientCredentials, RemoteServer};
pub use skills::{
    check_frontmatter, McpSkill, McpSkillFile, SkillBody, SkillError, MAX_DESCRIPTION_BYTES,
    MAX_SKILLS, MAX_SKILL_BYTES, MAX_SKILL_FILES,
};
pub use start_wait::{StartWait, MAX_START_WAIT};
pub use status::{label as server_label, valid_server_name, McpBridgeError, McpState, McpStatus};

/// How to start one MCP server (from a `[[mcp]]` entry of host.toml).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct McpServerSpec {
    /// Server name (`^[A-Za-z0-9_-]{1,32}$`); it prefixes the public tool names.
    pub name: String,
    /// The program to run.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Environment added to the host's own for the server process.
    pub env: BTreeMap<String, String>,
    /// Bound on `initialize` and on each `tools/list` page.
    pub timeout: Duration,
    /// The server process's working directory, against which relative arguments resolve
    /// (`[[mcp]]` entries: host.toml's directory); `None` = the host's own.
    pub dir: Option<std::path::PathBuf>,
    /// What the server's instructions may cost in the prompt; a longer text is cut, with a
    /// note saying so (see [`cut_instructions`]). `None` = no budget.
    pub instruction_budget: Option<InstructionBudget>,
    /// A remote server over Streamable HTTP; when set, `command`, `args`, `env` and `dir`
    /// are not used.
    pub remote: Option<RemoteServer>,
    /// Which lifecycle to speak.
    pub lifecycle: McpLifecycle,
    /// Whether the server's instructions reach the provider plugin (and so the prompt);
    /// `false` keeps its tools only.
    pub instructions: bool,
    /// How long, from the connection's start, an assembly that sees the server waits for
    /// its first generation (see [`StartWait`]); zero: not at all; `None`: the server's own
    /// bound, twice its timeout plus two seconds.
    pub start_wait: Option<Duration>,
    /// Whether an assembly that sees the server fails when it has published nothing by
    /// the end of `start_wait`, instead of going on without it.
    pub required: bool,
}

/// Which MCP lifecycle a connection speaks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum McpLifecycle {
    /// The 2026-07-28 `server/discover` first, `initialize` when the server does not know
    /// it (the specification's fallback).
    #[default]
    Auto,
    /// Only `server/discover`.
    Discover,
    /// Only `initialize` (2025-11-25 and earlier).
    Initialize,
}

/// The lifecycle a connection actually used, as [`McpStatus::lifecycle`] reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LifecycleUsed {
    /// `server/discover` (stateless, 2026-07-28).
    Discover,
    /// The `initialize` handshake.
    Initialize,
}

impl LifecycleUsed {
    /// `"discover"` or `"initialize"`.
    pub fn as_str(self) -> &'static str {
        match self {
            LifecycleUsed::Discover => "discover",
            LifecycleUsed::Initialize => "initialize",
        }
    }
}

impl McpServerSpec {
    /// A spec with no arguments, no extra environment and the host.toml default timeout (10 s).
    pub fn new(name: impl Into<String>, command: impl Into<String>) -> Self {
        McpServerSpec {
            name: name.into(),
            command: command.into(),
            args: Vec::new(),
            env: BTreeMap::new(),
            timeout: Duration::from_secs(10),
            dir: None,
            instruction_budget: None,
            remote: None,
            lifecycle: McpLifecycle::Auto,
            instructions: true,
            start_wait: None,
            required: false,
        }
    }

    /// A remote server at `remote.url`, over Streamable HTTP, with the default timeout.
    pub fn remote(name: impl Into<String>, remote: RemoteServer) -> Self {
        McpServerSpec {
            remote: Some(remote),
            ..McpServerSpec::new(name, String::new())
        }
    }

    /// `"stdio"` or `"http"`: how the server is reached.
    pub fn transport(&self) -> &'static str {
        if self.remote.is_some() {
            "http"
        } else {
            "stdio"
        }
    }
}

/// One tool as the server listed it (raw name; see [`public_tool_name`] for the public one).
#[derive(Debug, Clone, PartialEq)]
pub struct McpTool {
    /// The raw tool name, sent back to the server on a call.
    pub name: String,
    /// The server's description, or `""` when it gave none.
    pub description: String,
    /// The server's `inputSchema` (a JSON object).
    pub input_schema: Value,
}

/// One generation of what a server offers: the result of a complete sync.
#[derive(Debug, Clone, PartialEq)]
pub struct McpSnapshot {
    /// The server name from the spec.
    pub server: String,
    /// Counts the generations of this connection from 1, across reconnects, so a consumer
    /// can tell a re-list from a repeat of the same event.
    pub generation: u64,
    /// The server's `instructions` (of its discover or initialize result); `""` when it
    /// sent none.
    pub instructions: String,
    /// The lifecycle the connection used.
    pub lifecycle: LifecycleUsed,
    /// The protocol revision agreed (e.g. `2026-07-28`).
    pub protocol_version: String,
    /// Every listed tool in server order, all pages drained. Not deduplicated: the consumer
    /// refuses a list with a repeated raw name through [`check_unique_tools`] and keeps its
    /// previous generation, as the TypeScript DeepSeek Harness does.
    pub tools: Vec<McpTool>,
    /// The skills index (the Skills extension, SEP-2640), every page drained, entries the
    /// host could not check left out; empty for a server that does not offer skills.
    pub skills: Vec<McpSkill>,
}

/// What a connection reports to its consumer.
#[derive(Debug, Clone, PartialEq)]
pub enum McpEvent {
    /// A complete sync: replace the previous generation with this one.
    Generation(McpSnapshot),
    /// The server could not be started, did not answer in time, or died. The previous
    /// generation (if any) stays; the connection retries after its backoff delay.
    Failed {
        /// The server name.
        server: String,
        /// What went wrong, as an [`McpError`] message.
        error: String,
    },
}

impl McpEvent {
    /// The server this event is about.
    pub fn server(&self) -> &str {
        match self {
            McpEvent::Generation(s) => &s.server,
            McpEvent::Failed { server, .. } => server,
        }
    }
}

/// Why one connection attempt or one sync failed. Every message names the server.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum McpError {
    /// The server process could not be started.
    #[error("mcp-client({server}): cannot start `{command}`: {error}")]
    Spawn {
        /// The server name.
        server: String,
        /// The program that was run.
        command: String,
        /// The operating-system error.
        error: std::io::Error,
    },
    /// The lifecycle's first request got no answer within the timeout.
    #[error("mcp-client({server}): no answer to {request} within {} ms", timeout.as_millis())]
    InitializeTimeout {
        /// The server name.
        server: String,
        /// What was asked: `initialize`, `server/discover`, or (the automatic choice)
        /// `server/discover or initialize`.
        request: &'static str,
        /// The bound that expired.
        timeout: Duration,
    },
    /// A remote server could not be reached, refused the request (an HTTP status, a
    /// missing or refused token) or answered something unusable.
    #[error("mcp-client({server}): {url}: {message}")]
    Remote {
        /// The server name.
        server: String,
        /// The endpoint, without query or fragment.
        url: String,
        /// What went wrong (never a header value or a token).
        message: String,
    },
    /// A `server/discover` refresh failed.
    #[error("mcp-client({server}): server/discover failed: {message}")]
    Discover {
        /// The server name.
        server: String,
        /// What went wrong.
        message: String,
    },
    /// A `server/discover` refresh got no answer within the timeout.
    #[error("mcp-client({server}): no answer to server/discover within {} ms", timeout.as_millis())]
    DiscoverTimeout {
        /// The server name.
        server: String,
        /// The bound that expired.
        timeout: Duration,
    },
    /// `initialize` failed (protocol error, closed pipe, ...).
    #[error("mcp-client({server}): initialize failed: {message}")]
    Initialize {
        /// The server name.
        server: String,
        /// The client library's description.
        message: String,
    },
    /// A `tools/list` page got no answer within the timeout.
    #[error("mcp-client({server}): no answer to tools/list within {} ms", timeout.as_millis())]
    ListTimeout {
        /// The server name.
        server: String,
        /// The bound that expired.
        timeout: Duration,
    },
    /// A `tools/list` request failed or the server kept paginating.
    #[error("mcp-client({server}): tools/list failed: {message}")]
    List {
        /// The server name.
        server: String,
        /// What went wrong.
        message: String,
    },
    /// A `skills/list` page got no answer within the timeout.
    #[error("mcp-client({server}): no answer to skills/list within {} ms", timeout.as_millis())]
    SkillsListTimeout {
        /// The server name.
        server: String,
        /// The bound that expired.
        timeout: Duration,
    },
    /// A `skills/list` request failed or the server kept paginating.
    #[error("mcp-client({server}): skills/list failed: {message}")]
    SkillsList {
        /// The server name.
        server: String,
        /// What went wrong.
        message: String,
    },
    /// The client panicked on something: a defect, reported as a failure and retried.
    #[error("mcp-client({server}): the connection failed on a defect of the client (a panic: {message}); it is retried")]
    Panicked {
        /// The server name.
        server: String,
        /// The panic's message, escaped.
        message: String,
    },
    /// The server process ended or closed its pipes.
    #[error("mcp-client({server}): server exited ({status}){}", stderr_suffix(.stderr))]
    Exited {
        /// The server name.
        server: String,
        /// The exit status, or how the connection ended.
        status: String,
        /// The tail of what the server wrote to stderr, for diagnosis.
        stderr: String,
    },
}

fn stderr_suffix(stderr: &str) -> String {
    let tail = stderr.trim();
    if tail.is_empty() {
        String::new()
    } else {
        format!("; stderr: {tail}")
    }
}

impl McpServerSpec {
    /// Sets [`McpServerSpec::args`].
    pub fn args(mut self, value: Vec<String>) -> Self {
        self.args = value;
        self
    }

    /// Sets [`McpServerSpec::env`].
    pub fn env(mut self, value: BTreeMap<String, String>) -> Self {
        self.env = value;
        self
    }

    /// Sets [`McpServerSpec::timeout`].
    pub fn timeout(mut self, value: Duration) -> Self {
        self.timeout = value;
        self
    }

    /// Sets [`McpServerSpec::instruction_budget`].
    pub fn instruction_budget(mut self, value: InstructionBudget) -> Self {
        self.instruction_budget = Some(value);
        self
    }

    /// Sets [`McpServerSpec::lifecycle`].
    pub fn lifecycle(mut self, value: McpLifecycle) -> Self {
        self.lifecycle = value;
        self
    }

    /// Sets [`McpServerSpec::instructions`].
    pub fn instructions(mut self, value: bool) -> Self {
        self.instructions = value;
        self
    }

    /// Sets [`McpServerSpec::start_wait`].
    pub fn start_wait(mut self, value: Duration) -> Self {
        self.start_wait = Some(value);
        self
    }

    /// Sets [`McpServerSpec::required`].
    pub fn required(mut self, value: bool) -> Self {
        self.required = value;
        self
    }

    /// Sets [`McpServerSpec::dir`].
    pub fn dir(mut self, value: impl Into<std::path::PathBuf>) -> Self {
        self.dir = Some(value.into());
        self
    }
}
