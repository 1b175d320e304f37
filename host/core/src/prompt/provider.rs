//! The provider traits every contributor implements: Wasm plugins through the runtime's
//! `wasm` module, embedders through native closures. Providers are synchronous: a Wasm call
//! is synchronous under a wall-clock deadline, and the async `assemble` runs the whole pass
//! off the async executor.
//!
//! A closure of the right shape is a provider:
//!
//! ```
//! use std::sync::Arc;
//! use prompt_host_core::prompt::{
//!     render_prompt, AssembleContext, ListenerOptions, NamedText, PromptConfig, Registry,
//!     SectionDef, TextSource,
//! };
//!
//! let registry = Registry::new(PromptConfig::default().include_harness_identity(false))?;
//! let fiber = registry.fiber("native", None);
//! // A section computed per assembly, from a caller fact.
//! fiber.section(SectionDef::new(
//!     "greeting",
//!     10.0,
//!     TextSource::dynamic(|ctx: &AssembleContext| {
//!         Ok(format!("Hello from {{{{where}}}} on {}.", ctx.fact("model").unwrap_or("?")))
//!     }),
//! ))?;
//! // A variable provider.
//! let place = |_: &AssembleContext| Ok(Some("the host".to_string()));
//! fiber.variable("where", Arc::new(place))?;
//! // A waterfall listener: adds a section, then lets inner listeners run.
//! let listener = |a: &mut prompt_host_core::prompt::Assembly,
//!                 _: &AssembleContext,
//!                 next: &mut prompt_host_core::prompt::Next| {
//!     a.sections.push(NamedText::new("footer", "Be brief."));
//!     next.run(a)
//! };
//! fiber.listener(Arc::new(listener), ListenerOptions::default());
//!
//! let assembly = registry.assemble_blocking(None, AssembleContext::with_facts([("model", "m1")]))?;
//! assert_eq!(render_prompt(&assembly)?, "Hello from the host on m1.\n\nBe brief.");
//! // Disposing the fiber removes all it registered.
//! fiber.dispose();
//! let assembly = registry.assemble_blocking(None, AssembleContext::default())?;
//! assert_eq!(render_prompt(&assembly)?, "");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::sync::Arc;

use super::assembly::{Assembly, ToolSchema};
use super::context::AssembleContext;
use super::error::{ProviderError, ProviderErrorKind};

/// A dynamic section or context text: called once per assembly that uses it.
pub trait TextProvider: Send + Sync {
    /// The text for this assembly (not yet interpolated).
    fn text(&self, ctx: &AssembleContext) -> Result<String, ProviderError>;
}

/// Dynamic section text (alias kept for readability at call sites).
pub use TextProvider as SectionText;
/// Dynamic context text (alias kept for readability at call sites).
pub use TextProvider as ContextText;

impl<F> TextProvider for F
where
    F: Fn(&AssembleContext) -> Result<String, ProviderError> + Send + Sync,
{
    fn text(&self, ctx: &AssembleContext) -> Result<String, ProviderError> {
        self(ctx)
    }
}

/// Where a section's or context's text comes from. Static text is data: an assembly never
/// crosses into a plugin for it.
#[derive(Clone)]
pub enum TextSource {
    /// Fixed text, declared at registration.
    Static(Arc<str>),
    /// Computed per assembly.
    Dynamic(Arc<dyn TextProvider>),
}

impl TextSource {
    /// Fixed text.
    pub fn fixed(text: impl Into<Arc<str>>) -> Self {
        Self::Static(text.into())
    }

    /// Text computed by a closure.
    pub fn dynamic(
        f: impl Fn(&AssembleContext) -> Result<String, ProviderError> + Send + Sync + 'static,
    ) -> Self {
        Self::Dynamic(Arc::new(f))
    }

    /// Resolve the text for one assembly.
    pub fn resolve(&self, ctx: &AssembleContext) -> Result<String, ProviderError> {
        match self {
            Self::Static(text) => Ok(text.to_string()),
            Self::Dynamic(provider) => provider.text(ctx),
        }
    }

    /// Whether resolving calls a provider.
    pub fn is_dynamic(&self) -> bool {
        matches!(self, Self::Dynamic(_))
    }
}

impl std::fmt::Debug for TextSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Static(text) => f.debug_tuple("Static").field(text).finish(),
            Self::Dynamic(_) => f.write_str("Dynamic(..)"),
        }
    }
}

/// A variable's value per assembly. `Ok(None)` = registered, no value for this assembly.
pub trait VariableProvider: Send + Sync {
    /// The value for this assembly.
    fn value(&self, ctx: &AssembleContext) -> Result<Option<String>, ProviderError>;
}

impl<F> VariableProvider for F
where
    F: Fn(&AssembleContext) -> Result<Option<String>, ProviderError> + Send + Sync,
{
    fn value(&self, ctx: &AssembleContext) -> Result<Option<String>, ProviderError> {
        self(ctx)
    }
}

