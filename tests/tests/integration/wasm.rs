//! Wasm plugins: loading, the compile cache, sandboxing, hostile guests, conformance, contract
//! versions, capabilities and granted directories, plugins by name, the JavaScript and Python
//! examples, and stress.

pub(crate) mod attacked_cache;
pub(crate) mod attacked_grants;
pub(crate) mod cache_in_place;
pub(crate) mod capabilities;
pub(crate) mod conformance;
pub(crate) mod guests_built;
pub(crate) mod hostile;
pub(crate) mod hostile_extra;
pub(crate) mod load;
pub(crate) mod load_side_by_side;
pub(crate) mod plugin_names;
pub(crate) mod polyglot;
pub(crate) mod sandbox;
pub(crate) mod stress;
pub(crate) mod wit_0_3_freshness;
pub(crate) mod wit_versions;
