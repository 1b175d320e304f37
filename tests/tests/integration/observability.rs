//! Spans, OTLP export to a real decoder, and timings, through every entry point.

pub(crate) mod otlp_export;
pub(crate) mod spans;
pub(crate) mod timings;
