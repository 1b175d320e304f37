//! What an [`super::McpBridge`] reports about its server: state, generation counts and the
//! last error, plus the errors of starting a bridge.

use thiserror::Error;

/// Where a bridged server stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum McpState {
    /// No generation and no failure yet: the server is starting, or `initialize` /
    /// `tools/list` is still within its timeout.
    Starting,
    /// The last event was a generation (published or rejected by the provider plugin).
    Up,
    /// The last event was a failure; the connection retries after its backoff delay and the
    /// last published generation stays in the prompt.
    Down,
}

/// A snapshot of one bridge: see the library's `Host::mcp_status`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct McpStatus {
    /// The server name.
    pub server: String,
    /// The scope its contributions land in (`None` = global).
    pub scope: Option<String>,
    /// The instruction-provider plugin's name (`mcp:<server>`).
    pub plugin: String,
    /// See [`McpState`].
    pub state: McpState,
    /// Generations the server produced (initial sync, re-lists, reconnects).
    pub generations: u64,
    /// Generations the provider plugin published successfully.
    pub published: u64,
    /// Generations the provider plugin refused (its `publish` failed; the previous
    /// generation stayed).
    pub rejected: u64,
    /// Connection failures (spawn, timeout, protocol error, exit).
    pub failures: u64,
    /// The server generation whose contributions are in the registry now, if any.
    pub live_generation: Option<u64>,
    /// The most recent error (a connection failure or a refused generation); a later
    /// success does not clear it, [`McpStatus::state`] says whether it is current.
    pub last_error: Option<String>,
    /// How the live generation's instructions were cut to the server's instruction budget;
    /// `None` when they fit (or no budget is set).
    pub instructions_cut: Option<super::InstructionsCut>,
    /// How the server is reached: `"stdio"` or `"http"`.
    pub transport: &'static str,
    /// The lifecycle the last connection used; `None` before one was made.
    pub lifecycle: Option<super::LifecycleUsed>,
    /// The protocol revision the last connection agreed; `None` before one was made.
    pub protocol_version: Option<String>,
    /// Whether the server's instructions reach the provider plugin (`[[mcp]]
    /// instructions`); off, only its tools do.
    pub instructions_enabled: bool,
    /// The instructions the live generation handed to the provider plugin (after any cut,
    /// with its note): what the server injects. `""` when off or when it sent none.
    pub instructions: String,
    /// The live generation's skills index (the Skills extension): what the provider plugin
    /// was handed, and what a skill's body is read and checked against. Empty when the
    /// server offers no skills.
    pub skills: Vec<super::McpSkill>,
}

impl McpStatus {
    /// The status of a bridge that has just started.
    pub fn starting(
        server: &str,
        scope: Option<&str>,
        plugin: &str,
        transport: &'static str,
        instructions_enabled: bool,
    ) -> Self {
        McpStatus {
            server: server.to_owned(),
            scope: scope.map(str::to_owned),
            plugin: plugin.to_owned(),
            state: McpState::Starting,
            generations: 0,
            published: 0,
            rejected: 0,
            failures: 0,
            live_generation: None,
            last_error: None,
            instructions_cut: None,
            transport,
            lifecycle: None,
            protocol_version: None,
            instructions_enabled,
            instructions: String::new(),
            skills: Vec::new(),
        }
    }

    /// Whether the first generation or failure has been handled (what
    /// `Host::wait_mcp_ready` waits for).
    pub fn settled(&self) -> bool {
        self.state != McpState::Starting
    }

    /// `server "<s>" (scope <k>)` / `(global)`, for messages.
    pub fn label(&self) -> String {
        label(&self.server, self.scope.as_deref())
    }
}

/// `MCP server "<s>" (scope <k>)` or `(global)`.
pub fn label(server: &str, scope: Option<&str>) -> String {
    match scope {
        Some(scope) => format!("MCP server \"{server}\" (scope {scope})"),
        None => format!("MCP server \"{server}\" (global)"),
    }
}

/// Why a bridge could not be started. Every message names the server and the scope.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum McpBridgeError {
    /// The server name does not match `^[A-Za-z0-9_-]{1,32}$`.
    #[error("{}: expected a server name matching ^[A-Za-z0-9_-]{{1,32}}$", label(.server, .scope.as_deref()))]
    InvalidName {
        /// The server name.
        server: String,
        /// The scope.
        scope: Option<String>,
    },
    /// Another live bridge uses the same server name (the public tool names would collide).
    #[error("mcp-client: serverName \"{server}\" is already in use by another mcp-client instance — pick a unique serverName in host.toml")]
    DuplicateName {
        /// The server name.
        server: String,
    },
    /// The plugin does not implement world `instruction-provider`.
    #[error("{}: plugin \"{plugin}\" does not implement world `instruction-provider` (no `publish` export)", label(.server, .scope.as_deref()))]
    NotAProvider {
        /// The server name.
        server: String,
        /// The scope.
        scope: Option<String>,
        /// The plugin.
        plugin: String,
    },
    /// A required server (`required = true`) has published nothing within its start wait:
    /// an assembly that sees it is refused rather than made without it.
    #[error("{} is required (required = true) and published nothing within {waited} of its start: {error}", label(.server, .scope.as_deref()))]
    NotReady {
        /// The server name.
        server: String,
        /// The scope.
        scope: Option<String>,
        /// The start wait, as `N ms`.
        waited: String,
        /// Its last error, or that it has not answered yet.
        error: String,
    },
    /// There is no Tokio runtime to run the connection on.
    #[error("{}: MCP connections need a Tokio runtime; create the host inside one (e.g. within `#[tokio::main]` or `Runtime::enter`)", label(.server, .scope.as_deref()))]
    NoRuntime {
        /// The server name.
        server: String,
        /// The scope.
        scope: Option<String>,
    },
}

/// Whether `name` is a valid server name (`^[A-Za-z0-9_-]{1,32}$`).
pub fn valid_server_name(name: &str) -> bool {
    (1..=32).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}
