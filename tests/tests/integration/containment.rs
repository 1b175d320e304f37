//! Misbehaving plugins contained through every entry point (the hostile matrix through the
//! command line, `serve` and the library), the containment defects' regressions, and panics
//! that stay inside one request.

pub(crate) mod boundaries;
pub(crate) mod cli;
pub(crate) mod defects;
pub(crate) mod library;
pub(crate) mod serve;
