//! The traits a plugin implements, and the glue that connects them to the generated exports.

use std::any::Any;
use std::cell::RefCell;
use std::marker::PhantomData;

use crate::bindings::api::{contributor, instructions};
use crate::{AssembleContext, Assembly, Entry, Error, McpServer, ToolSet, Version};

/// A prompt contributor. Implement `init` and whichever callbacks match what `init` declared
/// as dynamic; the defaults refuse with `invalid-input`, because the host only calls a
/// callback for an entry the plugin declared dynamic.
///
/// One value of the implementing type lives per instance: `init` builds it from the config,
/// and every later call gets it mutably. The host never calls one instance concurrently or
/// re-entrantly, so `&mut self` is sound without locks.
pub trait Plugin: Sized + 'static {
    /// Read the config (host.toml's `config` table as JSON, `{}` when absent), declare
    /// entries through [`crate::declare`], and return the instance state.
    fn init(config: serde_json::Value) -> Result<Self, Error>;

    /// The text of the dynamic section `name` for this assembly.
    fn section_text(&mut self, name: &str, context: &AssembleContext) -> Result<String, Error> {
        let _ = context;
        Err(Error::not_dynamic("section", name))
    }

    /// The text of the dynamic runtime context `name` for this assembly.
    fn context_text(&mut self, name: &str, context: &AssembleContext) -> Result<String, Error> {
        let _ = context;
        Err(Error::not_dynamic("context", name))
    }

    /// The value of the dynamic variable `name`; `None` = no value for this assembly.
    fn variable(&mut self, name: &str, context: &AssembleContext) -> Result<Option<String>, Error> {
        let _ = context;
        Err(Error::not_dynamic("variable", name))
    }

    /// The tools of the dynamic tool provider `key` for this assembly.
    fn tools(&mut self, key: &str, context: &AssembleContext) -> Result<ToolSet, Error> {
        let _ = context;
        Err(Error::not_dynamic("tool provider", key))
    }

    /// The version of dynamic `entry`'s value (contract 0.2.0). While it equals the version
    /// of the previous answer for `entry`, the SDK answers "unchanged" without calling the
    /// entry's method: nothing is computed, compared or copied. [`Version::Context`] says the
    /// value changes only with the context, and the host then stops calling at all until the
    /// context changes; [`Version::Number`] is a number the plugin changes whenever the value
    /// may change. `None` (the default): the entry's method runs on every call and its result
    /// is compared with the previous answer; an equal one is still sent as "unchanged".
    /// Contract 0.1.0 (feature `wit-0-1`) never calls it.
    fn version(&mut self, entry: Entry<'_>, context: &AssembleContext) -> Option<Version> {
        let _ = (entry, context);
        None
    }

    /// Handle one assembly as listener `key`. Call `assembly.next()` to run the inner
    /// listeners; returning without calling it short-circuits the chain.
    fn on_assemble(
        &mut self,
        key: &str,
        assembly: &Assembly,
        context: &AssembleContext,
    ) -> Result<(), Error> {
        let _ = (assembly, context);
        Err(Error::not_dynamic("listener", key))
    }
}

/// A plugin that also publishes what an MCP server said (the `instruction-provider` world).
/// Export it with [`crate::export_instruction_provider!`].
pub trait InstructionProvider: Plugin {
    /// Publish one generation of `server`'s contributions by declaring sections and tools.
    /// Everything declared during a successful call replaces the previous generation; an
    /// error keeps the previous one.
    fn publish(&mut self, server: McpServer) -> Result<(), Error>;

    /// The skills index of `server` for the generation the next [`publish`] is about
    /// (the `skills` export of contract 0.3.0; only for a provider exported with
    /// [`crate::export_skills_provider!`]). Keep it for that `publish`; an error refuses the
    /// generation. The default ignores it.
    ///
    /// [`publish`]: InstructionProvider::publish
    fn receive_skills(&mut self, server: &str, skills: Vec<crate::McpSkill>) -> Result<(), Error> {
        let _ = (server, skills);
        Ok(())
    }
}

thread_local! {
    /// The instance state built by `init`. Type-erased because a `static` cannot be generic;
    /// there is exactly one plugin type per component, so the downcast always succeeds.
    static STATE: RefCell<Option<Box<dyn Any>>> = const { RefCell::new(None) };
}

