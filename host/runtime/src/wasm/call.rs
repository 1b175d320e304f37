//! Calling one export of a loaded plugin directly, outside any assembly: what
//! `prompt-host call` runs to try a plugin (its `init` has already run when it was loaded).

use serde_json::{json, Value};

use super::declare::{EntryFactory, TextKind};
use super::plugin::LoadedPlugin;
use crate::prompt::{AssembleContext, Assembly, Next, ProviderError};

/// An export `call` can run after `init`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Export {
    /// `section-text NAME`.
    SectionText,
    /// `context-text NAME`.
    ContextText,
    /// `variable NAME`.
    Variable,
    /// `tools KEY`.
    Tools,
    /// `on-assemble KEY` (a listener on a given assembly).
    OnAssemble,
}

impl Export {
    /// The export of a WIT name, if `call` can run it.
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "section-text" => Self::SectionText,
            "context-text" => Self::ContextText,
            "variable" => Self::Variable,
            "tools" => Self::Tools,
            "on-assemble" => Self::OnAssemble,
            _ => return None,
        })
    }
}

impl LoadedPlugin {
    /// Call `export` for entry `name` with `ctx` (a listener works on `assembly`, and the
    /// rest of its chain is empty). The result as JSON: the text, the value (`null` = no
    /// value), the tools, or the assembly after the listener.
    pub fn call(
        &self,
        export: Export,
        name: &str,
        ctx: &AssembleContext,
        mut assembly: Assembly,
    ) -> Result<Value, ProviderError> {
        // The same providers an assembly would use for these entries.
        let cell = self.cell().clone();
        Ok(match export {
            Export::SectionText => json!(cell.text(TextKind::Section, name).text(ctx)?),
            Export::ContextText => json!(cell.text(TextKind::Context, name).text(ctx)?),
            Export::Variable => json!(cell.variable(name).value(ctx)?),
            Export::Tools => {
                let set = cell.tools(name).tools(ctx)?;
                json!({"tools": set.schemas, "known_names": set.known_names})
            }
            Export::OnAssemble => {
                cell.listener(name)
                    .on_assemble(&mut assembly, ctx, &mut Next::done())?;
                assembly.to_json()
            }
        })
    }
}
