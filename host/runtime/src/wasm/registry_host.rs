//! The `registry` and `log` imports: what a plugin declares during `init` (straight into its
//! fiber) or `publish` (buffered as one generation), and its log lines.

use std::sync::Arc;

use super::bindings::plugin::prompt_host::plugin::{log as wit_log, registry as wit, types};
use super::convert;
use super::plugin::PluginCell;
use super::providers::{TextKind, WasmListener, WasmText, WasmTools, WasmVariable};
use super::state::HostState;
use super::validate;
use crate::prompt::errors::{EntryKind, RegisterError};
use crate::prompt::{
    AssembleListener, Fiber, ListenerOptions, SectionDef, TextSource, ToolSource, VariableProvider,
};

/// One declaration as a core registration, providers already built.
#[derive(Clone)]
pub(crate) enum Decl {
    Section(SectionDef),
    Context(SectionDef),
    Variable(String, Arc<dyn VariableProvider>),
    Tools(ToolSource),
    Suppressor,
    Listener(Arc<dyn AssembleListener>, ListenerOptions),
}

impl Decl {
    /// The registry's form of this declaration (for committing a whole `init` at once).
    pub(crate) fn into_registration(self) -> crate::prompt::registry::Registration {
        use crate::prompt::registry::Registration as R;
        match self {
            Decl::Section(def) => R::Section(def),
            Decl::Context(def) => R::Context(def),
            Decl::Variable(name, p) => R::Variable(name, p),
            Decl::Tools(source) => R::Tools(source),
            Decl::Suppressor => R::Suppressor,
            Decl::Listener(l, opts) => R::Listener(l, opts),
        }
    }

    /// Register this declaration through `fiber` (the one place a plugin's declaration
    /// becomes a registry entry, during `init` and when a `publish` generation commits).
    pub(crate) fn register(self, fiber: &Fiber) -> Result<(), RegisterError> {
        match self {
            Decl::Section(def) => fiber.section(def).map(drop),
            Decl::Context(def) => fiber.context(def).map(drop),
            Decl::Variable(name, p) => fiber.variable(&name, p).map(drop),
            Decl::Tools(source) => {
                fiber.tools(source);
                Ok(())
            }
            Decl::Suppressor => {
                fiber.suppress_runtime_context();
                Ok(())
            }
            Decl::Listener(l, opts) => {
                fiber.listener(l, opts);
                Ok(())
            }
        }
    }
}

/// What a plugin declared, for reports (`check`, `inspect`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Declaration {
    /// A section.
    Section {
        /// Name.
        name: String,
        /// Order.
        order: f64,
        /// Whether the plugin computes it per assembly.
        dynamic: bool,
        /// Bytes of the fixed text (0 when dynamic).
        bytes: usize,
        /// Marked complete.
        complete: bool,
    },
    /// A runtime context.
    Context {
        /// Name.
        name: String,
        /// Order.
        order: f64,
        /// Whether the plugin computes it per assembly.
        dynamic: bool,
        /// Bytes of the fixed text (0 when dynamic).
        bytes: usize,
    },
    /// A variable.
    Variable {
        /// Name.
        name: String,
        /// Whether the plugin computes it per assembly.
        dynamic: bool,
    },
    /// A tool provider.
    Tools {
        /// The key of a dynamic provider; `None` for a fixed set.
        dynamic_key: Option<String>,
        /// The names of a fixed set.
        names: Vec<String>,
        /// Bytes of the fixed set's schemas.
        bytes: usize,
    },
    /// A runtime-context suppressor.
    Suppressor,
    /// An assembly listener.
    Listener {
        /// Its key.
        key: String,
        /// Runs before listeners registered without it.
        prepend: bool,
        /// Receives every assembly.
        global: bool,
    },
}

/// Whether declarations are accepted, and where they go.
pub(crate) enum Registration {
    /// Outside `init`/`publish`: every declaration fails with `closed`.
    Closed,
    /// During `init`: straight into the plugin's fiber.
    Direct {
        fiber: Arc<Fiber>,
        declared: Vec<Declaration>,
        listener: bool,
    },
    /// During `publish` (and `check`): kept as one generation, committed after the call.
    Buffered {
        decls: Vec<Decl>,
        declared: Vec<Declaration>,
        names: Vec<(EntryKind, String)>,
        listener: bool,
        scoped: bool,
    },
    /// Re-running `init` on a fresh instance after a trap: the first run's declarations
    /// stand, this run's are accepted and discarded.
    Shadow,
}

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

fn is_variable_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b'a'..=b'z'))
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

impl HostState {
    fn cell(&self) -> Option<Arc<PluginCell>> {
        self.cell.upgrade()
    }

