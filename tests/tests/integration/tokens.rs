//! Token counts against the reference implementations, on long runs, through every entry
//! point, and the token budgets.

pub(crate) mod budgets;
pub(crate) mod long_runs;
pub(crate) mod reference;
pub(crate) mod runs_through_entry_points;
