//! Integration tests for prompt-host live in `tests/`.
