//! The result of every method, as the server writes it. Each borrows what the host returned,
//! so writing a result copies nothing first.

use schemars::JsonSchema;
use serde::{Serialize, Serializer};

use prompt_host::mcp::{InstructionsCut, McpState, McpStatus};
use prompt_host::policy::Grants;
use prompt_host::prompt::{Assembly, NamedText, TimingReport, ToolSchema};
use prompt_host::session::ModelRequest;
use prompt_host::tokens::TokenReport;

/// `describe`: who answers, and what it speaks.
#[derive(Serialize, JsonSchema)]
pub struct Described {
    /// Always `prompt-host`.
    #[schemars(extend("const" = "prompt-host"))]
    pub name: &'static str,
    /// The server's version.
    pub version: &'static str,
    /// The protocol's version.
    pub protocol: &'static str,
    /// Every method.
    pub methods: &'static [&'static str],
    /// Every notification a client can subscribe to.
    pub notifications: &'static [&'static str],
}

/// The result of a method that answers nothing more than that it is done.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "Done")]
pub struct Done {}

/// `load_plugin`: the id the plugin got, and for an `oci://` reference the digests it was
/// loaded at.
#[derive(Serialize, JsonSchema)]
pub struct Loaded {
    /// The plugin's id.
    pub id: u64,
    /// For an oci:// reference: the manifest digest the plugin was loaded at.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^sha256:[0-9a-f]{64}$"))]
    pub manifest: Option<String>,
    /// For an oci:// reference: the digest of the component compiled.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^sha256:[0-9a-f]{64}$"))]
    pub component: Option<String>,
}

/// `reload_plugin`: the plugin and how many declarations its new code made.
#[derive(Serialize, JsonSchema)]
pub struct Reloaded {
    /// The plugin's id.
    pub id: u64,
    /// What its new code's `init` declared.
    pub declarations: usize,
}

/// `dispose_plugin`: whether there was such a plugin.
#[derive(Serialize, JsonSchema)]
pub struct Disposed {
    /// False when no plugin had the id.
    pub disposed: bool,
}

/// One entry of `plugins`.
#[derive(Serialize, JsonSchema)]
pub struct PluginEntry<'a> {
    /// The plugin's id.
    pub id: u64,
    /// Its name.
    pub name: &'a str,
    /// The scope it was loaded into; null = global.
    pub scope: Option<&'a str>,
    /// What it was granted beyond its sandbox.
    pub grants: &'a Grants,
}

/// `assemble`: what the scope's layers hold, before rendering.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "Assembly")]
pub struct AssemblyView<'a> {
    /// Sections in render order.
    pub sections: &'a [NamedText],
    /// Runtime contexts in render order (empty under suppression).
    pub contexts: &'a [NamedText],
    /// Tools in canonical order.
    pub tools: &'a [ToolSchema],
    /// Every visible variable and its value (null: registered without one), in
    /// first-insertion order.
    pub variables: Variables<'a>,
}

impl<'a> AssemblyView<'a> {
    /// The view of `assembly`.
    pub fn of(assembly: &'a Assembly) -> Self {
        Self {
            sections: &assembly.sections,
            contexts: &assembly.contexts,
            tools: &assembly.tools,
            variables: Variables(&assembly.variables),
        }
    }
}

/// Variables written as one object, in their order.
pub struct Variables<'a>(&'a [(String, Option<String>)]);

impl Serialize for Variables<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}

impl JsonSchema for Variables<'_> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Variables".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "object",
            "additionalProperties": { "type": ["string", "null"] }
        })
    }
}

/// `render`: the prompt and the runtime context, with what was asked besides.
#[derive(Serialize, JsonSchema)]
pub struct RenderResult<'a> {
    /// The system prompt.
    pub prompt: &'a str,
    /// The runtime-context snapshot.
    pub context: &'a str,
    /// Its token counts (`tokens` in the params).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens: Option<TokenReport>,
    /// Where its time went (`timings` in the params).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timings: Option<TimingReport>,
    /// The MCP servers the scope sees whose instructions were cut (absent when none was).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mcp_cuts: Vec<InstructionsCut>,
}

/// `append_assistant` and `append_tool_result`: the seq of the event written.
#[derive(Serialize, JsonSchema)]
pub struct Appended {
    /// The event's seq in the log.
    pub seq: u64,
}

/// `request`: a step's request, derived again from the log.
#[derive(Serialize, JsonSchema)]
pub struct Replayed<'a> {
    /// The step.
    pub step: u64,
    /// Its request, as it was sent.
    pub request: &'a ModelRequest,
}

/// `close_session`: whether the server held the log open.
#[derive(Serialize, JsonSchema)]
pub struct Closed {
    /// False when it was not open.
    pub closed: bool,
}

/// An MCP server's state.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum McpStateName {
    /// Not connected yet.
    Starting,
    /// Connected; its instructions and tools are published.
    Up,
    /// Disconnected; retried.
    Down,
}

impl From<McpState> for McpStateName {
    fn from(state: McpState) -> Self {
        match state {
            McpState::Starting => Self::Starting,
            McpState::Up => Self::Up,
            McpState::Down => Self::Down,
        }
    }
}