    /// Commit one declaration according to the current registration mode.
    fn commit(
        &mut self,
        kind: EntryKind,
        name: Option<&str>,
        decl: Decl,
        info: Declaration,
    ) -> RegResult {
        let count = match &self.registration {
            Registration::Direct { declared, .. } | Registration::Buffered { declared, .. } => {
                declared.len()
            }
            _ => 0,
        };
        if count >= self.limits.max_declarations {
            return invalid(format!(
                "declaration limit of {} reached",
                self.limits.max_declarations
            ));
        }
        match &mut self.registration {
            Registration::Closed => closed(),
            Registration::Shadow => Ok(Ok(())),
            Registration::Direct {
                fiber, declared, ..
            } => {
                let result = decl.register(fiber);
                match result {
                    Ok(()) => {
                        declared.push(info);
                        Ok(Ok(()))
                    }
                    Err(e) => Ok(Err(register_error(e))),
                }
            }
            Registration::Buffered {
                decls,
                declared,
                names,
                scoped,
                ..
            } => {
                if let Some(name) = name {
                    if names.iter().any(|(k, n)| *k == kind && n == name) {
                        return Ok(Err(register_error(RegisterError::Duplicate {
                            kind,
                            name: name.to_string(),
                            scoped: *scoped,
                        })));
                    }
                    names.push((kind, name.to_string()));
                }
                decls.push(decl);
                declared.push(info);
                Ok(Ok(()))
            }
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
            wit::TextSource::Dynamic => match self.cell() {
                Some(cell) => (
                    TextSource::Dynamic(Arc::new(WasmText::new(cell, kind, name))),
                    true,
                    0,
                ),
                None => return Ok(Err("plugin instance is gone".into())),
            },
        }))
    }

    fn open(&self) -> bool {
        !matches!(self.registration, Registration::Closed)
    }
}

impl wit::Host for HostState {
    fn declare_section(&mut self, s: wit::Section) -> RegResult {
        if !self.open() {
            return closed();
        }
        self.charge(s.name.len(), "section name")?;
        if let Err(e) = validate::declared_name("section", &s.name) {
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
        self.commit(EntryKind::Section, Some(&s.name), Decl::Section(def), info)
    }

    fn declare_context(&mut self, c: wit::Context) -> RegResult {
        if !self.open() {
            return closed();
        }
        self.charge(c.name.len(), "context name")?;
        if let Err(e) = validate::declared_name("context", &c.name) {
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
        self.commit(EntryKind::Context, Some(&c.name), Decl::Context(def), info)
    }

    fn declare_variable(&mut self, name: String, source: wit::VariableSource) -> RegResult {
        if !self.open() {
            return closed();
        }
        self.charge(name.len(), "variable name")?;
        if !is_variable_name(&name) {
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
            wit::VariableSource::Dynamic => match self.cell() {
                Some(cell) => (Arc::new(WasmVariable::new(cell, &name)), true),
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
            Decl::Variable(name.clone(), provider),
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
                if let Err(e) = validate::declared_name("tool provider key", &key) {
                    return invalid(e);
                }
                let Some(cell) = self.cell() else {
                    return invalid("plugin instance is gone");
                };
                (
                    ToolSource::Dynamic(Arc::new(WasmTools::new(cell, &key))),
                    Declaration::Tools {
                        dynamic_key: Some(key),
                        names: Vec::new(),
                        bytes: 0,
                    },
                )
            }
        };
        self.commit(EntryKind::ToolProvider, None, Decl::Tools(source), info)
    }

    fn suppress_runtime_context(&mut self) -> RegResult {
        self.commit(
            EntryKind::Suppressor,
            None,
            Decl::Suppressor,
            Declaration::Suppressor,
        )
    }

    fn declare_listener(&mut self, key: String, options: wit::ListenerOptions) -> RegResult {
        if !self.open() {
            return closed();
        }
        self.charge(key.len(), "listener key")?;
        if let Err(e) = validate::declared_name("listener key", &key) {
            return invalid(e);
        }
        let already = match &mut self.registration {
            Registration::Direct { listener, .. } | Registration::Buffered { listener, .. } => {
                std::mem::replace(listener, true)
            }
            _ => false,
        };
        if already {
            return invalid("a plugin may declare at most one listener");
        }
        let Some(cell) = self.cell() else {
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
        let listener: Arc<dyn AssembleListener> = Arc::new(WasmListener::new(cell, &key));
        self.commit(
            EntryKind::Listener,
            None,
            Decl::Listener(listener, opts),
            info,
        )
    }
}

impl wit_log::Host for HostState {
    fn log(&mut self, level: wit_log::Level, message: String) -> wasmtime::Result<()> {
        let keep = match self.stdout.lock() {
            Ok(mut out) => {
                let room = out.cap.saturating_sub(out.kept);
                if message.len() <= room {
                    out.kept += message.len();
                    true
                } else {
                    out.dropped += message.len();
                    // The next flush reports the drop.
                    self.output_written
                        .store(true, std::sync::atomic::Ordering::Release);
                    false
                }
            }
            Err(_) => false,
        };
        if keep {
            let level = match level {
                wit_log::Level::Trace => log::Level::Trace,
                wit_log::Level::Debug => log::Level::Debug,
                wit_log::Level::Info => log::Level::Info,
                wit_log::Level::Warn => log::Level::Warn,
                wit_log::Level::Error => log::Level::Error,
            };
            let stream = match level {
                log::Level::Trace => "trace",
                log::Level::Debug => "debug",
                log::Level::Info => "info",
                log::Level::Warn => "warn",
                log::Level::Error => "error",
            };
            self.emit(stream, level, &message);
        }
        Ok(())
    }
}

impl types::Host for HostState {}
