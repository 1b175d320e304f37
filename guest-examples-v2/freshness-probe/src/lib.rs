//! `freshness-probe`: a plugin of contract 0.3.0 written against the raw bindings, so the
//! host's tests choose how long it asks the host to keep its answers.
//!
//! `init` declares a dynamic section `s`, context `c`, variable `v` and tool provider `t`.
//! Its config (a plain string) is `MILLISECONDS` or `MILLISECONDS context`: call n of an
//! entry answers `… value n`, logs `call <entry> <n>` and asks the host to keep the answer
//! for that long (`freshness.keep-for`) — and, with `context`, only while the context stays
//! the same (`control.keep-until-context-changes` as well).

wit_bindgen::generate!({
    world: "prompt-host:plugin/plugin@0.3.0",
    path: ["../../wit/0.1.0", "../../wit/0.2.0", "../../wit/0.3.0"],
    generate_all,
});

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use exports::prompt_host::plugin0_2_0::contributor::{Guest, TextAnswer, ToolsAnswer, ValueAnswer};
use prompt_host::plugin0_1_0::assembly::Assembly;
use prompt_host::plugin0_1_0::log::{log, Level};
use prompt_host::plugin0_1_0::registry;
use prompt_host::plugin0_1_0::types::{AssembleContext, PluginError, ToolSchema, ToolSet};
use prompt_host::plugin0_2_0::control;
use prompt_host::plugin0_3_0::freshness;

thread_local! {
    /// How long to ask the host to keep an answer, in nanoseconds.
    static KEEP_NS: Cell<u64> = const { Cell::new(0) };
    /// Whether to ask for the context to stay the same as well.
    static WITH_CONTEXT: Cell<bool> = const { Cell::new(false) };
    static CALLS: RefCell<HashMap<&'static str, u32>> = RefCell::new(HashMap::new());
}

/// Count this call of `entry`, log it, ask the host to keep the answer; returns n.
fn next(entry: &'static str) -> u32 {
    let n = CALLS.with(|c| {
        let mut c = c.borrow_mut();
        let n = c.entry(entry).or_insert(0);
        *n += 1;
        *n
    });
    log(Level::Info, &format!("call {entry} {n}"));
    freshness::keep_for(KEEP_NS.with(Cell::get));
    if WITH_CONTEXT.with(Cell::get) {
        control::keep_until_context_changes();
    }
    n
}

fn failed(what: &str) -> PluginError {
    PluginError::Failed(what.to_string())
}

struct Probe;

impl Guest for Probe {
    fn init(config: String) -> Result<(), PluginError> {
        let config = config.trim().trim_matches('"').to_string();
        let mut words = config.split_whitespace();
        let millis: u64 = words
            .next()
            .and_then(|w| w.parse().ok())
            .ok_or_else(|| PluginError::InvalidInput(format!("config: {config:?}")))?;
        KEEP_NS.with(|k| k.set(millis.saturating_mul(1_000_000)));
        WITH_CONTEXT.with(|w| w.set(words.next() == Some("context")));
        let dynamic = registry::TextSource::Dynamic;
        registry::declare_section(&registry::Section {
            name: "s".into(),
            order: 1.0,
            text: dynamic.clone(),
            complete: false,
        })
        .map_err(|_| failed("section refused"))?;
        registry::declare_context(&registry::Context {
            name: "c".into(),
            order: 1.0,
            text: dynamic,
        })
        .map_err(|_| failed("context refused"))?;
        registry::declare_variable("v", &registry::VariableSource::Dynamic)
            .map_err(|_| failed("variable refused"))?;
        registry::declare_tools(&registry::ToolSource::Dynamic("t".into()))
            .map_err(|_| failed("tools refused"))?;
        // Outside an answering call `keep-for` has no effect: calling it here must not keep
        // anything.
        freshness::keep_for(u64::MAX);
        Ok(())
    }

    fn section_text(
        _name: String,
        _cx: Option<AssembleContext>,
    ) -> Result<TextAnswer, PluginError> {
        Ok(TextAnswer::Text(format!("section value {}", next("s"))))
    }

    fn context_text(
        _name: String,
        _cx: Option<AssembleContext>,
    ) -> Result<TextAnswer, PluginError> {
        Ok(TextAnswer::Text(format!("context value {}", next("c"))))
    }

    fn variable(_name: String, _cx: Option<AssembleContext>) -> Result<ValueAnswer, PluginError> {
        Ok(ValueAnswer::Value(Some(format!(
            "variable value {}",
            next("v")
        ))))
    }

    fn tools(_key: String, _cx: Option<AssembleContext>) -> Result<ToolsAnswer, PluginError> {
        let n = next("t");
        Ok(ToolsAnswer::Tools(ToolSet {
            schemas: vec![ToolSchema {
                name: format!("tool_{n}"),
                description: format!("tool value {n}"),
                parameters: "{\"type\":\"object\"}".into(),
            }],
            known_names: None,
        }))
    }

    fn on_assemble(
        _key: String,
        _assembly: &Assembly,
        _cx: Option<AssembleContext>,
    ) -> Result<(), PluginError> {
        Err(PluginError::InvalidInput("no listener here".into()))
    }
}

export!(Probe);
