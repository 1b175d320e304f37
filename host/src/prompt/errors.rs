//! SKELETON: the core's error enums; each Display is the exact SPEC text.
use thiserror::Error;

/// Registration errors (SPEC §2.1).
#[derive(Debug, Clone, Error, PartialEq)]
pub enum RegisterError {
    /// placeholder
    #[error("{0}")]
    Todo(String),
}

/// Load-time configuration errors (SPEC §2.2).
#[derive(Debug, Clone, Error, PartialEq)]
pub enum ConfigError {
    /// placeholder
    #[error("{0}")]
    Todo(String),
}

/// Scope binding errors (SPEC §5).
#[derive(Debug, Clone, Error, PartialEq)]
pub enum ScopeError {
    /// placeholder
    #[error("{0}")]
    Todo(String),
}

/// Assembly-time errors (SPEC §2.3, decision 7 and 10).
#[derive(Debug, Clone, Error, PartialEq)]
pub enum AssembleError {
    /// placeholder
    #[error("{0}")]
    Todo(String),
}
