//! Registry-internal behaviour: entries dropped outside the lock, copy-on-write snapshots.

use std::sync::Arc;

use crate::prompt::tests::{assemble, contributed, fixed, reg, var};
use crate::prompt::{AssembleContext, SectionDef};

/// A provider may own the last handle to another fiber; removing the provider drops that
/// fiber, which disposes through the registry again. That must not deadlock.
#[test]
fn removing_a_provider_that_owns_a_fiber() {
    let r = reg();
    let inner = r.fiber("inner", None);
    inner.section(fixed("inner", 1.0, "i")).unwrap();
    let outer = r.fiber("outer", Some("S"));
    outer
        .variable(
            "v",
            var(move |_| {
                let _keep = &inner;
                Ok(None)
            }),
        )
        .unwrap();
    assert_eq!(contributed(&assemble(&r, None)).len(), 1);
    r.dispose_scope("S");
    assert_eq!(contributed(&assemble(&r, None)), vec![]);
}

#[test]
fn refused_registration_that_owns_a_fiber() {
    let r = reg();
    let f = r.fiber("p", None);
    f.section(fixed("x", 1.0, "x")).unwrap();
    let inner = r.fiber("inner", None);
    inner.section(fixed("inner", 1.0, "i")).unwrap();
    let refused = SectionDef::new(
        "x",
        1.0,
        crate::prompt::TextSource::dynamic(move |_| {
            let _keep = &inner;
            Ok(String::new())
        }),
    );
    f.section(refused).unwrap_err();
    let names: Vec<String> = contributed(&assemble(&r, None))
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(names, ["x"]);
}

#[test]
fn unsubscribing_an_observer_that_owns_a_fiber() {
    let r = reg();
    let inner = r.fiber("inner", None);
    inner.section(fixed("inner", 1.0, "i")).unwrap();
    let id = r.subscribe(Arc::new(move || {
        let _keep = &inner;
    }));
    r.unsubscribe(id);
    assert_eq!(contributed(&assemble(&r, None)), vec![]);
}

#[test]
fn a_running_assembly_keeps_its_snapshot() {
    let r = reg();
    let f = r.fiber("p", None);
    f.section(fixed("a", 1.0, "a")).unwrap();
    let before = r.snapshot();
    f.section(fixed("b", 2.0, "b")).unwrap();
    f.dispose();
    // The old snapshot is untouched by later writes.
    assert_eq!(before.global.sections.len(), 3);
    assert_eq!(r.snapshot().global.sections.len(), 2);
    let a =
        crate::prompt::assemble::assemble(&before, None, None, AssembleContext::default()).unwrap();
    assert_eq!(contributed(&a).len(), 1);
}
