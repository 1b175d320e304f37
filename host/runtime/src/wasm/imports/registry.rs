//! The `registry` import: what a plugin declares during `init` (straight into its fiber) or
//! `publish` (buffered as one generation), through the window the running call opened.

use std::sync::Arc;

use super::super::contract::wit::registry as wit;
use super::super::convert;
use super::super::declare::{Declaration, EntryFactory, Refusal, TextKind};
use super::super::names::declared_name;
use super::super::store::StoreData;
use crate::prompt::{
    AssembleListener, ListenerOptions, Registration, SectionDef, TextSource, ToolSource,
    VariableProvider,
};
use crate::prompt::{EntryKind, RegisterError};

type RegResult = wasmtime::Result<Result<(), wit::RegistryError>>;

fn invalid(msg: impl Into<String>) -> RegResult {
    Ok(Err(wit::RegistryError::Invalid(msg.into())))
}

fn closed() -> RegResult {
    Ok(Err(wit::RegistryError::Closed(
        "declarations are accepted only while the host runs init (or publish)".into(),
    )))
}

fn register_error(e: RegisterError) -> wit::RegistryError {
    match e {
        RegisterError::Duplicate { .. } => wit::RegistryError::Duplicate(e.to_string()),
        other => wit::RegistryError::Invalid(other.to_string()),
    }
}

/// The WIT answer to a refused declaration.
fn refused(refusal: Refusal) -> RegResult {
    match refusal {
        Refusal::Closed => closed(),
        Refusal::Limit(max) => invalid(format!("declaration limit of {max} reached")),
        Refusal::SecondListener => invalid("a plugin may declare at most one listener"),
        Refusal::Register(e) => Ok(Err(register_error(e))),
    }
}

impl StoreData {
    /// The plugin's entry factory (gone only once the plugin is).
    fn factory(&self) -> Option<Arc<dyn EntryFactory>> {
        self.factory.upgrade()
    }

    /// Hand one declaration to the open window.
    fn commit(
        &mut self,
        kind: EntryKind,
        name: Option<&str>,
        entry: Registration,
        info: Declaration,
    ) -> RegResult {
        let max = self.limits.max_declarations;
        match self.registration.accept(kind, name, entry, info, max) {
            Ok(()) => Ok(Ok(())),
            Err(refusal) => refused(refusal),
        }
    }

    fn text_source(
        &mut self,
        kind: TextKind,
        name: &str,
        text: wit::TextSource,
    ) -> wasmtime::Result<Result<(TextSource, bool, usize), String>> {
        Ok(Ok(match text {
            wit::TextSource::Fixed(s) => {
                self.charge(s.len(), "declared text")?;
                let n = s.len();
                (TextSource::Static(s.into()), false, n)
            }
            wit::TextSource::Dynamic => match self.factory() {
                Some(factory) => (TextSource::Dynamic(factory.text(kind, name)), true, 0),
                None => return Ok(Err("plugin instance is gone".into())),
            },
        }))
    }

    fn open(&self) -> bool {
        self.registration.is_open()
    }
}

impl wit::Host for StoreData {
    fn declare_section(&mut self, s: wit::Section) -> RegResult {
        if !self.open() {
            return closed();
        }
        self.charge(s.name.len(), "section name")?;
        if let Err(e) = declared_name("section", &s.name) {
            return invalid(e);
        }
        if !s.order.is_finite() {
            return Ok(Err(register_error(RegisterError::NonFiniteOrder {
                kind: EntryKind::Section,
                name: s.name,
            })));
        }
        let (text, dynamic, bytes) = match self.text_source(TextKind::Section, &s.name, s.text)? {
            Ok(t) => t,
            Err(e) => return invalid(e),
        };
        let info = Declaration::Section {
            name: s.name.clone(),
            order: s.order,
            dynamic,
            bytes,
            complete: s.complete,
        };
        let def = SectionDef {
            name: s.name.clone(),
            order: s.order,
            text,
            complete: s.complete,
        };
        self.commit(
            EntryKind::Section,
            Some(&s.name),
            Registration::Section(def),
            info,
        )
    }

