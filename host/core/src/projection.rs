//! Projections: pure decisions about how the rendered system prompt and runtime-context
//! snapshot become session events, and the step that commits them.
//!
//! The projections never write: they return candidate messages and intents, and state
//! changes only when a commit is observed as a session event. That keeps them deterministic
//! over the log, so a retry can reuse one decision and a restart rebuilds the same state.

pub(crate) mod runtime_context;
pub(crate) mod step;
pub(crate) mod system_prompt;

#[cfg(test)]
mod test_support;

pub use runtime_context::{Retained, RuntimeContextProjection};
pub use step::{
    run_step, run_step_checked, HeaderReason, SectionOrigin, SectionOrigins, StepInput,
    StepOutcome, StepRefused,
};
pub use system_prompt::{AdmissionFlags, SystemNode, SystemPromptCommit, SystemPromptProjection};
