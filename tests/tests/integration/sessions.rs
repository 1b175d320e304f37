//! Session logs and routes: each kind of file given as a log, the log attacked across
//! processes and from outside, and provider routes with their attacked surfaces.

pub(crate) mod attacked;
pub(crate) mod attacked_logs;
pub(crate) mod attacked_routes;
pub(crate) mod compaction;
pub(crate) mod faults;
pub(crate) mod files;
pub(crate) mod postgres;
pub(crate) mod routes;
pub(crate) mod stores;