    fn declare_context(&mut self, c: wit::Context) -> RegResult {
        if !self.open() {
            return closed();
        }
        self.charge(c.name.len(), "context name")?;
        if let Err(e) = declared_name("context", &c.name) {
            return invalid(e);
        }
        if !c.order.is_finite() {
            return Ok(Err(register_error(RegisterError::NonFiniteOrder {
                kind: EntryKind::Context,
                name: c.name,
            })));
        }
        let (text, dynamic, bytes) = match self.text_source(TextKind::Context, &c.name, c.text)? {
            Ok(t) => t,
            Err(e) => return invalid(e),
        };
        let info = Declaration::Context {
            name: c.name.clone(),
            order: c.order,
            dynamic,
            bytes,
        };
        let def = SectionDef {
            name: c.name.clone(),
            order: c.order,
            text,
            complete: false,
        };
        self.commit(
            EntryKind::Context,
            Some(&c.name),
            Registration::Context(def),
            info,
        )
    }

    fn declare_variable(&mut self, name: String, source: wit::VariableSource) -> RegResult {
        if !self.open() {
            return closed();
        }
        self.charge(name.len(), "variable name")?;
        if !crate::prompt::is_variable_name(&name) {
            return Ok(Err(register_error(RegisterError::InvalidVariableName(
                name,
            ))));
        }
        let (provider, dynamic): (Arc<dyn VariableProvider>, bool) = match source {
            wit::VariableSource::Fixed(value) => {
                self.charge(value.as_ref().map_or(0, String::len), "variable value")?;
                // Fixed values are host data: a native closure, no Wasm call per assembly.
                (
                    Arc::new(move |_: &crate::prompt::AssembleContext| Ok(value.clone())),
                    false,
                )
            }
            wit::VariableSource::Dynamic => match self.factory() {
                Some(factory) => (factory.variable(&name), true),
                None => return invalid("plugin instance is gone"),
            },
        };
        let info = Declaration::Variable {
            name: name.clone(),
            dynamic,
        };
        self.commit(
            EntryKind::Variable,
            Some(&name),
            Registration::Variable(name.clone(), provider),
            info,
        )
    }

    fn declare_tools(&mut self, source: wit::ToolSource) -> RegResult {
        if !self.open() {
            return closed();
        }
        let (source, info) = match source {
            wit::ToolSource::Fixed(set) => {
                let bytes = convert::tool_set_bytes(&set);
                self.charge(bytes, "declared tools")?;
                let names = set.schemas.iter().map(|s| s.name.clone()).collect();
                match convert::tool_set(set) {
                    Ok(set) => (
                        ToolSource::Static(Arc::new(set)),
                        Declaration::Tools {
                            dynamic_key: None,
                            names,
                            bytes,
                        },
                    ),
                    Err(e) => return invalid(e),
                }
            }
            wit::ToolSource::Dynamic(key) => {
                self.charge(key.len(), "tool provider key")?;
                if let Err(e) = declared_name("tool provider key", &key) {
                    return invalid(e);
                }
                let Some(factory) = self.factory() else {
                    return invalid("plugin instance is gone");
                };
                (
                    ToolSource::Dynamic(factory.tools(&key)),
                    Declaration::Tools {
                        dynamic_key: Some(key),
                        names: Vec::new(),
                        bytes: 0,
                    },
                )
            }
        };
        self.commit(
            EntryKind::ToolProvider,
            None,
            Registration::Tools(source),
            info,
        )
    }

    fn suppress_runtime_context(&mut self) -> RegResult {
        self.commit(
            EntryKind::Suppressor,
            None,
            Registration::Suppressor,
            Declaration::Suppressor,
        )
    }

    fn declare_listener(&mut self, key: String, options: wit::ListenerOptions) -> RegResult {
        if !self.open() {
            return closed();
        }
        self.charge(key.len(), "listener key")?;
        if let Err(e) = declared_name("listener key", &key) {
            return invalid(e);
        }
        if let Err(refusal) = self.registration.claim_listener() {
            return refused(refusal);
        }
        let Some(factory) = self.factory() else {
            return invalid("plugin instance is gone");
        };
        let opts = ListenerOptions {
            prepend: options.prepend,
            global: options.global,
        };
        let info = Declaration::Listener {
            key: key.clone(),
            prepend: opts.prepend,
            global: opts.global,
        };
        let listener: Arc<dyn AssembleListener> = factory.listener(&key);
        self.commit(
            EntryKind::Listener,
            None,
            Registration::Listener(listener, opts),
            info,
        )
    }
}
