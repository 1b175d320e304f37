//! Declarations: what a plugin declares while the host runs its `init` (or `publish`), where
//! they go, and how dynamic entries get their providers.
//!
//! The registry imports (`imports/registry.rs`) turn each WIT declaration into a core
//! [`prompt::Registration`](crate::prompt::Registration) and hand it to the [`Registration`]
//! window the running call opened. A dynamic entry needs a provider that calls back into
//! this plugin; the imports ask the plugin's [`EntryFactory`] for it (the supervisor
//! implements it), so the import side never names the supervisor or the providers.

use std::sync::Arc;

use crate::prompt::{AssembleListener, Fiber, TextProvider, ToolProvider, VariableProvider};
use crate::prompt::{EntryKind, RegisterError};

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

/// Which text export a dynamic text entry calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TextKind {
    /// `section-text`.
    Section,
    /// `context-text`.
    Context,
}

impl TextKind {
    /// The export this kind of text calls.
    pub(crate) fn export(self) -> &'static str {
        match self {
            TextKind::Section => "section-text",
            TextKind::Context => "context-text",
        }
    }
}

/// Builds the providers of a plugin's dynamic entries: each calls back into that plugin.
pub(crate) trait EntryFactory: Send + Sync {
    /// A dynamic section or context text.
    fn text(self: Arc<Self>, kind: TextKind, name: &str) -> Arc<dyn TextProvider>;
    /// A dynamic variable.
    fn variable(self: Arc<Self>, name: &str) -> Arc<dyn VariableProvider>;
    /// A dynamic tool provider.
    fn tools(self: Arc<Self>, key: &str) -> Arc<dyn ToolProvider>;
    /// An assembly listener.
    fn listener(self: Arc<Self>, key: &str) -> Arc<dyn AssembleListener>;
}

/// Whether declarations are accepted, and where they go: the window a call into the plugin
/// opens (`Instance::with_registration`) and closes.
#[derive(Default)]
pub(crate) enum Registration {
    /// Outside `init`/`publish`: every declaration fails with `closed`.
    #[default]
    Closed,
    /// During `init`: straight into the plugin's fiber.
    Direct {
        fiber: Arc<Fiber>,
        declared: Vec<Declaration>,
        listener: bool,
    },
    /// During `publish`, a reload's `init` and `check`: kept, committed after the call.
    Buffered {
        entries: Vec<crate::prompt::Registration>,
        declared: Vec<Declaration>,
        names: Vec<(EntryKind, String)>,
        listener: bool,
        scoped: bool,
        /// A declaration was refused as a duplicate by this window, where a window straight
        /// into the registry would have asked the registry (whose answer may differ).
        refused_duplicate: bool,
    },
    /// Re-running `init` on a fresh instance after a trap: the first run's declarations
    /// stand, this run's are accepted and discarded.
    Shadow,
}

/// Why a declaration was not accepted.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// No window is open.
    Closed,
    /// `max_declarations` reached.
    Limit(usize),
    /// A second listener.
    SecondListener,
    /// The registry (or, buffered, the generation) refused it.
    Register(RegisterError),
}

impl Registration {
    /// A buffered window (for `publish`, a reload and `check`).
    pub(crate) fn buffered(scoped: bool) -> Self {
        Self::Buffered {
            entries: Vec::new(),
            declared: Vec::new(),
            names: Vec::new(),
            listener: false,
            scoped,
            refused_duplicate: false,
        }
    }

    /// A window straight into `fiber`.
    pub(crate) fn direct(fiber: Arc<Fiber>) -> Self {
        Self::Direct {
            fiber,
            declared: Vec::new(),
            listener: false,
        }
    }

    /// Whether declarations are accepted now.
    pub(crate) fn is_open(&self) -> bool {
        !matches!(self, Self::Closed)
    }

    /// What was declared through this window.
    pub(crate) fn declared(&self) -> &[Declaration] {
        match self {
            Self::Direct { declared, .. } | Self::Buffered { declared, .. } => declared,
            _ => &[],
        }
    }

    /// Record that a listener is declared; refused if one was already.
    pub(crate) fn claim_listener(&mut self) -> Result<(), Refusal> {
        let already = match self {
            Self::Direct { listener, .. } | Self::Buffered { listener, .. } => {
                std::mem::replace(listener, true)
            }
            _ => false,
        };
        if already {
            Err(Refusal::SecondListener)
        } else {
            Ok(())
        }
    }

    /// Accept one declaration of `kind` (named `name`, for the duplicate check of a buffered
    /// generation): registered now (`Direct`), kept (`Buffered`) or discarded (`Shadow`).
    /// `max` is the plugin's `max_declarations`.
    pub(crate) fn accept(
        &mut self,
        kind: EntryKind,
        name: Option<&str>,
        entry: crate::prompt::Registration,
        info: Declaration,
        max: usize,
    ) -> Result<(), Refusal> {
        if self.declared().len() >= max {
            return Err(Refusal::Limit(max));
        }
        match self {
            Self::Closed => Err(Refusal::Closed),
            Self::Shadow => Ok(()),
            Self::Direct {
                fiber, declared, ..
            } => {
                fiber.register(entry).map_err(Refusal::Register)?;
                declared.push(info);
                Ok(())
            }
            Self::Buffered {
                entries,
                declared,
                names,
                scoped,
                refused_duplicate,
                ..
            } => {
                if let Some(name) = name {
                    if names.iter().any(|(k, n)| *k == kind && n == name) {
                        *refused_duplicate = true;
                        return Err(Refusal::Register(RegisterError::Duplicate {
                            kind,
                            name: name.to_string(),
                            scoped: *scoped,
                        }));
                    }
                    names.push((kind, name.to_string()));
                }
                entries.push(entry);
                declared.push(info);
                Ok(())
            }
        }
    }
}
