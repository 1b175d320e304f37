//! Versions of dynamic values, so a plugin can say "nothing changed" before computing
//! anything (contract 0.2.0; see [`crate::Plugin::version`]).
//!
//! Without a version the SDK still answers "unchanged" for a value equal to the previous
//! answer, but it has to compute the value and compare it first. A version lets a plugin whose
//! values only change with an event it knows of (a new context, a reloaded file, a new MCP
//! generation) skip both: the SDK answers "unchanged" as soon as the version matches. A value
//! that depends only on the context ([`Version::Context`]) goes further: the host keeps it and
//! does not call until the context changes.

use std::cell::Cell;

/// A dynamic entry the host asks about, as passed to [`crate::Plugin::version`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry<'a> {
    /// The dynamic section with this name.
    Section(&'a str),
    /// The dynamic runtime context with this name.
    Context(&'a str),
    /// The dynamic variable with this name.
    Variable(&'a str),
    /// The dynamic tool provider with this key.
    Tools(&'a str),
}

impl Entry<'_> {
    /// The entry's name (a tool provider's key).
    pub fn name(&self) -> &str {
        match self {
            Entry::Section(name)
            | Entry::Context(name)
            | Entry::Variable(name)
            | Entry::Tools(name) => name,
        }
    }
}

/// The version of a dynamic value, returned by [`crate::Plugin::version`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// The value depends only on the context (scope chain and facts) and the plugin's fixed
    /// configuration. The SDK answers "unchanged" while the context stays the same, and asks
    /// the host to keep the answer until the context changes: a steady-state assembly then
    /// makes no call into the plugin for this entry at all.
    Context,
    /// A number the plugin changes whenever the value may change (a generation counter, a
    /// file's modification time): while it stays the same the SDK answers "unchanged"
    /// without computing the value. The host still calls on every assembly.
    Number(u64),
}

thread_local! {
    static CONTEXT_VERSION: Cell<u64> = const { Cell::new(0) };
}

/// How many times the host has sent this instance a new context: the number that stands
/// for [`Version::Context`].
#[cfg_attr(feature = "wit-0-1", allow(dead_code))]
pub(crate) fn context_version() -> u64 {
    CONTEXT_VERSION.with(Cell::get)
}

/// The host sent a new context.
pub(crate) fn new_context() {
    CONTEXT_VERSION.with(|v| v.set(v.get().wrapping_add(1)));
}

/// Byte equality, 32 bytes per step. Inside Wasm `==` on slices becomes a call to a
/// byte-by-byte `memcmp`; a tool set of tens of KB compared on every step made that loop the
/// largest cost of a steady-state step.
#[cfg_attr(feature = "wit-0-1", allow(dead_code))]
pub(crate) fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let words = a.len() / 8;
    let word = |s: &[u8], i: usize| {
        // SAFETY: `i < words`, so bytes `8 * i .. 8 * i + 8` are inside `s` (both slices
        // have the same length); an unaligned read is allowed on any target.
        unsafe { s.as_ptr().add(8 * i).cast::<u64>().read_unaligned() }
    };
    let mut i = 0;
    while i + 4 <= words {
        let diff = (word(a, i) ^ word(b, i))
            | (word(a, i + 1) ^ word(b, i + 1))
            | (word(a, i + 2) ^ word(b, i + 2))
            | (word(a, i + 3) ^ word(b, i + 3));
        if diff != 0 {
            return false;
        }
        i += 4;
    }
    while i < words {
        if word(a, i) != word(b, i) {
            return false;
        }
        i += 1;
    }
    a[8 * words..]
        .iter()
        .zip(&b[8 * words..])
        .all(|(x, y)| x == y)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_bytes_agrees_with_slice_equality() {
        let base: Vec<u8> = (0..100u8).collect();
        for len in 0..base.len() {
            let a = &base[..len];
            assert!(same_bytes(a, a));
            for i in 0..len {
                let mut b = a.to_vec();
                b[i] ^= 1;
                assert!(!same_bytes(a, &b), "len {len}, byte {i}");
            }
            assert!(!same_bytes(a, &base[..len + 1]));
        }
    }

    #[test]
    fn the_context_version_counts_new_contexts() {
        let before = context_version();
        new_context();
        new_context();
        assert_eq!(context_version(), before + 2);
    }
}
