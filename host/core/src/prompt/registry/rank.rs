//! Ranks: where a fiber's entries stand among the entries they tie with.
//!
//! Entries of equal order render in registration order (the SPEC's binding decision 2):
//! each table of a layer keeps its entries in the order they were registered, and the sort
//! by order is stable. That order is a fact of the deployment as long as everything
//! registers while the host starts, in host.toml's order. What an MCP server contributes
//! does not: its provider plugin is loaded in its turn, but what it publishes is registered
//! when the server answers, and again whenever the server changes. Two servers whose
//! sections share an order would render in the order they happened to answer, and a refresh
//! of one would move it behind the other: the same deployment, different bytes.
//!
//! A rank fixes the place instead. [`Registry::reserve_rank`] takes a place in the
//! registration order now (from the counter entry ids come from), and a fiber made with
//! [`Registry::fiber_ranked`] puts every entry it registers there, whenever it registers
//! it: after every entry registered before the rank was taken, before every entry
//! registered after. Among themselves a ranked fiber's entries keep their registration
//! order. An ordinary entry's rank is its own id, higher than any rank taken before it, so
//! registering one appends, exactly as before.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::{Fiber, FiberId, Registry};

impl Registry {
    /// A place in the registration order, taken now (see the module documentation).
    pub fn reserve_rank(&self) -> u64 {
        let mut inner = self.write();
        let rank = inner.next_entry;
        inner.next_entry += 1;
        rank
    }

    /// [`Registry::fiber`] whose entries take `rank` (from [`Registry::reserve_rank`])
    /// among the entries they tie with, instead of the place of their registration.
    pub fn fiber_ranked(self: &Arc<Self>, owner: &str, scope: Option<&str>, rank: u64) -> Fiber {
        let id = FiberId(self.next_fiber.fetch_add(1, Ordering::Relaxed));
        Fiber::new(
            Arc::clone(self),
            id,
            Arc::from(owner),
            scope.map(Arc::from),
            Some(rank),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ListenerOptions, Registration};
    use super::Registry;
    use crate::prompt::tests::{assemble, listen, reg};
    use crate::prompt::{EntryKind, SectionDef};

    fn names(r: &Registry) -> Vec<String> {
        assemble(r, None)
            .sections
            .into_iter()
            .map(|s| s.name)
            .filter(|n| n.starts_with('t'))
            .collect()
    }

    fn tie(name: &str) -> Registration {
        Registration::Section(SectionDef::fixed(name, 190.0, name))
    }

    #[test]
    fn a_ranked_fiber_takes_its_place_whenever_it_registers() {
        let r = reg();
        let before = r.fiber("before", None);
        before.register(tie("t:before")).unwrap();
        let alpha = r.reserve_rank();
        let beta = r.reserve_rank();
        let after = r.fiber("after", None);
        after.register(tie("t:after")).unwrap();
        // Beta answers first; alpha second, with two entries.
        let b = r.fiber_ranked("mcp:beta", None, beta);
        b.register(tie("t:beta")).unwrap();
        let a = r.fiber_ranked("mcp:alpha", None, alpha);
        a.register(tie("t:alpha:1")).unwrap();
        a.register(tie("t:alpha:2")).unwrap();
        let expected = ["t:before", "t:alpha:1", "t:alpha:2", "t:beta", "t:after"];
        assert_eq!(names(&r), expected);
        // A new generation of beta, then of alpha (swapped in): nobody moves.
        let b2 = r.fiber_ranked("mcp:beta", None, beta);
        r.swap(b.id(), &b2, vec![tie("t:beta")]).unwrap();
        let a2 = r.fiber_ranked("mcp:alpha", None, alpha);
        r.swap(a.id(), &a2, vec![tie("t:alpha:1"), tie("t:alpha:2")])
            .unwrap();
        assert_eq!(names(&r), expected);
        // An ordinary registration still appends.
        let late = r.fiber("late", None);
        late.register(tie("t:late")).unwrap();
        assert_eq!(
            names(&r),
            [
                "t:before",
                "t:alpha:1",
                "t:alpha:2",
                "t:beta",
                "t:after",
                "t:late"
            ]
        );
    }

    fn listener_owners(r: &Registry) -> Vec<String> {
        r.entries()
            .into_iter()
            .filter(|e| e.kind == EntryKind::Listener)
            .map(|e| e.owner)
            .collect()
    }

    #[test]
    fn ranked_listeners_take_their_place_appended_or_prepended() {
        let r = reg();
        let pass = || listen(|a, _, next| next.run(a));
        let append = ListenerOptions::default();
        let prepend = ListenerOptions {
            prepend: true,
            ..ListenerOptions::default()
        };
        let one = r.fiber("one", None);
        one.listener(pass(), append);
        one.listener(pass(), prepend);
        let rank = r.reserve_rank();
        let two = r.fiber("two", None);
        two.listener(pass(), append);
        two.listener(pass(), prepend);
        let ranked = r.fiber_ranked("ranked", None, rank);
        ranked.listener(pass(), append);
        ranked.listener(pass(), prepend);
        // Prepended, the later registration first (two, the rank, one); appended, in
        // registration order (one, the rank, two).
        assert_eq!(
            listener_owners(&r),
            ["two", "ranked", "one", "one", "ranked", "two"]
        );
    }
}
