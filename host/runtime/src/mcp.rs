//! MCP client connections: the source of the instructions and tools that instruction-provider
//! plugins turn into prompt sections and tool schemas.
//!
//! One [`McpConnection`] per configured server. It spawns the server over stdio, runs the
//! `initialize` handshake, drains the paginated `tools/list` and hands the result to its
//! consumer as an [`McpSnapshot`] (a "generation"). It re-lists on
//! `notifications/tools/list_changed`, reports failures as [`McpEvent::Failed`] and
//! reconnects with exponential backoff. The consumer keeps the last good generation across a
//! failure; nothing here ever blocks the prompt assembly, since every wait is bounded by the
//! server's timeout and runs on the connection's own task.
//!
//! Public tool names follow the rule of the TypeScript DeepSeek Harness, in [`names`].
//!
//! An [`McpBridge`] joins a connection to a sandboxed instruction-provider plugin: each
//! generation is handed to the plugin's `publish`, which decides what reaches the prompt
//! (`mcp:<server>:instructions` at order 190 and `mcp__<server>__<tool>` tools with the
//! default `mcp-instructions` plugin). [`crate::Host::connect_mcp`] keeps bridges inside the
//! host; [`McpStatus`] reports on them.

mod bridge;
mod connection;
mod cut;
pub mod names;
mod session;
mod status;

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;
use thiserror::Error;

pub use bridge::{server_instructions, McpBridge};
pub use connection::{McpConnection, McpListener, ReconnectPolicy};
pub use cut::{
    cut_instructions, InstructionBudget, InstructionsCut, MAX_COUNTED_INSTRUCTION_BYTES,
};
pub use names::{check_unique_tools, public_tool_name};
pub use status::{valid_server_name, McpBridgeError, McpState, McpStatus};

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
    /// The `instructions` of the initialize result; `""` when the server sent none.
    pub instructions: String,
    /// Every listed tool in server order, all pages drained. Not deduplicated: the consumer
    /// refuses a list with a repeated raw name through [`check_unique_tools`] and keeps its
    /// previous generation, as the TypeScript DeepSeek Harness does.
    pub tools: Vec<McpTool>,
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
    /// `initialize` got no answer within the timeout.
    #[error("mcp-client({server}): no answer to initialize within {} ms", timeout.as_millis())]
    InitializeTimeout {
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

    /// Sets [`McpServerSpec::dir`].
    pub fn dir(mut self, value: impl Into<std::path::PathBuf>) -> Self {
        self.dir = Some(value.into());
        self
    }
}
