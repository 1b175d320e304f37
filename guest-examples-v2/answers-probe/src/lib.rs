//! `answers-probe`: a plugin of contract 0.2.0 written against the raw bindings (not the
//! SDK, which decides "unchanged" by itself), so the host's tests choose what it answers.
//!
//! `init` declares a dynamic section `s`, context `c`, variable `v` and tool provider `t`.
//! Its config (a plain string) is the mode:
//! - `changes-every-3rd` (default): call 1 answers `value 1`; call n answers `value n` when n
//!   is a multiple of 3 and "unchanged" otherwise (counted per entry);
//! - `unchanged-first`: every call answers "unchanged", even the first;
//! - `wait-for-cancel`: the section loops until `control.cancelled()` says the caller
//!   cancelled, logs `saw the cancellation` and fails;
//! - `keep`: call n answers `value n` and asks the host to keep the answer until the context
//!   changes (`control.keep-until-context-changes`); every call logs `call <entry> <n>`, and
//!   the section traps when the context has the fact `trap`.

wit_bindgen::generate!({
    world: "prompt-host:plugin/plugin@0.2.0",
    path: ["../../wit/0.1.0", "../../wit/0.2.0"],
    generate_all,
});

use std::cell::RefCell;
use std::collections::HashMap;

use exports::prompt_host::plugin0_2_0::contributor::{Guest, TextAnswer, ToolsAnswer, ValueAnswer};
use prompt_host::plugin0_1_0::assembly::Assembly;
use prompt_host::plugin0_1_0::log::{log, Level};
use prompt_host::plugin0_1_0::registry;
use prompt_host::plugin0_1_0::types::{AssembleContext, PluginError, ToolSchema, ToolSet};
use prompt_host::plugin0_2_0::control;

thread_local! {
    static MODE: RefCell<String> = const { RefCell::new(String::new()) };
    static CALLS: RefCell<HashMap<&'static str, u32>> = RefCell::new(HashMap::new());
    /// Whether the context last sent (the host sends it only when it changed) has `trap`.
    static TRAP: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Note what a call's context says, if the host sent one.
fn saw(cx: &Option<AssembleContext>) {
    if let Some(cx) = cx {
        TRAP.with(|t| t.set(cx.facts.iter().any(|(k, _)| k == "trap")));
    }
}

/// `Some(n)` to answer `value n`, `None` for "unchanged", for this call of `entry`.
fn next(entry: &'static str) -> Option<u32> {
    let n = CALLS.with(|c| {
        let mut c = c.borrow_mut();
        let n = c.entry(entry).or_insert(0);
        *n += 1;
        *n
    });
    match MODE.with(|m| m.borrow().clone()).as_str() {
        "unchanged-first" => None,
        "keep" => {
            log(Level::Info, &format!("call {entry} {n}"));
            control::keep_until_context_changes();
            Some(n)
        }
        _ if n == 1 || n.is_multiple_of(3) => Some(n),
        _ => None,
    }
}

fn failed(what: &str) -> PluginError {
    PluginError::Failed(what.to_string())
}

struct Probe;

impl Guest for Probe {
    fn init(config: String) -> Result<(), PluginError> {
        let mode = config.trim().trim_matches('"').to_string();
        let mode = if mode == "{}" { String::new() } else { mode };
        MODE.with(|m| *m.borrow_mut() = mode);
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
            .map_err(|_| failed("tools refused"))
    }

    fn section_text(_name: String, cx: Option<AssembleContext>) -> Result<TextAnswer, PluginError> {
        saw(&cx);
        if TRAP.with(|t| t.get()) && MODE.with(|m| m.borrow().as_str() == "keep") {
            panic!("trap requested by the context");
        }
        if MODE.with(|m| m.borrow().as_str() == "wait-for-cancel") {
            while !control::cancelled() {
                std::hint::spin_loop();
            }
            log(Level::Warn, "saw the cancellation");
            return Err(failed("stopped: the caller cancelled"));
        }
        Ok(match next("s") {
            Some(n) => TextAnswer::Text(format!("section value {n}")),
            None => TextAnswer::Unchanged,
        })
    }

    fn context_text(_name: String, cx: Option<AssembleContext>) -> Result<TextAnswer, PluginError> {
        saw(&cx);
        Ok(match next("c") {
            Some(n) => TextAnswer::Text(format!("context value {n}")),
            None => TextAnswer::Unchanged,
        })
    }

    fn variable(_name: String, cx: Option<AssembleContext>) -> Result<ValueAnswer, PluginError> {
        saw(&cx);
        Ok(match next("v") {
            Some(n) => ValueAnswer::Value(Some(format!("variable value {n}"))),
            None => ValueAnswer::Unchanged,
        })
    }

    fn tools(_key: String, cx: Option<AssembleContext>) -> Result<ToolsAnswer, PluginError> {
        saw(&cx);
        Ok(match next("t") {
            Some(n) => ToolsAnswer::Tools(ToolSet {
                schemas: vec![ToolSchema {
                    name: format!("tool_{n}"),
                    description: format!("tool value {n}"),
                    parameters: "{\"type\":\"object\"}".into(),
                }],
                known_names: None,
            }),
            None => ToolsAnswer::Unchanged,
        })
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
