//! [`Server::call`] on a session: the state taken from the shelf by the caller's thread, in
//! order with the lines' requests, and the session's queue gone once it holds nothing.

use std::path::Path;
use std::time::{Duration, Instant};

use super::*;
use prompt_host::{Host, PromptConfig, RuntimeConfig};

struct Fixture {
    rt: tokio::runtime::Runtime,
    server: Arc<Server>,
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Self {
        Self::with_limits(crate::ServeLimits::default())
    }

    fn with_limits(limits: crate::ServeLimits) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let runtime = RuntimeConfig::with_cache_dir(dir.path().join("cache"));
        let host = Host::new(PromptConfig::default(), runtime).expect("host");
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let server = {
            let _in = rt.enter();
            Server::with_limits(host, crate::Notifier::new(), limits)
        };
        Self { rt, server, dir }
    }

    fn log(&self) -> std::path::PathBuf {
        self.dir.path().join("s.jsonl")
    }

    fn call(&self, method: &str, params: serde_json::Value) -> Result<Answer, RpcError> {
        let line =
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        self.server
            .call(
                self.rt.handle(),
                &line.to_string(),
                &CancelToken::new(),
                &|| false,
            )
            .expect("the server runs")
    }

    /// Wait until the session's worker has put its state on the shelf (it does so after
    /// each request it ran itself).
    fn until_shelved(&self, log: &Path) {
        let started = Instant::now();
        loop {
            let shelved = self
                .server
                .lock_sessions()
                .get(log)
                .is_some_and(|q| q.shelf.borrow().is_some());
            if shelved {
                return;
            }
            assert!(started.elapsed() < Duration::from_secs(10), "never shelved");
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

fn leftovers(answer: &Answer) -> usize {
    match answer {
        Answer::Step(step) => step.leftovers.0.len(),
        Answer::Json(_) => 0,
    }
}

#[test]
fn steps_run_on_the_callers_thread_with_the_shelved_state_and_a_closed_session_leaves_no_queue() {
    let f = Fixture::new();
    let log = f.log();
    let session = log.to_string_lossy().to_string();
    for i in 0..4u64 {
        if i > 0 {
            f.until_shelved(&log);
        }
        let answer = f
            .call(
                "step",
                serde_json::json!({"session": session, "user": [format!("hi {i}")]}),
            )
            .unwrap_or_else(|e| panic!("step {i}: {}", e.message));
        let Answer::Step(step) = &answer else {
            panic!("a step answers its outcome")
        };
        assert_eq!(
            step.outcome.step, i,
            "the state (the open log) went from call to call"
        );
        // From the second step on, the rendering it replaced goes with the answer, to be
        // freed by whoever drops it.
        assert_eq!(leftovers(&answer), usize::from(i > 0), "step {i}");
        f.until_shelved(&log);
        f.call(
            "append_assistant",
            serde_json::json!({"session": session, "text": format!("ok {i}")}),
        )
        .unwrap_or_else(|e| panic!("append_assistant {i}: {}", e.message));
        assert_eq!(f.server.lock_sessions().len(), 1, "the session is open");
    }
    f.until_shelved(&log);
    f.call("close_session", serde_json::json!({"session": session}))
        .unwrap_or_else(|e| panic!("close_session: {}", e.message));
    assert!(
        f.server.lock_sessions().is_empty(),
        "a session closed from this thread leaves no queue (its worker ends)"
    );
    // The log is whole: four steps and their replies, readable by a new queue.
    let answer = f
        .call(
            "request",
            serde_json::json!({"session": session, "step": 3}),
        )
        .unwrap_or_else(|e| panic!("request: {}", e.message));
    assert!(matches!(answer, Answer::Json(_)));
}

#[test]
fn a_line_queued_while_a_caller_has_the_state_waits_for_it() {
    let f = Fixture::new();
    let log = f.log();
    let session = log.to_string_lossy().to_string();
    f.call(
        "step",
        serde_json::json!({"session": session, "user": ["hi"]}),
    )
    .unwrap_or_else(|e| panic!("step: {}", e.message));
    f.until_shelved(&log);
    // A caller in the middle of a request holds the state...
    let borrowed = {
        let sessions = f.server.lock_sessions();
        sessions[&log].shelf.borrow().expect("shelved")
    };
    // ...when a line's request for the session arrives.
    let line = serde_json::json!({"jsonrpc": "2.0", "id": 7, "method": "append_assistant",
        "params": {"session": session, "text": "ok"}});
    let Input::Single(Ok(call)) = envelope::parse_line(&line.to_string()) else {
        panic!("a request line")
    };
    let (done, mut answered) = tokio::sync::mpsc::unbounded_channel();
    {
        let _in = f.rt.enter();
        assert!(f
            .server
            .queue(log.clone(), (call, Responder::Line(done)))
            .is_ok());
    }
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        answered.try_recv().is_err(),
        "answered while a caller had the state"
    );
    // No other caller takes the state meanwhile: the line is ahead of it.
    drop(borrowed);
    let answer = f
        .rt
        .block_on(async { tokio::time::timeout(Duration::from_secs(10), answered.recv()).await })
        .expect("answered once the state came back")
        .flatten()
        .expect("an answer line");
    assert!(answer.contains(r#""seq""#), "{answer}");
    f.until_shelved(&log);
    let answer = f
        .call(
            "step",
            serde_json::json!({"session": session, "user": ["again"]}),
        )
        .unwrap_or_else(|e| panic!("step: {}", e.message));
    let Answer::Step(step) = answer else {
        panic!("a step")
    };
    assert_eq!(
        step.outcome.step, 1,
        "the line's reply went into the same log first"
    );
}

#[test]
fn sessions_opened_and_closed_from_this_thread_neither_pile_up_nor_count_against_the_limit() {
    // One open session at a time: each closed session, closed from the caller's thread,
    // must leave its place (and its queue) before the next one opens.
    let f = Fixture::with_limits(crate::ServeLimits::default().max_sessions(1));
    for i in 0..50 {
        let log = f.dir.path().join(format!("s{i}.jsonl"));
        let session = log.to_string_lossy().to_string();
        f.call(
            "step",
            serde_json::json!({"session": session, "user": ["hi"]}),
        )
        .unwrap_or_else(|e| panic!("step {i}: {}", e.message));
        f.until_shelved(&log);
        f.call("close_session", serde_json::json!({"session": session}))
            .unwrap_or_else(|e| panic!("close_session {i}: {}", e.message));
    }
    assert!(f.server.lock_sessions().is_empty(), "no queue left behind");
    // At the limit, a new session closes the least recently used idle one.
    let open = |name: &str| {
        let log = f.dir.path().join(name);
        let session = log.to_string_lossy().to_string();
        f.call(
            "step",
            serde_json::json!({"session": session, "user": ["hi"]}),
        )
        .unwrap_or_else(|e| panic!("open {name}: {}", e.message));
        f.until_shelved(&log);
        log
    };
    open("kept.jsonl");
    let second = open("second.jsonl");
    let held: Vec<_> = f.server.lock_sessions().keys().cloned().collect();
    assert_eq!(held, vec![second.clone()], "the idle session made room");
    // A session whose state is in use is not closed: the next one is refused.
    let busy = f.server.lock_sessions()[&second]
        .shelf
        .borrow()
        .expect("the state lies on the shelf");
    let third = f.dir.path().join("third.jsonl");
    let refused = f
        .call(
            "step",
            serde_json::json!({"session": third.to_string_lossy(), "user": ["hi"]}),
        )
        .err()
        .expect("no room while the one session held is busy");
    assert!(
        refused
            .message
            .contains("1 session logs are open, the most this server holds (serve --max-sessions)"),
        "{}",
        refused.message
    );
    assert!(!third.exists(), "nothing was written");
    drop(busy);
}

#[test]
fn idle_sessions_past_the_cache_bytes_are_closed_least_recently_used_first() {
    // A cache of 1 byte: whatever a session holds is over it, so each request leaves only
    // its own session held; the others are closed, and open again on their next request.
    let f = Fixture::with_limits(crate::ServeLimits::default().session_cache_bytes(1));
    let step = |name: &str| {
        let log = f.dir.path().join(name);
        let session = log.to_string_lossy().to_string();
        let answer = f
            .call(
                "step",
                serde_json::json!({"session": session, "user": ["hi"]}),
            )
            .unwrap_or_else(|e| panic!("step on {name}: {}", e.message));
        f.until_shelved(&log);
        let Answer::Step(step) = answer else {
            panic!("a step answers with its outcome")
        };
        (log, step.outcome.step)
    };
    let (a, first) = step("a.jsonl");
    let (b, _) = step("b.jsonl");
    let held: Vec<_> = f.server.lock_sessions().keys().cloned().collect();
    assert_eq!(held, vec![b.clone()], "a was closed for b");
    // a's next step reads its log again and goes on from where it was.
    let (again, next) = step("a.jsonl");
    assert_eq!((again, next), (a.clone(), first + 1));
    let held: Vec<_> = f.server.lock_sessions().keys().cloned().collect();
    assert_eq!(held, vec![a], "b was closed for a");
    // With room for both, both stay.
    let f2 = Fixture::with_limits(crate::ServeLimits::default());
    for name in ["x.jsonl", "y.jsonl"] {
        let log = f2.dir.path().join(name).to_string_lossy().to_string();
        f2.call("step", serde_json::json!({"session": log, "user": ["hi"]}))
            .unwrap_or_else(|e| panic!("{}", e.message));
        f2.until_shelved(std::path::Path::new(&log));
    }
    assert_eq!(f2.server.lock_sessions().len(), 2);
}
