//! Misuse of the host contract: registrations the host must refuse, registering outside
//! `init`, calling `next` twice, leaking resource handles. Refusals are recorded as sections
//! (`<variant>: <host message>`) so tests can assert the host's exact text.

use prompt_plugin::{declare, Assembly, Error, PluginError, RegistryError};

/// `ok`, or `<variant>: <host message>`.
fn describe(result: Result<(), RegistryError>) -> String {
    match result {
        Ok(()) => "ok".to_owned(),
        Err(RegistryError::Duplicate(m)) => format!("duplicate: {m}"),
        Err(RegistryError::Invalid(m)) => format!("invalid: {m}"),
        Err(RegistryError::Closed(m)) => format!("closed: {m}"),
    }
}

/// Record one outcome as section `hostile:<case>` (orders 900+ keep them last and in order).
fn record(index: u32, case: &str, result: Result<(), RegistryError>) -> Result<(), Error> {
    let name = format!("hostile:{case}");
    declare::section(&name, 900.0 + f64::from(index), &describe(result))?;
    Ok(())
}

/// Declare a section, a context, a variable and a listener twice each.
pub fn duplicates() -> Result<(), Error> {
    declare::section("dup", 1.0, "first")?;
    record(
        0,
        "duplicate-section",
        declare::section("dup", 2.0, "second"),
    )?;
    declare::context("dup", 1.0, "first")?;
    record(
        1,
        "duplicate-context",
        declare::context("dup", 2.0, "second"),
    )?;
    declare::variable("dup", Some("first"))?;
    record(
        2,
        "duplicate-variable",
        declare::variable("dup", Some("second")),
    )?;
    declare::listener("first")?;
    record(3, "duplicate-listener", declare::listener("second"))?;
    Ok(())
}

/// Declarations the host must refuse as invalid.
pub fn invalid() -> Result<(), Error> {
    let cases: [(&str, Result<(), RegistryError>); 8] = [
        ("nan-section", declare::section("nan", f64::NAN, "t")),
        ("inf-section", declare::section("inf", f64::INFINITY, "t")),
        (
            "neg-inf-context",
            declare::context("neginf", f64::NEG_INFINITY, "t"),
        ),
        ("bad-variable", declare::variable("Not Valid", Some("v"))),
        ("empty-variable", declare::variable("", Some("v"))),
        (
            "tool-parameters-not-json",
            declare::tools(vec![prompt_plugin::ToolSchema {
                name: "t1".into(),
                description: String::new(),
                parameters: "not json".into(),
            }]),
        ),
        (
            "tool-parameters-not-object",
            declare::tools(vec![prompt_plugin::ToolSchema {
                name: "t2".into(),
                description: String::new(),
                parameters: "[]".into(),
            }]),
        ),
        (
            "tool-known-names-mismatch-ok",
            declare::tool_set(
                prompt_plugin::ToolSet::new(Vec::new()).with_known_names(vec!["ghost".into()]),
            ),
        ),
    ];
    for (i, (case, result)) in cases.into_iter().enumerate() {
        record(i as u32, case, result)?;
    }
    Ok(())
}

/// Declare `count` sections; stops at (and returns) the host's first refusal.
pub fn many_sections(count: u64) -> Result<(), Error> {
    for i in 0..count {
        declare::section(&format!("s{i}"), i as f64, "x")?;
    }
    Ok(())
}

/// Try to declare outside `init`: the host should answer `closed`.
pub fn declare_late() -> String {
    describe(declare::section("late", 1.0, "late"))
}

/// Call `next` twice and report both outcomes.
pub fn next_twice(a: &Assembly) -> String {
    let show = |r: Result<(), PluginError>| match r {
        Ok(()) => "ok".to_owned(),
        Err(PluginError::InvalidInput(m)) => format!("invalid-input: {m}"),
        Err(PluginError::Failed(m)) => format!("failed: {m}"),
    };
    let first = show(a.next());
    let second = show(a.next());
    format!("first: {first}; second: {second}")
}

/// Create output-stream handles and never drop them: the component's handle table (and the
/// host's resource table behind it) grows until a limit or the deadline stops it.
pub fn leak_handles(count: u64) -> Result<String, Error> {
    for _ in 0..count {
        std::mem::forget(wasip2::cli::stdout::get_stdout());
    }
    Ok(format!("hostile: leaked {count} handles"))
}

/// Names with control characters, bidi overrides and odd (but valid) code points, declared
/// as sections, contexts, tools and a listener key; each outcome is recorded as
/// `hostile:odd-<kind>-<index>` in the form of `describe`.
pub fn odd_names() -> Result<(), Error> {
    let mut index = 0u32;
    let mut next = |kind: &str, i: usize, result: Result<(), RegistryError>| {
        let r = record(index, &format!("odd-{kind}-{i}"), result);
        index += 1;
        r
    };
    for (i, name) in ODD_NAMES.iter().enumerate() {
        next("section", i, declare::section(name, 1.0, "odd section"))?;
        next("context", i, declare::context(name, 1.0, "odd context"))?;
        let params = prompt_plugin::serde_json::json!({"type": "object"});
        next(
            "tool",
            i,
            declare::tools(vec![prompt_plugin::tool(*name, "odd tool", &params)]),
        )?;
    }
    next("listener", 0, declare::listener("key\u{1b}[2J\n"))?;
    Ok(())
}

/// The names `odd_names` tries, in order: first the ones a host should refuse (control
/// characters, bidi overrides), then odd but harmless ones.
pub const ODD_NAMES: &[&str] = &[
    "nul\u{0}byte",
    "line\nbreak",
    "carriage\rreturn",
    "\u{1b}[31mred\u{1b}[0m",
    "del\u{7f}",
    "c1\u{85}next-line",
    "bidi\u{202e}evil",
    "isolate\u{2066}x\u{2069}",
    // Accepted: a replacement character, a BOM, a private-use and the last code point, the
    // neighbours of the surrogate range (which UTF-8 strings cannot hold).
    "\u{fffd}\u{feff}",
    "\u{d7ff}\u{e000}\u{10ffff}",
    "combining e\u{301}\u{301}\u{301}",
];

/// Wait for a monotonic-clock instant `seconds` ahead by polling its pollable directly
/// (`subscribe-instant` + `poll`), which `std::thread::sleep` does not use.
pub fn poll_instant(seconds: u64) {
    use wasip2::clocks::monotonic_clock;
    let when = monotonic_clock::now().saturating_add(seconds.saturating_mul(1_000_000_000));
    let pollable = monotonic_clock::subscribe_instant(when);
    // Keep polling in case the host wakes it early: only the deadline may stop this.
    loop {
        let ready = wasip2::io::poll::poll(&[&pollable]);
        if !ready.is_empty() && monotonic_clock::now() >= when {
            return;
        }
    }
}

/// Ask the host for `bytes` random bytes in one `get-random-bytes` (or
/// `get-insecure-random-bytes`) call.
pub fn random_bytes(bytes: u64, insecure: bool) -> String {
    let got = if insecure {
        wasip2::random::insecure::get_insecure_random_bytes(bytes)
    } else {
        wasip2::random::random::get_random_bytes(bytes)
    };
    format!("hostile: got {} random bytes", got.len())
}
