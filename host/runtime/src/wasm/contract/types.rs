//! The vocabulary of the contract that every version shares: which world and version a
//! component is ([`detect`]), a dynamic entry's [`Answer`], the `assembly` handle, and what
//! `publish` receives.

use wasmtime::component::Component;
use wasmtime::Engine;

use super::super::error::WasmError;

/// Which world a component implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum World {
    /// `plugin`.
    Plugin,
    /// `instruction-provider`.
    InstructionProvider,
}

/// The version of the plugin contract a component was built against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[non_exhaustive]
pub enum WitVersion {
    /// `prompt-host:plugin@0.1.0`.
    #[serde(rename = "0.1.0")]
    V0_1_0,
    /// `prompt-host:plugin@0.2.0`: dynamic answers may be "unchanged"; `control` import.
    #[serde(rename = "0.2.0")]
    V0_2_0,
    /// `prompt-host:plugin@0.3.0`: 0.2.0 and the `freshness` import (an answer reused for a
    /// time the plugin names).
    #[serde(rename = "0.3.0")]
    V0_3_0,
}

impl WitVersion {
    /// Every version this host implements, oldest first.
    pub const ALL: [WitVersion; 3] = [Self::V0_1_0, Self::V0_2_0, Self::V0_3_0];

    /// The version of a `prompt-host:plugin` name's `@…` suffix, if this host implements it.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "0.1.0" => Some(Self::V0_1_0),
            "0.2.0" => Some(Self::V0_2_0),
            "0.3.0" => Some(Self::V0_3_0),
            _ => None,
        }
    }

    /// `0.1.0`, `0.2.0` or `0.3.0`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V0_1_0 => "0.1.0",
            Self::V0_2_0 => "0.2.0",
            Self::V0_3_0 => "0.3.0",
        }
    }
}

impl std::fmt::Display for WitVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the `assembly` resource handle designates in the store's table. The assembly itself
/// lives in the store data for the duration of one `on-assemble` call; the handle only
/// proves the guest was given it.
pub struct AssemblyHandle {
    _private: (),
}

impl AssemblyHandle {
    pub(crate) fn new() -> Self {
        Self { _private: () }
    }
}

/// One MCP server's instructions and tools, as an instruction provider's `publish` receives
/// them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ServerInstructions {
    /// The server's name.
    pub name: String,
    /// Its `instructions`.
    pub instructions: String,
    /// Its tools.
    pub tools: Vec<ServerTool>,
    /// Its skills index (handed only to a provider that exports `skills`, contract 0.3.0).
    pub skills: Vec<ServerSkill>,
}

/// One skill of an MCP server's index, as the `skills` export receives it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ServerSkill {
    /// The URI of its `SKILL.md`.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// Its description.
    pub description: String,
    /// The digest of its `SKILL.md`, or `dynamic`.
    pub digest: String,
    /// How many files it lists.
    pub files: u32,
    /// The bytes of all its files.
    pub size: u64,
}

impl ServerSkill {
    /// A skill of the index.
    pub fn new(
        uri: impl Into<String>,
        name: impl Into<String>,
        description: impl Into<String>,
        digest: impl Into<String>,
        files: u32,
        size: u64,
    ) -> Self {
        Self {
            uri: uri.into(),
            name: name.into(),
            description: description.into(),
            digest: digest.into(),
            files,
            size,
        }
    }
}

/// One tool of an MCP server.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ServerTool {
    /// The tool's name.
    pub name: String,
    /// Its description.
    pub description: String,
    /// Its input schema, as JSON text.
    pub input_schema: String,
}

impl ServerInstructions {
    /// A server's instructions and tools.
    pub fn new(
        name: impl Into<String>,
        instructions: impl Into<String>,
        tools: Vec<ServerTool>,
    ) -> Self {
        Self {
            name: name.into(),
            instructions: instructions.into(),
            tools,
            skills: Vec::new(),
        }
    }
}

impl ServerInstructions {
    /// The same, with `skills` as its skills index.
    pub fn with_skills(mut self, skills: Vec<ServerSkill>) -> Self {
        self.skills = skills;
        self
    }
}

impl ServerTool {
    /// A tool.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: impl Into<String>,
    ) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            input_schema: input_schema.into(),
        }
    }
}

/// The package every import and export of ours belongs to.
const PACKAGE: &str = "prompt-host:plugin/";

/// `name` without its `@version`, and the version.
fn split_version(name: &str) -> (&str, Option<&str>) {
    match name.rsplit_once('@') {
        Some((base, v)) => (base, Some(v)),
        None => (name, None),
    }
}

/// Which of our worlds `component` implements, and against which contract version, from
/// its import and export names: the version of its `contributor` export decides, except that
/// a `contributor@0.2.0` component importing `freshness@0.3.0` is a 0.3.0 one (0.3.0 adds an
/// import only); every `prompt-host:plugin` name must carry a version this host implements.
pub(crate) fn detect(
    plugin: &str,
    engine: &Engine,
    component: &Component,
) -> Result<(World, WitVersion), WasmError> {
    let ty = component.component_type();
    let imports: Vec<String> = ty.imports(engine).map(|(n, _)| n.to_string()).collect();
    let exports: Vec<String> = ty.exports(engine).map(|(n, _)| n.to_string()).collect();
    for name in imports.iter().chain(&exports) {
        if let (base, Some(v)) = split_version(name) {
            if base.starts_with(PACKAGE) && WitVersion::parse(v).is_none() {
                return Err(WasmError::WitVersion {
                    plugin: plugin.to_string(),
                    found: name.clone(),
                });
            }
        }
    }
    let contributor = exports.iter().find_map(|e| match split_version(e) {
        // 0.3.0 exports 0.2.0's `contributor`: there is no `contributor@0.3.0`.
        (base, Some(v)) if base == format!("{PACKAGE}contributor") => {
            WitVersion::parse(v).filter(|v| *v < WitVersion::V0_3_0)
        }
        _ => None,
    });
    let Some(version) = contributor else {
        return Err(WasmError::WrongWorld {
            plugin: plugin.to_string(),
            reason: format!(
                "it does not export {PACKAGE}contributor@0.1.0 or @0.2.0 (0.3.0 exports \
                 contributor@0.2.0; exports: {})",
                list(&exports)
            ),
        });
    };
    let freshness = format!("{PACKAGE}freshness@0.3.0");
    let version = if version == WitVersion::V0_2_0 && imports.contains(&freshness) {
        WitVersion::V0_3_0
    } else {
        version
    };
    let instructions = exports
        .iter()
        .any(|e| e == &format!("{PACKAGE}instructions@0.1.0"));
    Ok((
        if instructions {
            World::InstructionProvider
        } else {
            World::Plugin
        },
        version,
    ))
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

/// A dynamic entry's answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Answer<T> {
    /// The value for this assembly.
    Value(T),
    /// The same value as this instance's previous answer for the entry (0.2.0 only).
    Unchanged,
}

impl<T> Answer<T> {
    /// Bytes the answer hands to the host, by `size` of a value.
    pub(crate) fn bytes(&self, size: impl FnOnce(&T) -> usize) -> usize {
        match self {
            Self::Value(v) => size(v),
            Self::Unchanged => 0,
        }
    }
}
