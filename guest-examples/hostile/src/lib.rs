//! `hostile`: a plugin that misbehaves on purpose, for the sandbox tests. The config picks
//! one behaviour (`mode`) and where it happens (`in`); see README.md.
//!
//! Panics, `unwrap`s and endless loops are the point here.

mod abuse;
mod http;
mod probe;

use std::time::Duration;

use prompt_plugin::serde_json::Value;
use prompt_plugin::{
    declare, log, tool, AssembleContext, Assembly, Error, NamedText, Plugin, ToolSet,
};

/// Where the behaviour runs.
#[derive(Clone, Copy, PartialEq)]
enum Phase {
    Init,
    Section,
    Context,
    Variable,
    Tools,
    Listener,
}

/// Every mode, so a typo fails `init` instead of the first assembly.
const MODES: &[&str] = &[
    "ok",
    "loop",
    "memory",
    "recursion",
    "panic",
    "trap",
    "sleep",
    "handles",
    "log_spam",
    "stdout_spam",
    "huge_log",
    "huge_text",
    "probe_fs",
    "probe_env",
    "probe_net",
    "probe_stdin",
    "duplicate",
    "invalid",
    "many_sections",
    "declare_after_init",
    "next_twice",
    "odd_names",
    "poll_instant",
    "random",
    "amplify",
    "say",
    "read_file",
    "write_file",
    "list_dir",
    "read_then_trap",
    "deep_tool",
    "http_probe",
    "http_loop",
];

/// The name every dynamic entry of this plugin uses.
const NAME: &str = "hostile";

/// The variable `amplify` declares and references.
const AMPLIFIED: &str = "amp";

struct Hostile {
    mode: String,
    /// Where the behaviour runs; every other callback stays harmless.
    at: Phase,
    config: Value,
}

fn phase(text: &str) -> Result<Phase, Error> {
    Ok(match text {
        "init" => Phase::Init,
        "section" => Phase::Section,
        "context" => Phase::Context,
        "variable" => Phase::Variable,
        "tools" => Phase::Tools,
        "listener" => Phase::Listener,
        other => {
            return Err(Error::invalid_input(format!(
                "invalid config: in: unknown phase \"{other}\" \
                 (init, section, context, variable, tools, listener)"
            )))
        }
    })
}

/// The phase a mode runs in when the config does not say.
fn default_phase(mode: &str) -> Phase {
    match mode {
        "duplicate" | "invalid" | "many_sections" | "odd_names" => Phase::Init,
        "next_twice" => Phase::Listener,
        _ => Phase::Section,
    }
}

impl Hostile {
    fn text(&self, key: &str) -> &str {
        self.config.get(key).and_then(Value::as_str).unwrap_or("")
    }

    fn number(&self, key: &str, default: u64) -> u64 {
        self.config
            .get(key)
            .and_then(Value::as_u64)
            .unwrap_or(default)
    }

    /// Run the behaviour; most never return. What does return is reported as text.
    fn run(&self, assembly: Option<&Assembly>) -> Result<String, Error> {
        match self.mode.as_str() {
            "ok" => Ok("hostile: ok".to_owned()),
            "loop" => endless_loop(),
            "memory" => memory_bomb(),
            "recursion" => Ok(recurse(0).to_string()),
            "panic" => panic!("hostile plugin panicked on purpose"),
            "trap" => trap(),
            "sleep" => {
                std::thread::sleep(Duration::from_secs(self.number("seconds", 3600)));
                Ok("hostile: woke up".to_owned())
            }
            "handles" => abuse::leak_handles(self.number("count", u64::MAX)),
            "log_spam" => {
                for i in 0..self.number("count", u64::MAX) {
                    log::info(format!("hostile log spam line {i}"));
                }
                Ok("hostile: log spam done".to_owned())
            }
            "stdout_spam" => {
                for i in 0..self.number("count", u64::MAX) {
                    println!("hostile stdout spam line {i}");
                    eprintln!("hostile stderr spam line {i}");
                }
                Ok("hostile: stdout spam done".to_owned())
            }
            "huge_log" => {
                log::info("x".repeat(self.number("bytes", 100_000_000) as usize));
                Ok("hostile: huge log written".to_owned())
            }
            "huge_text" => Ok("x".repeat(self.number("bytes", 100_000_000) as usize)),
            "http_probe" => Ok(http::probe(
                self.config
                    .get("urls")
                    .and_then(Value::as_array)
                    .map_or(&[][..], Vec::as_slice),
                self.config.get("headers").unwrap_or(&Value::Null),
                self.config.get("timeouts_ms").unwrap_or(&Value::Null),
            )),
            "http_loop" => Ok(http::endless(self.text("url"))),
            "probe_fs" => Ok(probe::fs()),
            "probe_env" => Ok(probe::env()),
            "probe_net" => Ok(probe::net()),
            "probe_stdin" => Ok(probe::stdin()),
            "duplicate" => abuse::duplicates().map(|()| "hostile: declared".to_owned()),
            "invalid" => abuse::invalid().map(|()| "hostile: declared".to_owned()),
            "many_sections" => abuse::many_sections(self.number("count", 1_000_000))
                .map(|()| "hostile: declared".to_owned()),
            "declare_after_init" => Ok(abuse::declare_late()),
            "odd_names" => abuse::odd_names().map(|()| "hostile: declared".to_owned()),
            "poll_instant" => {
                abuse::poll_instant(self.number("seconds", 3600));
                Ok("hostile: woke up".to_owned())
            }
            "say" => {
                let text = self
                    .config
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or("\u{1b}[2J\rerror: plugin \"persona\" failed\n");
                log::warn(text);
                log::error(text);
                println!("{text}");
                eprintln!("{text}");
                Err(Error::failed(text))
            }
            "read_file" => probe::read_file(self.text("path")),
            "list_dir" => probe::list_dir(self.text("path")),
            // Its tool's parameters nest `depth` arrays deep (see `tools`).
            "deep_tool" => Ok("a tool with deeply nested parameters".to_owned()),
            // Read, then trap: every call runs in a fresh instance, as after any failure.
            "read_then_trap" => panic!("{}", probe::read_head(self.text("path"))),
            "write_file" => Ok(probe::write_file(self.text("path"))),
            "random" => Ok(abuse::random_bytes(
                self.number("bytes", 32 << 20),
                self.config.get("source").and_then(Value::as_str) == Some("insecure"),
            )),
            // The template; `init` declared the variable it repeats.
            "amplify" => {
                Ok(format!("{{{{{AMPLIFIED}}}}}").repeat(self.number("count", 100_000) as usize))
            }
            "next_twice" => match assembly {
                Some(a) => Ok(abuse::next_twice(a)),
                None => Err(Error::invalid_input("next_twice runs in a listener")),
            },
            other => {
                let _ = phase;
                Err(Error::invalid_input(format!(
                    "invalid config: mode: unknown mode \"{other}\""
                )))
            }
        }
    }
}

