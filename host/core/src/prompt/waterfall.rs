//! The scope-filtered assembly waterfall (step 11 of the assembly).
//!
//! Listeners run in place on one `Assembly`: a listener changes it, calls `next.run` to let
//! the inner listeners work on the same value, and may change it again afterwards. Not
//! calling `next.run` short-circuits. The list is the snapshot the assembly started with.
//!
//! Every listener's result is checked against the invariants after it returns, naming that
//! listener's plugin. The first failure of the chain, a listener error or a violation, is
//! kept in a slot shared by the whole chain, so an outer listener that swallows the error its
//! `next.run` returned cannot hide it: the assembly still fails with the original error.

use std::sync::{Arc, Mutex, PoisonError};

use super::assembly::Assembly;
use super::context::AssembleContext;
use super::error::{ProviderError, ProviderErrorKind};
use super::errors::{AssembleError, EntryKind};
use super::invariant;
use super::listener_changes;
use super::provider::Next;
use super::registry::state::ListenerEntry;
use super::timings::timed;

type Slot = Arc<Mutex<Option<AssembleError>>>;
type Chain = Arc<[Arc<ListenerEntry>]>;

/// Whether a listener receives an assembly whose scope chain is `chain`: `global` listeners
/// and untagged ones always do; a tagged one when its tag is on the chain (events flow up).
pub(crate) fn admits(entry: &ListenerEntry, chain: &[Arc<str>]) -> bool {
    match &entry.meta.scope {
        _ if entry.options.global => true,
        None => true,
        Some(tag) => chain.iter().any(|key| key == tag),
    }
}

/// Run the listeners of `listeners` that admit `ctx`'s chain on `assembly`.
pub(crate) fn run(
    listeners: &[Arc<ListenerEntry>],
    ctx: &Arc<AssembleContext>,
    assembly: &mut Assembly,
) -> Result<(), AssembleError> {
    let chain: Chain = listeners
        .iter()
        .filter(|entry| admits(entry, &ctx.scope_chain))
        .cloned()
        .collect();
    if chain.is_empty() {
        return Ok(());
    }
    let slot: Slot = Arc::new(Mutex::new(None));
    let result = run_from(chain, 0, Arc::clone(ctx), Arc::clone(&slot), assembly);
    let recorded = slot.lock().unwrap_or_else(PoisonError::into_inner).take();
    match (recorded, result) {
        (Some(error), _) => Err(error),
        (None, Ok(())) => Ok(()),
        // Every failing path records first; this only guards against a future path that
        // does not.
        (None, Err(error)) => Err(AssembleError::Provider {
            kind: EntryKind::Listener,
            name: None,
            plugin: "prompt-host".to_string(),
            scope: "global".to_string(),
            error,
        }),
    }
}

fn run_from(
    chain: Chain,
    index: usize,
    ctx: Arc<AssembleContext>,
    slot: Slot,
    assembly: &mut Assembly,
) -> Result<(), ProviderError> {
    let Some(entry) = chain.get(index).cloned() else {
        // The innermost continuation: the assembly itself is the result.
        return Ok(());
    };
    if ctx.is_cancelled() {
        let error = ProviderError::new(
            ProviderErrorKind::Cancelled,
            "the caller cancelled the assembly",
        );
        record(&slot, AssembleError::Cancelled(error.message.clone()));
        return Err(error);
    }
    let mut next = {
        let (chain, ctx, slot) = (Arc::clone(&chain), Arc::clone(&ctx), Arc::clone(&slot));
        Next::new(move |assembly| run_from(chain, index + 1, ctx, slot, assembly))
    };
    let meta = &entry.meta;
    let key = entry.listener.key();
    // Only for a caller that shows what each listener changed (`inspect`).
    let tracing = ctx.timings.as_ref().filter(|t| t.traces_listeners());
    let before = tracing.map(|_| listener_changes::snapshot(assembly));
    let outcome = timed(&ctx, EntryKind::Listener, key, meta, || {
        entry.listener.on_assemble(assembly, &ctx, &mut next)
    });
    if let (Some(timings), Some(before), Ok(())) = (tracing, &before, &outcome) {
        let after = listener_changes::snapshot(assembly);
        timings.listener_ran(listener_changes::Effect::between(
            index, meta, key, before, &after,
        ));
    }
    match outcome {
        Err(error) if error.kind == ProviderErrorKind::Cancelled || ctx.is_cancelled() => {
            record(&slot, AssembleError::Cancelled(error.message.clone()));
            Err(error)
        }
        Err(error) => {
            record(
                &slot,
                AssembleError::Provider {
                    kind: EntryKind::Listener,
                    name: entry.listener.key().map(str::to_string),
                    plugin: meta.owner.to_string(),
                    scope: meta.scope_label().to_string(),
                    error: error.clone(),
                },
            );
            Err(error)
        }
        Ok(()) => match invariant::check(assembly) {
            None => Ok(()),
            Some(text) => {
                let error = ProviderError::new(ProviderErrorKind::InvalidInput, text.clone());
                record(
                    &slot,
                    AssembleError::Invariant {
                        text,
                        plugin: meta.owner.to_string(),
                        after_listener: true,
                    },
                );
                Err(error)
            }
        },
    }
}

/// Keep the first failure only: it is the original one.
fn record(slot: &Slot, error: AssembleError) {
    let mut guard = slot.lock().unwrap_or_else(PoisonError::into_inner);
    if guard.is_none() {
        *guard = Some(error);
    }
}
