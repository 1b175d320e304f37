//! The `assembly` resource a listener receives: the core's `Assembly`, moved into the store
//! data for the call (no copy), read and edited in place through the handle. `next()` moves
//! it out again, runs the rest of the chain through the core's `Next`, and puts it back. The
//! time spent in `next()` (inner listeners, each under its own deadline) is added to this
//! call's deadline, so an outer listener is charged only for its own work. The call around
//! it is `providers::run_listener`.

use std::time::Instant;

use wasmtime::component::Resource;

use super::super::contract::wit::assembly as wit;
use super::super::contract::wit::types::{NamedText, PluginError, ToolSchema};
use super::super::contract::AssemblyHandle;
use super::super::convert;
use super::super::names::declared_name;
use super::super::store::{ListenerFrame, StoreData};
use crate::prompt::{Assembly, Next};

impl StoreData {
    fn frame(&mut self, h: &Resource<AssemblyHandle>) -> wasmtime::Result<&mut ListenerFrame> {
        self.table.get(h)?;
        self.frame
            .as_mut()
            .ok_or_else(|| wasmtime::Error::msg("assembly handle used outside on-assemble"))
    }

    /// A whole replacement list of sections or contexts (`kind`), charged to the output
    /// budget and with every name checked, in the core's form.
    fn replacement(
        &mut self,
        kind: &str,
        texts: Vec<NamedText>,
    ) -> wasmtime::Result<Vec<crate::prompt::NamedText>> {
        let bytes = texts.iter().map(|t| t.name.len() + t.text.len()).sum();
        self.charge(bytes, "assembly edit")?;
        for text in &texts {
            edited_name(kind, &text.name)?;
        }
        Ok(texts.into_iter().map(convert::named_text).collect())
    }

    fn asm(&mut self, h: &Resource<AssemblyHandle>) -> wasmtime::Result<&mut Assembly> {
        Ok(&mut self.frame(h)?.assembly)
    }
}

fn remove_all(list: &mut Vec<crate::prompt::NamedText>, name: &str) -> u32 {
    let before = list.len();
    list.retain(|t| t.name != name);
    u32::try_from(before - list.len()).unwrap_or(u32::MAX)
}

/// The positions of the entries of `list` whose text contains `needle`.
fn find_in(list: &[crate::prompt::NamedText], needle: &str) -> Vec<u32> {
    list.iter()
        .enumerate()
        .filter(|(_, t)| t.text.contains(needle))
        // An assembly never holds 2^32 entries (`max_declarations` and the edit budget
        // bound it); saturate rather than wrap if one ever did.
        .map(|(i, _)| u32::try_from(i).unwrap_or(u32::MAX))
        .collect()
}

/// The entry of `list` at `index`, copied for the guest.
fn at(list: &[crate::prompt::NamedText], index: u32) -> Option<NamedText> {
    list.get(index as usize).map(convert::wit_named_text)
}

/// Replace the text of the entry at `index`; false if there is none.
fn set_text_at(list: &mut [crate::prompt::NamedText], index: u32, text: String) -> bool {
    match list.get_mut(index as usize) {
        Some(t) => {
            t.text = text;
            true
        }
        None => false,
    }
}

impl wit::HostAssembly for StoreData {
    fn section_names(&mut self, h: Resource<AssemblyHandle>) -> wasmtime::Result<Vec<String>> {
        Ok(self
            .asm(&h)?
            .sections
            .iter()
            .map(|s| s.name.clone())
            .collect())
    }