/// What a tool provider returns for one assembly.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolSet {
    /// The tools visible in this assembly (after any restriction).
    pub schemas: Vec<ToolSchema>,
    /// The name universe before restriction, used only to validate `tool_order`; `None`
    /// means "the names in `schemas`".
    pub known_names: Option<Vec<String>>,
}

/// A tool provider called once per assembly.
pub trait ToolProvider: Send + Sync {
    /// The tools for this assembly.
    fn tools(&self, ctx: &AssembleContext) -> Result<ToolSet, ProviderError>;

    /// The key the provider was declared under (a plugin's dynamic tool provider key), so
    /// that its failure names the entry; `None` for an anonymous provider.
    fn key(&self) -> Option<&str> {
        None
    }
}

impl<F> ToolProvider for F
where
    F: Fn(&AssembleContext) -> Result<ToolSet, ProviderError> + Send + Sync,
{
    fn tools(&self, ctx: &AssembleContext) -> Result<ToolSet, ProviderError> {
        self(ctx)
    }
}

/// Where a tool registration's schemas come from. Static sets are declared once and cost
/// no plugin call per assembly.
#[derive(Clone)]
pub enum ToolSource {
    /// Schemas fixed at registration.
    Static(Arc<ToolSet>),
    /// Schemas computed per assembly.
    Dynamic(Arc<dyn ToolProvider>),
}

impl ToolSource {
    /// Resolve the set for one assembly.
    pub fn resolve(&self, ctx: &AssembleContext) -> Result<ToolSet, ProviderError> {
        match self {
            Self::Static(set) => Ok(ToolSet::clone(set)),
            Self::Dynamic(provider) => provider.tools(ctx),
        }
    }

    /// The dynamic provider's key ([`ToolProvider::key`]); a static set has none (it
    /// cannot fail).
    pub fn key(&self) -> Option<&str> {
        match self {
            Self::Static(_) => None,
            Self::Dynamic(provider) => provider.key(),
        }
    }
}

impl std::fmt::Debug for ToolSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Static(set) => f.debug_tuple("Static").field(set).finish(),
            Self::Dynamic(_) => f.write_str("Dynamic(..)"),
        }
    }
}

/// The continuation a waterfall listener calls to run the rest of the chain.
///
/// The chain works on one assembly in place: inner listeners see what outer listeners did
/// before calling `run`, and after `run` returns the assembly holds the inner chain's result
/// (an inner listener may have replaced it wholesale). Not calling `run` short-circuits.
/// `run` may be called once; an error of the inner chain is also kept by the waterfall, so a
/// listener cannot swallow another plugin's failure.
pub struct Next {
    run: Option<Continuation>,
}

/// The rest of the chain, run at most once.
type Continuation = Box<dyn FnOnce(&mut Assembly) -> Result<(), ProviderError> + Send>;

impl Next {
    /// A continuation that runs `f` on the assembly.
    pub fn new(
        f: impl FnOnce(&mut Assembly) -> Result<(), ProviderError> + Send + 'static,
    ) -> Self {
        Self {
            run: Some(Box::new(f)),
        }
    }

    /// A continuation that does nothing (the innermost one).
    pub fn done() -> Self {
        Self::new(|_| Ok(()))
    }

    /// Run the rest of the chain on `assembly`.
    pub fn run(&mut self, assembly: &mut Assembly) -> Result<(), ProviderError> {
        match self.run.take() {
            Some(f) => f(assembly),
            None => Err(ProviderError::new(
                ProviderErrorKind::InvalidInput,
                "next() may be called only once per on-assemble call",
            )),
        }
    }

    /// Whether `run` was called.
    pub fn was_called(&self) -> bool {
        self.run.is_none()
    }
}

impl std::fmt::Debug for Next {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Next")
            .field("called", &self.was_called())
            .finish()
    }
}

/// A waterfall listener on assembly: reads and changes the assembly, and calls
/// `next.run` to let inner listeners run.
pub trait AssembleListener: Send + Sync {
    /// Handle one assembly.
    fn on_assemble(
        &self,
        assembly: &mut Assembly,
        ctx: &AssembleContext,
        next: &mut Next,
    ) -> Result<(), ProviderError>;

    /// The key the listener was declared under (a plugin's listener key), so that its
    /// failure names the entry; `None` for an anonymous listener.
    fn key(&self) -> Option<&str> {
        None
    }
}

impl<F> AssembleListener for F
where
    F: Fn(&mut Assembly, &AssembleContext, &mut Next) -> Result<(), ProviderError> + Send + Sync,
{
    fn on_assemble(
        &self,
        assembly: &mut Assembly,
        ctx: &AssembleContext,
        next: &mut Next,
    ) -> Result<(), ProviderError> {
        self(assembly, ctx, next)
    }
}
