//! The async `assemble`: off the executor, concurrent across scopes.

use std::time::Duration;

use super::*;

#[tokio::test]
async fn async_assemble_matches_blocking() {
    let r = reg_with(|c| c.persona = "P".into());
    let f = r.fiber("p", S);
    f.section(fixed("x", 1.0, "x")).unwrap();
    let a = r.assemble(S, AssembleContext::default()).await.unwrap();
    assert_eq!(a, assemble(&r, S));
    assert_eq!(render_prompt(&a).unwrap(), format!("{ID}\n\nP\n\nx"));
}

#[tokio::test]
async fn async_errors_are_returned() {
    let r = reg();
    let f = r.fiber("p", None);
    f.section(fixed("a", 1.0, "a").complete()).unwrap();
    f.section(fixed("b", 1.0, "b").complete()).unwrap();
    let e = r
        .assemble(None, AssembleContext::default())
        .await
        .unwrap_err();
    assert!(matches!(e, AssembleError::MultipleComplete { .. }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn scopes_assemble_concurrently() {
    let r = reg();
    let g = r.fiber("g", None);
    // Every assembly waits on the same barrier inside a provider: this only finishes if
    // the assemblies really run at the same time.
    let barrier = Arc::new(std::sync::Barrier::new(4));
    let b2 = Arc::clone(&barrier);
    g.variable(
        "sync",
        var(move |_| {
            b2.wait();
            Ok(Some("ok".into()))
        }),
    )
    .unwrap();
    let mut fibers = Vec::new();
    for i in 0..4 {
        let scope = format!("agent:{i}");
        let f = r.fiber(&format!("plugin-{i}"), Some(&scope));
        f.section(fixed("mine", 1.0, &format!("agent {i}")))
            .unwrap();
        fibers.push(f);
    }
    let mut tasks = Vec::new();
    for i in 0..4 {
        let r = Arc::clone(&r);
        tasks.push(tokio::spawn(async move {
            let scope = format!("agent:{i}");
            r.assemble(Some(&scope), AssembleContext::default()).await
        }));
    }
    let results = tokio::time::timeout(Duration::from_secs(20), async {
        let mut out = Vec::new();
        for t in tasks {
            out.push(t.await.unwrap().unwrap());
        }
        out
    })
    .await
    .expect("concurrent assemblies finished");
    for (i, a) in results.iter().enumerate() {
        assert_eq!(contributed(a), pairs(&[("mine", &format!("agent {i}"))]));
        assert_eq!(a.variable("sync"), Some(Some("ok")));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registrations_during_concurrent_assemblies_are_safe() {
    let r = reg();
    let writer = {
        let r = Arc::clone(&r);
        tokio::task::spawn_blocking(move || {
            for i in 0..200 {
                let f = r.fiber("churn", Some("S"));
                f.section(fixed(&format!("s{i}"), 1.0, "x")).unwrap();
                f.tools(static_tools(&["t"]));
            }
        })
    };
    for _ in 0..200 {
        let a = r.assemble(S, AssembleContext::default()).await.unwrap();
        // Each fiber is dropped right after registering: at most one churn section shows.
        assert!(contributed(&a).len() <= 1);
    }
    writer.await.unwrap();
    assert!(r.snapshot().scoped.is_empty());
}