    fn section(
        &mut self,
        h: Resource<AssemblyHandle>,
        name: String,
    ) -> wasmtime::Result<Option<String>> {
        Ok(self
            .asm(&h)?
            .sections
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.text.clone()))
    }

    fn set_section(
        &mut self,
        h: Resource<AssemblyHandle>,
        name: String,
        text: String,
    ) -> wasmtime::Result<bool> {
        self.charge(text.len(), "assembly edit")?;
        Ok(
            match self.asm(&h)?.sections.iter_mut().find(|s| s.name == name) {
                Some(s) => {
                    s.text = text;
                    true
                }
                None => false,
            },
        )
    }

    fn insert_section(
        &mut self,
        h: Resource<AssemblyHandle>,
        index: u32,
        section: NamedText,
    ) -> wasmtime::Result<()> {
        self.charge(section.name.len() + section.text.len(), "assembly edit")?;
        edited_name("section", &section.name)?;
        let sections = &mut self.asm(&h)?.sections;
        let at = usize::try_from(index)
            .unwrap_or(usize::MAX)
            .min(sections.len());
        sections.insert(at, convert::named_text(section));
        Ok(())
    }

    fn push_section(
        &mut self,
        h: Resource<AssemblyHandle>,
        section: NamedText,
    ) -> wasmtime::Result<()> {
        self.charge(section.name.len() + section.text.len(), "assembly edit")?;
        edited_name("section", &section.name)?;
        self.asm(&h)?.sections.push(convert::named_text(section));
        Ok(())
    }

    fn remove_section(
        &mut self,
        h: Resource<AssemblyHandle>,
        name: String,
    ) -> wasmtime::Result<u32> {
        Ok(remove_all(&mut self.asm(&h)?.sections, &name))
    }

    fn sections(&mut self, h: Resource<AssemblyHandle>) -> wasmtime::Result<Vec<NamedText>> {
        Ok(self
            .asm(&h)?
            .sections
            .iter()
            .map(convert::wit_named_text)
            .collect())
    }

    fn set_sections(
        &mut self,
        h: Resource<AssemblyHandle>,
        sections: Vec<NamedText>,
    ) -> wasmtime::Result<()> {
        let sections = self.replacement("section", sections)?;
        self.asm(&h)?.sections = sections;
        Ok(())
    }

    fn find_sections(
        &mut self,
        h: Resource<AssemblyHandle>,
        needle: String,
    ) -> wasmtime::Result<Vec<u32>> {
        Ok(find_in(&self.asm(&h)?.sections, &needle))
    }

    fn section_at(
        &mut self,
        h: Resource<AssemblyHandle>,
        index: u32,
    ) -> wasmtime::Result<Option<NamedText>> {
        Ok(at(&self.asm(&h)?.sections, index))
    }

    fn set_section_text_at(
        &mut self,
        h: Resource<AssemblyHandle>,
        index: u32,
        text: String,
    ) -> wasmtime::Result<bool> {
        self.charge(text.len(), "assembly edit")?;
        Ok(set_text_at(&mut self.asm(&h)?.sections, index, text))
    }

    fn context_names(&mut self, h: Resource<AssemblyHandle>) -> wasmtime::Result<Vec<String>> {
        Ok(self
            .asm(&h)?
            .contexts
            .iter()
            .map(|s| s.name.clone())
            .collect())
    }

    fn context(
        &mut self,
        h: Resource<AssemblyHandle>,
        name: String,
    ) -> wasmtime::Result<Option<String>> {
        Ok(self
            .asm(&h)?
            .contexts
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.text.clone()))
    }

    fn set_context(
        &mut self,
        h: Resource<AssemblyHandle>,
        name: String,
        text: String,
    ) -> wasmtime::Result<bool> {
        self.charge(text.len(), "assembly edit")?;
        Ok(
            match self.asm(&h)?.contexts.iter_mut().find(|s| s.name == name) {
                Some(s) => {
                    s.text = text;
                    true
                }
                None => false,
            },
        )
    }

    fn push_context(
        &mut self,
        h: Resource<AssemblyHandle>,
        context: NamedText,
    ) -> wasmtime::Result<()> {
        self.charge(context.name.len() + context.text.len(), "assembly edit")?;
        edited_name("context", &context.name)?;
        self.asm(&h)?.contexts.push(convert::named_text(context));
        Ok(())
    }

    fn remove_context(
        &mut self,
        h: Resource<AssemblyHandle>,
        name: String,
    ) -> wasmtime::Result<u32> {
        Ok(remove_all(&mut self.asm(&h)?.contexts, &name))
    }

    fn contexts(&mut self, h: Resource<AssemblyHandle>) -> wasmtime::Result<Vec<NamedText>> {
        Ok(self
            .asm(&h)?
            .contexts
            .iter()
            .map(convert::wit_named_text)
            .collect())
    }

    fn set_contexts(
        &mut self,
        h: Resource<AssemblyHandle>,
        contexts: Vec<NamedText>,
    ) -> wasmtime::Result<()> {
        let contexts = self.replacement("context", contexts)?;
        self.asm(&h)?.contexts = contexts;
        Ok(())
    }

    fn find_contexts(
        &mut self,
        h: Resource<AssemblyHandle>,
        needle: String,
    ) -> wasmtime::Result<Vec<u32>> {
        Ok(find_in(&self.asm(&h)?.contexts, &needle))
    }

    fn context_at(
        &mut self,
        h: Resource<AssemblyHandle>,
        index: u32,
    ) -> wasmtime::Result<Option<NamedText>> {
        Ok(at(&self.asm(&h)?.contexts, index))
    }

    fn set_context_text_at(
        &mut self,
        h: Resource<AssemblyHandle>,
        index: u32,
        text: String,
    ) -> wasmtime::Result<bool> {
        self.charge(text.len(), "assembly edit")?;
        Ok(set_text_at(&mut self.asm(&h)?.contexts, index, text))
    }

    fn tool_names(&mut self, h: Resource<AssemblyHandle>) -> wasmtime::Result<Vec<String>> {
        Ok(self.asm(&h)?.tools.iter().map(|t| t.name.clone()).collect())
    }

    fn tool(
        &mut self,
        h: Resource<AssemblyHandle>,
        name: String,
    ) -> wasmtime::Result<Option<ToolSchema>> {
        Ok(self
            .asm(&h)?
            .tools
            .iter()
            .find(|t| t.name == name)
            .map(convert::wit_tool_schema))
    }

    fn push_tool(
        &mut self,
        h: Resource<AssemblyHandle>,
        tool: ToolSchema,
    ) -> wasmtime::Result<Result<(), PluginError>> {
        self.charge(
            tool.name.len() + tool.description.len() + tool.parameters.len(),
            "assembly edit",
        )?;
        match convert::tool_schema(tool) {
            Ok(tool) => {
                self.asm(&h)?.tools.push(tool);
                Ok(Ok(()))
            }
            Err(m) => Ok(Err(PluginError::InvalidInput(m))),
        }
    }

    fn remove_tool(&mut self, h: Resource<AssemblyHandle>, name: String) -> wasmtime::Result<u32> {
        let tools = &mut self.asm(&h)?.tools;
        let before = tools.len();
        tools.retain(|t| t.name != name);
        Ok(u32::try_from(before - tools.len()).unwrap_or(u32::MAX))
    }

    fn variables(
        &mut self,
        h: Resource<AssemblyHandle>,
    ) -> wasmtime::Result<Vec<(String, Option<String>)>> {
        Ok(self.asm(&h)?.variables.clone())
    }

    fn set_variable(
        &mut self,
        h: Resource<AssemblyHandle>,
        name: String,
        value: Option<String>,
    ) -> wasmtime::Result<()> {
        self.charge(
            name.len() + value.as_ref().map_or(0, String::len),
            "assembly edit",
        )?;
        self.asm(&h)?.set_variable(&name, value);
        Ok(())
    }

    fn clear(&mut self, h: Resource<AssemblyHandle>) -> wasmtime::Result<()> {
        *self.asm(&h)? = Assembly::default();
        Ok(())
    }

    fn next(&mut self, h: Resource<AssemblyHandle>) -> wasmtime::Result<Result<(), PluginError>> {
        let frame = self.frame(&h)?;
        if frame.next.was_called() {
            return Ok(Err(PluginError::InvalidInput(
                "next() may be called only once per on-assemble call".into(),
            )));
        }
        let mut assembly = std::mem::take(&mut frame.assembly);
        let mut next = std::mem::replace(&mut frame.next, Next::done());
        let started = Instant::now();
        let result = next.run(&mut assembly);
        // Inner listeners ran under their own deadlines; do not charge their time here.
        let spent = started.elapsed();
        self.call.deadline = self.call.deadline.map(|d| d + spent);
        let frame = self.frame(&h)?;
        frame.next = next;
        if frame.snapshot_after_next {
            frame.after_next = Some(Box::new(assembly.clone()));
        }
        frame.assembly = assembly;
        Ok(match result {
            Ok(()) => Ok(()),
            Err(e) => {
                let message = e.message.clone();
                frame.inner_error = Some(e);
                Err(PluginError::Failed(message))
            }
        })
    }

    fn drop(&mut self, rep: Resource<AssemblyHandle>) -> wasmtime::Result<()> {
        // Only host-owned handles exist; a guest never owns one. Deleting twice is harmless.
        let _ = self.table.delete(rep);
        Ok(())
    }
}

impl wit::Host for StoreData {}

/// A name a listener puts into the assembly obeys the same rule as a declared one. These
/// methods have no error result in the contract, so a refused name traps the call, which
/// fails the assembly naming the plugin.
fn edited_name(what: &str, name: &str) -> wasmtime::Result<()> {
    declared_name(what, name).map_err(wasmtime::Error::msg)
}
