//! "Unchanged" answers (contract 0.2.0): the last answer of every dynamic entry of this
//! instance, so an answer equal to it is sent as `unchanged` and nothing is copied to the
//! host. The host keeps the same last values on its side.

use std::cell::RefCell;
use std::collections::HashMap;

use crate::bindings::api::contributor::{TextAnswer, ToolsAnswer, ValueAnswer};
use crate::ToolSet;

/// Which kind of entry a name belongs to (a section and a context may share a name).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Entry {
    Section,
    Context,
    Variable,
    Tools,
}

enum Last {
    Text(String),
    Value(Option<String>),
    Tools(ToolSet),
}

thread_local! {
    static LAST: RefCell<HashMap<(Entry, String), Last>> = RefCell::new(HashMap::new());
}

/// Forget every last answer (a fresh `init`).
pub(crate) fn forget() {
    LAST.with(|last| last.borrow_mut().clear());
}

/// Whether the remembered answer of `(entry, name)` satisfies `same`.
fn is_last(entry: Entry, name: &str, same: impl FnOnce(&Last) -> bool) -> bool {
    LAST.with(|last| {
        last.try_borrow()
            .ok()
            .and_then(|last| last.get(&(entry, name.to_string())).map(same))
            .unwrap_or(false)
    })
}

/// Remember `now` as the answer of `(entry, name)`.
fn remember(entry: Entry, name: String, now: Last) {
    LAST.with(|last| {
        if let Ok(mut last) = last.try_borrow_mut() {
            last.insert((entry, name), now);
        }
    });
}

/// The answer for a section's or context's `text`.
pub(crate) fn text(entry: Entry, name: String, text: String) -> TextAnswer {
    if is_last(entry, &name, |l| matches!(l, Last::Text(t) if *t == text)) {
        return TextAnswer::Unchanged;
    }
    remember(entry, name, Last::Text(text.clone()));
    TextAnswer::Text(text)
}

/// The answer for a variable's `value`.
pub(crate) fn value(name: String, value: Option<String>) -> ValueAnswer {
    if is_last(
        Entry::Variable,
        &name,
        |l| matches!(l, Last::Value(v) if *v == value),
    ) {
        return ValueAnswer::Unchanged;
    }
    remember(Entry::Variable, name, Last::Value(value.clone()));
    ValueAnswer::Value(value)
}

/// The answer for a tool provider's `set`.
pub(crate) fn tools(key: String, set: ToolSet) -> ToolsAnswer {
    if is_last(
        Entry::Tools,
        &key,
        |l| matches!(l, Last::Tools(s) if *s == set),
    ) {
        return ToolsAnswer::Unchanged;
    }
    remember(Entry::Tools, key, Last::Tools(set.clone()));
    ToolsAnswer::Tools(set)
}