thread_local! {
    /// The context the host sent last: it sends `none` while the context is unchanged (see
    /// `contributor.wit`).
    static CONTEXT: RefCell<Option<AssembleContext>> = const { RefCell::new(None) };
}

/// Run `f` with this call's context: `sent`, kept for later calls, or else the kept one.
fn with_context<R>(
    sent: Option<AssembleContext>,
    f: impl FnOnce(&AssembleContext) -> Result<R, Error>,
) -> Result<R, Error> {
    CONTEXT.with(|cell| {
        let Ok(mut kept) = cell.try_borrow_mut() else {
            return Err(Error::failed("plugin called re-entrantly"));
        };
        if let Some(context) = sent {
            *kept = Some(context);
            crate::versions::new_context();
        }
        match kept.as_ref() {
            Some(context) => f(context),
            None => Err(Error::invalid_input(
                "the host sent no assemble-context and none was kept",
            )),
        }
    })
}

/// Run `f` on the instance state of type `T`, turning "no state" and re-entrance into errors
/// instead of panics (a panic would trap and poison the instance).
fn with_state<T: Plugin, R>(f: impl FnOnce(&mut T) -> Result<R, Error>) -> Result<R, Error> {
    STATE.with(|cell| {
        let Ok(mut slot) = cell.try_borrow_mut() else {
            return Err(Error::failed("plugin called re-entrantly"));
        };
        match slot.as_mut().and_then(|state| state.downcast_mut::<T>()) {
            Some(state) => f(state),
            None => Err(Error::failed(
                "plugin is not initialised (init failed or was never called)",
            )),
        }
    })
}

/// The type the export macros hand to wit-bindgen: it implements the generated `Guest`
/// traits for any [`Plugin`], so plugin crates never see them. Not for direct use.
#[doc(hidden)]
pub struct Export<T>(PhantomData<T>);

fn init_state<T: Plugin>(config: &str) -> Result<(), Error> {
    let config = crate::config::parse_text(config)?;
    let state = T::init(config)?;
    STATE.with(|cell| match cell.try_borrow_mut() {
        Ok(mut slot) => {
            *slot = Some(Box::new(state));
            Ok(())
        }
        Err(_) => Err(Error::failed("plugin called re-entrantly")),
    })
}

#[cfg(feature = "wit-0-1")]
fn section<T: Plugin>(name: &str, context: Option<AssembleContext>) -> Result<String, Error> {
    with_context(context, |cx| {
        with_state(|p: &mut T| p.section_text(name, cx))
    })
}

#[cfg(feature = "wit-0-1")]
fn context_text<T: Plugin>(name: &str, context: Option<AssembleContext>) -> Result<String, Error> {
    with_context(context, |cx| {
        with_state(|p: &mut T| p.context_text(name, cx))
    })
}

#[cfg(feature = "wit-0-1")]
fn variable<T: Plugin>(
    name: &str,
    context: Option<AssembleContext>,
) -> Result<Option<String>, Error> {
    with_context(context, |cx| with_state(|p: &mut T| p.variable(name, cx)))
}

#[cfg(feature = "wit-0-1")]
fn tools<T: Plugin>(key: &str, context: Option<AssembleContext>) -> Result<ToolSet, Error> {
    with_context(context, |cx| with_state(|p: &mut T| p.tools(key, cx)))
}

fn on_assemble<T: Plugin>(
    key: &str,
    assembly: &Assembly,
    context: Option<AssembleContext>,
) -> Result<(), Error> {
    with_context(context, |cx| {
        with_state(|p: &mut T| p.on_assemble(key, assembly, cx))
    })
}

#[cfg(feature = "wit-0-1")]
impl<T: Plugin> contributor::Guest for Export<T> {
    fn init(config: String) -> Result<(), Error> {
        init_state::<T>(&config)
    }

    fn section_text(name: String, context: Option<AssembleContext>) -> Result<String, Error> {
        section::<T>(&name, context)
    }

    fn context_text(name: String, context: Option<AssembleContext>) -> Result<String, Error> {
        context_text::<T>(&name, context)
    }

