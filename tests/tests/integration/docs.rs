//! The docs held to the code and the sources: README.md's tutorial run as written, the limits
//! tables against the defaults, and the runtime's module graph without an import circle.

pub(crate) mod match_code;
pub(crate) mod module_graph;
pub(crate) mod protocol_schema;
pub(crate) mod readme_tutorial;
