//! Integration tests for prompt-host live in `tests/`; the benchmarks in `benches/` share the
//! reference deployment defined in [`reference`].

pub mod reference;
