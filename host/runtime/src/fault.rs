//! Faults injected on purpose, in debug builds only: the tests of the request-level
//! boundaries (`serve`, the in-process host, the command line) need a panic at a known point
//! that no input can cause once the defects that caused one are fixed. A release build
//! compiles `inject` to nothing, whatever the environment says.

/// The variable naming the point that panics: a `serve` method (`render`, `step`, …) or a
/// command line's subcommand (`cli:render`, …).
pub const VARIABLE: &str = "PROMPT_HOST_INJECT_PANIC";

/// Panic if this is a debug build and [`VARIABLE`] names `point`.
#[cfg(debug_assertions)]
#[track_caller]
pub fn inject(point: &str) {
    if std::env::var_os(VARIABLE).is_some_and(|named| named == point) {
        panic!("a panic injected at {point} ({VARIABLE})");
    }
}

/// Nothing, in a release build.
#[cfg(not(debug_assertions))]
#[inline(always)]
pub fn inject(_point: &str) {}
