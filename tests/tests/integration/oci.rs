//! Plugins from an OCI registry: a real registry end to end, hostile registries and token
//! services, and the content store attacked on disk.

pub(crate) mod attacked;
pub(crate) mod hostile;
pub(crate) mod hostile_origins;
pub(crate) mod hostile_serve;
pub(crate) mod registry;