/// Execute Wasm's `unreachable` instruction (a native build, e.g. `cargo test` on the host,
/// aborts instead).
fn trap() -> ! {
    #[cfg(target_arch = "wasm32")]
    core::arch::wasm32::unreachable();
    #[cfg(not(target_arch = "wasm32"))]
    std::process::abort();
}

fn endless_loop() -> ! {
    let mut n: u64 = 0;
    loop {
        // Keep the loop observable so the optimiser cannot remove it.
        n = std::hint::black_box(n.wrapping_add(1));
    }
}

/// Allocate 1 MiB at a time until allocation fails (Rust then aborts: a trap). Only one byte
/// of each block is written, so the linear memory grows fast without the host spending the
/// call's deadline on page faults.
fn memory_bomb() -> ! {
    let mut hoard: Vec<Vec<u8>> = Vec::new();
    loop {
        let mut block = Vec::with_capacity(1 << 20);
        block.push(0xAB_u8);
        hoard.push(std::hint::black_box(block));
    }
}

/// Recurse with a sizeable frame until the stack runs out.
#[allow(unconditional_recursion)]
fn recurse(depth: u64) -> u64 {
    let frame = std::hint::black_box([depth; 64]);
    recurse(depth + 1).wrapping_add(frame[depth as usize % 64])
}

impl Plugin for Hostile {
    fn init(config: Value) -> Result<Self, Error> {
        let mode = config
            .get("mode")
            .and_then(Value::as_str)
            .ok_or_else(|| Error::invalid_input("invalid config: mode: expected a string"))?
            .to_owned();
        if !MODES.contains(&mode.as_str()) {
            return Err(Error::invalid_input(format!(
                "invalid config: mode: unknown mode \"{mode}\" (one of: {})",
                MODES.join(", ")
            )));
        }
        let at = match config.get("in") {
            None => default_phase(&mode),
            Some(v) => phase(v.as_str().unwrap_or(""))?,
        };
        let this = Hostile { mode, at, config };
        if this.mode == "amplify" {
            let value = "x".repeat(this.number("bytes", 500_000) as usize);
            declare::variable(AMPLIFIED, Some(&value))?;
        }
        match at {
            Phase::Init => {
                let text = this.run(None)?;
                declare::section(NAME, 500.0, &text)?;
            }
            Phase::Section => declare::dynamic_section(NAME, 500.0)?,
            Phase::Context => declare::dynamic_context(NAME, 500.0)?,
            Phase::Variable => declare::dynamic_variable(NAME)?,
            Phase::Tools => declare::dynamic_tools(NAME)?,
            Phase::Listener => declare::listener(NAME)?,
        }
        Ok(this)
    }

    fn section_text(&mut self, _name: &str, _cx: &AssembleContext) -> Result<String, Error> {
        self.run(None)
    }

    fn context_text(&mut self, _name: &str, _cx: &AssembleContext) -> Result<String, Error> {
        self.run(None)
    }

    fn variable(&mut self, _name: &str, _cx: &AssembleContext) -> Result<Option<String>, Error> {
        self.run(None).map(Some)
    }

    fn tools(&mut self, _key: &str, _cx: &AssembleContext) -> Result<ToolSet, Error> {
        let text = self.run(None)?;
        let params = if self.mode == "deep_tool" {
            let mut nested = Value::from(1);
            for _ in 0..self.number("depth", 125) {
                nested = Value::Array(vec![nested]);
            }
            prompt_plugin::serde_json::json!({"type": "object", "default": nested})
        } else {
            prompt_plugin::serde_json::json!({"type": "object", "properties": {}})
        };
        Ok(ToolSet::new(vec![tool(NAME, text, &params)]))
    }

    fn on_assemble(
        &mut self,
        _key: &str,
        a: &Assembly,
        _cx: &AssembleContext,
    ) -> Result<(), Error> {
        // A listener declared by a mode that runs elsewhere (`duplicate`) just passes through.
        if self.at != Phase::Listener {
            return a.next();
        }
        if self.mode != "next_twice" {
            a.next()?;
        }
        let text = self.run(Some(a))?;
        a.push_section(&NamedText::new(NAME, text));
        Ok(())
    }
}

prompt_plugin::export_plugin!(Hostile);
