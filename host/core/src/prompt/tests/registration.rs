//! Cases 8–14: registration errors and change notifications.

use super::*;

#[test]
fn case08_duplicate_section() {
    let r = reg();
    let f = r.fiber("p", None);
    f.section(fixed("dup", 0.0, "first")).unwrap();
    let e = f.section(fixed("dup", 1.0, "second")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "prompt section \"dup\" is already registered (for a per-agent override, register it in that agent's scope instead)"
    );
    assert_eq!(contributed(&assemble(&r, None)), pairs(&[("dup", "first")]));
}

#[test]
fn case09_non_finite_section_order() {
    let r = reg();
    let events = observe(&r);
    let f = r.fiber("p", None);
    for order in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        let e = f.section(fixed("bad-order", order, "x")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "prompt section \"bad-order\" order must be a finite number"
        );
    }
    assert_eq!(contributed(&assemble(&r, None)), vec![]);
    assert_eq!(count(&events), 0);
}

#[test]
fn case10_contexts() {
    let r = reg();
    let f = r.fiber("p", None);
    f.context(fixed("policy", 0.0, "first")).unwrap();
    let e = f.context(fixed("policy", 1.0, "second")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "prompt context \"policy\" is already registered (for a per-agent override, register it in that agent's scope instead)"
    );
    let e = f.context(fixed("bad", f64::NAN, "x")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "prompt context \"bad\" order must be a finite number"
    );
    assert_eq!(
        assemble(&r, None).contexts,
        vec![NamedText::new("policy", "first")]
    );
}

#[test]
fn case11_variables() {
    let r = reg();
    let f = r.fiber("p", None);
    f.variable("model", value("m1")).unwrap();
    let e = f.variable("model", value("m2")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "prompt variable \"model\" is already registered (for a per-agent value, register it in that agent's scope instead)"
    );
    let e = f.variable("Not Valid", value("x")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid prompt variable name \"Not Valid\" (must match /^[a-z][a-z0-9_]*$/)"
    );
    assert_eq!(
        assemble(&r, None).variables,
        vec![("model".to_string(), Some("m1".to_string()))]
    );
}

#[test]
fn case12_scoped_duplicates() {
    let r = reg();
    let f = r.fiber("p", S);
    f.section(fixed("y", 0.0, "a")).unwrap();
    f.context(fixed("policy", 0.0, "a")).unwrap();
    f.variable("v", value("a")).unwrap();
    assert_eq!(
        f.section(fixed("y", 0.0, "b")).unwrap_err().to_string(),
        "prompt section \"y\" is already registered in this scope"
    );
    assert_eq!(
        f.context(fixed("policy", 0.0, "b"))
            .unwrap_err()
            .to_string(),
        "prompt context \"policy\" is already registered in this scope"
    );
    assert_eq!(
        f.variable("v", value("b")).unwrap_err().to_string(),
        "prompt variable \"v\" is already registered in this scope"
    );
    let g = r.fiber("g", None);
    g.section(fixed("y", 0.0, "global")).unwrap();
    let e = g.section(fixed("y", 0.0, "again")).unwrap_err();
    assert!(e
        .to_string()
        .contains("register it in that agent's scope instead"));
}

// Case 13 (a failing observer rolls the registration back) does not apply: observers are
// host-side, run after commit and cannot fail the registration.

#[test]
fn case14_one_event_per_registration_and_removal() {
    let r = reg();
    let events = observe(&r);
    let f = r.fiber("p", None);
    let id = f.tools(static_tools(&["t"]));
    assert_eq!(count(&events), 1);
    f.remove(id);
    assert_eq!(count(&events), 2);
    f.remove(id);
    assert_eq!(count(&events), 2, "a second removal does nothing");
    let id = f.context(fixed("c", 0.0, "x")).unwrap();
    f.remove(id);
    let id = f.variable("v", value("x")).unwrap();
    f.remove(id);
    assert_eq!(count(&events), 6);
    // Refused registrations notify nobody.
    f.variable("Bad", value("x")).unwrap_err();
    assert_eq!(count(&events), 6);
}

#[test]
fn unsubscribed_observer_is_not_called() {
    let r = reg();
    let calls = counter();
    let c2 = Arc::clone(&calls);
    let id = r.subscribe(Arc::new(move || {
        bump(&c2);
    }));
    let f = r.fiber("p", None);
    f.suppress_runtime_context();
    r.unsubscribe(id);
    f.suppress_runtime_context();
    assert_eq!(count(&calls), 1);
}

#[test]
fn observer_may_read_the_registry() {
    // Observers run with no lock held, so they can assemble.
    let r = reg();
    let weak = Arc::downgrade(&r);
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen2 = Arc::clone(&seen);
    r.subscribe(Arc::new(move || {
        if let Some(r) = weak.upgrade() {
            let n = assemble(&r, None).sections.len();
            seen2.lock().unwrap().push(n);
        }
    }));
    let f = r.fiber("p", None);
    f.section(fixed("a", 1.0, "a")).unwrap();
    drop(f);
    assert_eq!(*seen.lock().unwrap(), vec![3, 2]);
}

#[test]
fn refused_scoped_registration_creates_no_layer() {
    let r = reg();
    let f = r.fiber("p", S);
    f.section(fixed("x", f64::NAN, "x")).unwrap_err();
    f.variable("X", value("x")).unwrap_err();
    assert!(r.entries().iter().all(|e| e.scope.is_none()));
    assert!(r.snapshot().scoped.is_empty());
}
