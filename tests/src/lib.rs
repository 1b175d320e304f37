//! Integration tests for prompt-host live in `tests/`; the benchmarks in `benches/` share the
//! reference deployment defined in [`mod@reference`], and the polyglot test and bench share
//! [`polyglot`] (the JavaScript and Python example plugins).

pub mod demo;
pub mod polyglot;
pub mod reference;