    fn variable(name: String, context: Option<AssembleContext>) -> Result<Option<String>, Error> {
        variable::<T>(&name, context)
    }

    fn tools(key: String, context: Option<AssembleContext>) -> Result<ToolSet, Error> {
        tools::<T>(&key, context)
    }

    fn on_assemble(
        key: String,
        assembly: &Assembly,
        context: Option<AssembleContext>,
    ) -> Result<(), Error> {
        on_assemble::<T>(&key, assembly, context)
    }
}

/// Contract 0.2.0: an answer is "unchanged" when the plugin's [`Plugin::version`] of the
/// entry matches the previous answer's, or else when the computed value equals it; only a new
/// value is copied to the host.
#[cfg(not(feature = "wit-0-1"))]
mod v0_2 {
    use super::*;
    use crate::answers::{self, Same, Slot};
    use contributor::{TextAnswer, ToolsAnswer, ValueAnswer};

    /// Ask the plugin for `entry`'s version, then answer through `slot`.
    fn answer<T: Plugin, V: Same + Clone>(
        slot: Slot<V>,
        entry: Entry<'_>,
        context: Option<AssembleContext>,
        compute: impl FnOnce(&mut T, &AssembleContext) -> Result<V, Error>,
    ) -> Result<Option<V>, Error> {
        with_context(context, |cx| {
            let version = with_state(|p: &mut T| Ok(p.version(entry, cx)))?;
            let number = version.map(|v| match v {
                Version::Context => crate::versions::context_version(),
                Version::Number(n) => n,
            });
            let answer = answers::answer(slot, entry.name(), number, || {
                with_state(|p: &mut T| compute(p, cx))
            })?;
            if version == Some(Version::Context) {
                crate::bindings::api::control::keep_until_context_changes();
            }
            Ok(answer)
        })
    }

    fn text(answer: Option<String>) -> TextAnswer {
        answer.map_or(TextAnswer::Unchanged, TextAnswer::Text)
    }

    impl<T: Plugin> contributor::Guest for Export<T> {
        fn init(config: String) -> Result<(), Error> {
            answers::forget();
            init_state::<T>(&config)
        }

        fn section_text(
            name: String,
            context: Option<AssembleContext>,
        ) -> Result<TextAnswer, Error> {
            answer::<T, _>(
                answers::SECTIONS,
                Entry::Section(&name),
                context,
                |p, cx| p.section_text(&name, cx),
            )
            .map(text)
        }

        fn context_text(
            name: String,
            context: Option<AssembleContext>,
        ) -> Result<TextAnswer, Error> {
            answer::<T, _>(
                answers::CONTEXTS,
                Entry::Context(&name),
                context,
                |p, cx| p.context_text(&name, cx),
            )
            .map(text)
        }

        fn variable(name: String, context: Option<AssembleContext>) -> Result<ValueAnswer, Error> {
            answer::<T, _>(
                answers::VARIABLES,
                Entry::Variable(&name),
                context,
                |p, cx| p.variable(&name, cx),
            )
            .map(|a| a.map_or(ValueAnswer::Unchanged, ValueAnswer::Value))
        }

        fn tools(key: String, context: Option<AssembleContext>) -> Result<ToolsAnswer, Error> {
            answer::<T, _>(answers::TOOLS, Entry::Tools(&key), context, |p, cx| {
                p.tools(&key, cx)
            })
            .map(|a| a.map_or(ToolsAnswer::Unchanged, ToolsAnswer::Tools))
        }

        fn on_assemble(
            key: String,
            assembly: &Assembly,
            context: Option<AssembleContext>,
        ) -> Result<(), Error> {
            on_assemble::<T>(&key, assembly, context)
        }
    }
}

impl<T: InstructionProvider> instructions::Guest for Export<T> {
    fn publish(server: McpServer) -> Result<(), Error> {
        with_state(|p: &mut T| p.publish(server))
    }
}

impl<T: InstructionProvider> crate::bindings::api::skills::Guest for Export<T> {
    fn receive_skills(server: String, skills: Vec<crate::McpSkill>) -> Result<(), Error> {
        with_state(|p: &mut T| p.receive_skills(&server, skills))
    }
}