/// How an MCP server is reached.
#[derive(JsonSchema)]
#[schemars(rename_all = "lowercase")]
pub enum Transport {
    /// A child process, over stdio.
    Stdio,
    /// Streamable HTTP.
    Http,
}

/// The lifecycle an MCP connection used.
#[derive(JsonSchema)]
#[schemars(rename_all = "lowercase")]
pub enum Lifecycle {
    /// `server/discover` (2026-07-28).
    Discover,
    /// `initialize`.
    Initialize,
}

/// One MCP server's status (`mcp_status`, the `mcp/status` notification).
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "McpStatus")]
pub struct McpStatusView<'a> {
    /// The server's id.
    pub id: u64,
    /// Its name.
    pub server: &'a str,
    /// The scope it feeds; null = global.
    pub scope: Option<&'a str>,
    /// The provider plugin it feeds.
    pub plugin: &'a str,
    /// Its state.
    pub state: McpStateName,
    /// Generations received.
    pub generations: u64,
    /// Generations published.
    pub published: u64,
    /// Generations refused.
    pub rejected: u64,
    /// Failed connections.
    pub failures: u64,
    /// The generation the scope sees; null before the first.
    pub live_generation: Option<u64>,
    /// The newest failure.
    pub last_error: Option<&'a str>,
    /// How the live generation's instructions were cut, if they were.
    pub instructions_cut: Option<&'a InstructionsCut>,
    /// How the server is reached: over stdio or over Streamable HTTP.
    #[schemars(with = "Transport")]
    pub transport: &'static str,
    /// The lifecycle the last connection used: server/discover (2026-07-28) or initialize;
    /// null before a connection was made.
    #[schemars(with = "Option<Lifecycle>")]
    pub lifecycle: Option<&'static str>,
    /// The protocol revision the last connection agreed; null before a connection was made.
    pub protocol_version: Option<&'a str>,
    /// What the server injects: whether its instructions are on (`[[mcp]] instructions`), and
    /// the text the live generation handed to the provider plugin (after any cut, with its
    /// note) with its size in bytes.
    pub instructions: InstructionsView<'a>,
    /// The live generation's skills index (the MCP Skills extension), in server order:
    /// what the provider plugin was handed. Empty when the server offers no skills.
    pub skills: Vec<SkillEntryView<'a>>,
}

/// One skill of an MCP server's index.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "McpSkillEntry")]
pub struct SkillEntryView<'a> {
    /// Its name (what `mcp_skill` asks for).
    pub name: &'a str,
    /// The URI of its `SKILL.md`.
    pub uri: &'a str,
    /// Its description, as the server gave it.
    pub description: &'a str,
    /// The digest of its `SKILL.md` (`sha256:…`), or `dynamic`.
    pub digest: &'a str,
    /// How many files it lists (0 for a dynamic skill).
    pub files: usize,
    /// The bytes of all its files (0 for a dynamic skill).
    pub size: u64,
}

impl<'a> SkillEntryView<'a> {
    /// The view of one index entry.
    pub fn of(skill: &'a prompt_host::mcp::McpSkill) -> Self {
        Self {
            name: &skill.name,
            uri: &skill.uri,
            description: &skill.description,
            digest: skill.digest(),
            files: skill.file_count(),
            size: skill.total_size(),
        }
    }
}

/// A skill's body (`mcp_skill`): its `SKILL.md`, read from the server and checked.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "McpSkillBody")]
pub struct SkillBodyView<'a> {
    /// The server's name.
    pub server: &'a str,
    /// The skill as the live index lists it.
    pub skill: SkillEntryView<'a>,
    /// The text of its `SKILL.md`.
    pub text: &'a str,
    /// The digest of the bytes read (`sha256:…`).
    pub digest: &'a str,
    /// Whether the bytes were checked against the index's digest (false for a dynamic
    /// skill, which has none; its frontmatter's name is checked all the same).
    pub verified: bool,
}

/// What an MCP server injects.
#[derive(Serialize, JsonSchema)]
pub struct InstructionsView<'a> {
    /// Whether its instructions are on.
    pub enabled: bool,
    /// The text's size in bytes.
    pub bytes: usize,
    /// The text.
    pub text: &'a str,
}

impl<'a> McpStatusView<'a> {
    /// The view of server `id`'s `status`.
    pub fn of(id: u64, status: &'a McpStatus) -> Self {
        Self {
            id,
            server: &status.server,
            scope: status.scope.as_deref(),
            plugin: &status.plugin,
            state: status.state.into(),
            generations: status.generations,
            published: status.published,
            rejected: status.rejected,
            failures: status.failures,
            live_generation: status.live_generation,
            last_error: status.last_error.as_deref(),
            instructions_cut: status.instructions_cut.as_ref(),
            transport: status.transport,
            lifecycle: status.lifecycle.map(|l| l.as_str()),
            protocol_version: status.protocol_version.as_deref(),
            instructions: InstructionsView {
                enabled: status.instructions_enabled,
                bytes: status.instructions.len(),
                text: &status.instructions,
            },
            skills: status.skills.iter().map(SkillEntryView::of).collect(),
        }
    }
}
