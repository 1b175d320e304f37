//! The MCP client against a real server: `tests/fixtures/mcp/server.py` (official Python SDK)
//! and `hang.py` (never answers), spawned over stdio.
//!
//! Without the Python `mcp` package these tests skip loudly, except under `CI`, where they
//! fail. Every wait is bounded, so a broken server fails a test instead of hanging the suite.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use prompt_host::mcp::{
    check_unique_tools, public_tool_name, McpConnection, McpEvent, McpServerSpec, McpSnapshot,
    ReconnectPolicy,
};

/// Generous: several Python servers start in parallel on a busy machine.
const EVENT_WAIT: Duration = Duration::from_secs(30);
const FAST_RETRY: ReconnectPolicy =
    ReconnectPolicy::new(Duration::from_millis(50), Duration::from_millis(500));

pub(crate) fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/mcp")
}

pub(crate) fn python() -> String {
    std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_owned())
}

/// Whether the fixture server can run: always `true`, or the test fails saying what to
/// install. A test that cannot run must not count as passed (the README's test command
/// lists this prerequisite; `.ci/run` installs it).
pub(crate) fn python_mcp_available() -> bool {
    static AVAILABLE: OnceLock<Result<(), String>> = OnceLock::new();
    python_module_available(
        &AVAILABLE,
        "mcp.server.lowlevel",
        "the Python `mcp` package",
        "mcp",
    )
}

/// Whether [`python`] can import `module` (probed once, into `probe`): always `true`, or the
/// test fails naming `what` is missing and the requirements file of `tests/fixtures/<fixture>`.
pub(crate) fn python_module_available(
    probe: &OnceLock<Result<(), String>>,
    module: &str,
    what: &str,
    fixture: &str,
) -> bool {
    let probe = probe.get_or_init(|| {
        let out = std::process::Command::new(python())
            .args(["-c", &format!("import {module}")])
            .output();
        match out {
            Ok(out) if out.status.success() => Ok(()),
            // The last line of a traceback is the one that says what is missing.
            Ok(out) => Err(String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or("no error output")
                .to_owned()),
            Err(e) => Err(format!("cannot run {}: {e}", python())),
        }
    });
    match probe {
        Ok(()) => true,
        Err(why) => panic!(
            "the MCP tests need {what} ({why}); \
             run `python3 -m pip install -r tests/fixtures/{fixture}/requirements.txt`"
        ),
    }
}

pub(crate) fn server(args: &[&str]) -> McpServerSpec {
    let mut spec = McpServerSpec::new("fx", python());
    spec.args = std::iter::once(fixtures().join("server.py").display().to_string())
        .chain(args.iter().map(|a| a.to_string()))
        .collect();
    spec
}

/// Every event a connection's callback saw, in order, with the time it saw it.
type Seen = Arc<Mutex<Vec<(Instant, McpEvent)>>>;

fn connect(spec: McpServerSpec, policy: ReconnectPolicy) -> (McpConnection, Seen) {
    let seen = Seen::default();
    let sink = Arc::clone(&seen);
    let on_update = Arc::new(move |e: McpEvent| sink.lock().unwrap().push((Instant::now(), e)));
    (
        McpConnection::spawn_with_policy(spec, policy, on_update),
        seen,
    )
}

/// MCP tests start Python servers whose cold start takes seconds; run them one at a time so
/// a loaded 2-core machine does not push a start past an `initialize` timeout.
pub(crate) async fn serial() -> tokio::sync::MutexGuard<'static, ()> {
    SERIAL.lock().await
}

/// [`serial`] for tests that do not run on a runtime.
pub(crate) fn serial_blocking() -> tokio::sync::MutexGuard<'static, ()> {
    SERIAL.blocking_lock()
}

static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn next(conn: &McpConnection) -> McpEvent {
    match tokio::time::timeout(EVENT_WAIT, conn.next_event()).await {
        Ok(Some(event)) => event,
        Ok(None) => panic!("{}: connection stopped", conn.server()),
        Err(_) => panic!("{}: no event within {EVENT_WAIT:?}", conn.server()),
    }
}

async fn next_generation(conn: &McpConnection) -> McpSnapshot {
    match next(conn).await {
        McpEvent::Generation(snapshot) => snapshot,
        other => panic!("expected a generation, got {other:?}"),
    }
}

/// The next generation, skipping start-up failures: on a loaded machine a reconnect's Python
/// start can outlast a short initialize timeout, and the backoff loop then simply retries.
async fn next_generation_despite_slow_starts(conn: &McpConnection) -> McpSnapshot {
    loop {
        match next(conn).await {
            McpEvent::Generation(snapshot) => return snapshot,
            McpEvent::Failed { error, .. }
                if error.contains("no answer to server/discover or initialize") =>
            {
                eprintln!("mcp: retrying after a slow start: {error}");
            }
            other => panic!("expected a generation, got {other:?}"),
        }
    }
}

async fn next_failure(conn: &McpConnection) -> String {
    match next(conn).await {
        McpEvent::Failed { server, error } => {
            assert_eq!(server, conn.server());
            error
        }
        other => panic!("expected a failure, got {other:?}"),
    }
}

fn tool_names(snapshot: &McpSnapshot) -> Vec<&str> {
    snapshot.tools.iter().map(|t| t.name.as_str()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instructions_and_tools_arrive() {
    let _serial = serial().await;
    if !python_mcp_available() {
        return;
    }
    let started = Instant::now();
    let (conn, seen) = connect(
        server(&["--instructions", "Use echo to repeat text.", "--search-v2"]),
        FAST_RETRY,
    );
    let snapshot = next_generation(&conn).await;
    eprintln!(
        "mcp: spawn + initialize + tools/list took {:?}",
        started.elapsed()
    );

    assert_eq!(snapshot.server, "fx");
    assert_eq!(snapshot.generation, 1);
    assert_eq!(snapshot.instructions, "Use echo to repeat text.");
    assert_eq!(tool_names(&snapshot), ["echo", "add", "search.v2"]);
    let add = &snapshot.tools[1];
    assert_eq!(add.description, "Add two numbers.");
    assert_eq!(add.input_schema["type"], "object");
    assert_eq!(add.input_schema["properties"]["a"]["type"], "number");
    let public: Vec<String> = snapshot
        .tools
        .iter()
        .map(|t| public_tool_name(&snapshot.server, &t.name))
        .collect();
    assert_eq!(public[..2], ["mcp__fx__echo", "mcp__fx__add"]);
    assert!(
        public[2].starts_with("mcp__fx__search_v2_"),
        "{}",
        public[2]
    );
    assert_eq!(
        check_unique_tools(&snapshot.server, &snapshot.tools),
        Ok(())
    );

    assert_eq!(conn.current(), Some(snapshot.clone()));
    let seen: Vec<McpEvent> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|(_, e)| e.clone())
        .collect();
    assert_eq!(seen, [McpEvent::Generation(snapshot)]);
    conn.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn absent_instructions_are_empty() {
    let _serial = serial().await;
    if !python_mcp_available() {
        return;
    }
    let (conn, _) = connect(server(&[]), FAST_RETRY);
    let snapshot = next_generation(&conn).await;
    assert_eq!(snapshot.instructions, "");
    assert_eq!(tool_names(&snapshot), ["echo", "add"]);
    conn.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paginated_list_is_drained() {
    let _serial = serial().await;
    if !python_mcp_available() {
        return;
    }
    let (conn, _) = connect(server(&["--page-size", "1", "--search-v2"]), FAST_RETRY);
    let snapshot = next_generation(&conn).await;
    assert_eq!(tool_names(&snapshot), ["echo", "add", "search.v2"]);
    conn.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changed_brings_a_new_generation() {
    let _serial = serial().await;
    if !python_mcp_available() {
        return;
    }
    let (conn, _) = connect(
        server(&["--list-changed-after", "0.3", "--page-size", "2"]),
        FAST_RETRY,
    );
    let first = next_generation(&conn).await;
    assert_eq!(tool_names(&first), ["echo", "add"]);
    let second = next_generation(&conn).await;
    assert_eq!(second.generation, first.generation + 1);
    assert_eq!(tool_names(&second), ["echo", "add", "late"]);
    assert_eq!(conn.current(), Some(second));
    conn.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_is_reported_then_the_server_is_restarted() {
    let _serial = serial().await;
    if !python_mcp_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut spec = server(&["--instructions", "hi", "--crash-after", "0.3"]);
    // The first run creates the marker and crashes; the restarted one sees it and stays up.
    spec.env.insert(
        "MCP_FIXTURE_CRASH_MARKER".into(),
        dir.path().join("crashed").display().to_string(),
    );
    // A first retry delay long enough to look at the state between failure and restart.
    let policy = ReconnectPolicy::new(Duration::from_millis(400), Duration::from_secs(2));
    let (conn, seen) = connect(spec, policy);
    let first = next_generation(&conn).await;
    let error = next_failure(&conn).await;
    assert!(
        error.starts_with("mcp-client(fx): server exited"),
        "{error}"
    );
    assert!(
        error.contains("crashing on purpose"),
        "stderr tail missing: {error}"
    );
    // The last good generation stays with the consumer.
    assert_eq!(conn.current(), Some(first.clone()));

    let second = next_generation(&conn).await;
    assert_eq!(second.generation, 2);
    assert_eq!(second.instructions, "hi");
    assert_eq!(second.tools, first.tools);
    let kinds: Vec<&str> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|(_, e)| match e {
            McpEvent::Generation(_) => "generation",
            McpEvent::Failed { .. } => "failed",
        })
        .collect();
    assert_eq!(kinds, ["generation", "failed", "generation"]);
    conn.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_relist_fails_keeps_the_last_generation_and_reconnects() {
    let _serial = serial().await;
    if !python_mcp_available() {
        return;
    }
    // Long enough for a loaded machine to start Python and answer initialize.
    let timeout = Duration::from_secs(6);
    let mut spec = server(&["--list-changed-after", "0.2", "--stall-list-after", "1"]);
    spec.timeout = timeout;
    let (conn, seen) = connect(spec, FAST_RETRY);
    let first = next_generation(&conn).await;
    let error = next_failure(&conn).await;
    assert_eq!(
        error,
        "mcp-client(fx): no answer to tools/list within 6000 ms"
    );
    let stalled = {
        let seen = seen.lock().unwrap();
        seen[1].0 - seen[0].0
    };
    eprintln!("mcp: stalled re-list reported {stalled:?} after the first generation");
    assert!(stalled >= timeout, "reported too early: {stalled:?}");
    assert!(
        stalled < timeout + Duration::from_secs(3),
        "reported too late: {stalled:?}"
    );
    assert_eq!(conn.current(), Some(first));
    // A fresh server process answers its first list again.
    assert_eq!(
        next_generation_despite_slow_starts(&conn).await.generation,
        2
    );
    conn.shutdown().await;
}

fn silent_server(timeout: Duration) -> McpServerSpec {
    let mut spec = McpServerSpec::new("hang", python());
    spec.args = vec![fixtures().join("hang.py").display().to_string()];
    spec.timeout = timeout;
    spec
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_server_times_out() {
    let _serial = serial().await;
    if !python_mcp_available() {
        return;
    }
    let timeout = Duration::from_secs(1);
    let started = Instant::now();
    let (silent, seen) = connect(silent_server(timeout), FAST_RETRY);
    let error = next_failure(&silent).await;
    assert_eq!(
        error,
        "mcp-client(hang): no answer to server/discover or initialize within 1000 ms"
    );
    let detected = seen.lock().unwrap()[0].0 - started;
    eprintln!("mcp: silent server reported after {detected:?} (timeout {timeout:?})");
    assert!(detected >= timeout, "reported too early: {detected:?}");
    assert!(
        detected < timeout + Duration::from_secs(2),
        "reported too late: {detected:?}"
    );
    assert_eq!(silent.current(), None);
    // It keeps retrying, and keeps failing the same way.
    assert_eq!(next_failure(&silent).await, error);
    silent.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_server_blocks_no_one() {
    let _serial = serial().await;
    if !python_mcp_available() {
        return;
    }
    let (silent, silent_seen) = connect(silent_server(Duration::from_secs(120)), FAST_RETRY);
    let (healthy, _) = connect(server(&[]), FAST_RETRY);
    let snapshot = next_generation(&healthy).await;
    assert_eq!(tool_names(&snapshot), ["echo", "add"]);
    // The silent server's initialize is still pending, and nobody waited for it.
    assert!(silent_seen.lock().unwrap().is_empty());
    // `shutdown` gives up waiting after its grace and aborts the task, so it returns within
    // the grace whatever happens: only a return before the grace shows that the stop reached
    // the pending initialize and the server was killed and reaped. (Killing and reaping
    // `hang.py` takes milliseconds; the grace, seconds, is the margin a loaded machine needs.)
    let grace = shutdown_grace();
    let shut = Instant::now();
    silent.shutdown().await;
    let took = shut.elapsed();
    eprintln!("mcp: shutdown with initialize pending took {took:?} (grace {grace:?})");
    assert!(
        took < grace,
        "shutdown waited for initialize until its grace ran out ({took:?}, grace {grace:?})"
    );
    healthy.shutdown().await;
}

/// How long `McpConnection::shutdown` waits for its task before aborting it: the constant
/// `SHUTDOWN_GRACE` of the runtime's `mcp/connection.rs`, read from that source so that the
/// test follows it.
fn shutdown_grace() -> Duration {
    let source = include_str!("../../../../host/mcp/src/connection.rs");
    let prefix = "const SHUTDOWN_GRACE: Duration = Duration::from_";
    let line = source
        .lines()
        .find_map(|l| l.trim().strip_prefix(prefix))
        .expect("mcp/connection.rs declares SHUTDOWN_GRACE");
    let (unit, rest) = line.split_once('(').expect("Duration::from_<unit>(<n>)");
    let n: u64 = rest
        .trim_end_matches(");")
        .replace('_', "")
        .parse()
        .unwrap_or_else(|e| panic!("SHUTDOWN_GRACE: {line}: {e}"));
    match unit {
        "secs" => Duration::from_secs(n),
        "millis" => Duration::from_millis(n),
        other => panic!("SHUTDOWN_GRACE in a unit this test does not read: {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicate_raw_names_are_detected() {
    let _serial = serial().await;
    if !python_mcp_available() {
        return;
    }
    let (conn, _) = connect(server(&["--duplicate-tool"]), FAST_RETRY);
    let snapshot = next_generation(&conn).await;
    assert_eq!(tool_names(&snapshot), ["echo", "add", "echo"]);
    assert_eq!(
        check_unique_tools(&snapshot.server, &snapshot.tools),
        Err(
            "mcp-client(fx): server listed tool \"echo\" more than once — invalid tool list"
                .to_owned()
        )
    );
    conn.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_program_is_reported_and_retried() {
    let _serial = serial().await;
    let spec = McpServerSpec::new("nope", "/nonexistent/mcp-server");
    let (conn, _) = connect(spec, FAST_RETRY);
    let error = next_failure(&conn).await;
    assert!(
        error.starts_with("mcp-client(nope): cannot start `/nonexistent/mcp-server`: "),
        "{error}"
    );
    assert!(next_failure(&conn)
        .await
        .starts_with("mcp-client(nope): cannot start"));
    conn.shutdown().await;
}

/// Whether a process is still running (a reaped or zombie process is not).
#[cfg(target_os = "linux")]
pub(crate) fn running(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name: `pid (comm) S ...`.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

#[cfg(target_os = "linux")]
async fn server_pid(dir: &Path, conn: &McpConnection) -> String {
    next_generation(conn).await;
    let pid = std::fs::read_to_string(dir.join("pid")).unwrap();
    assert!(running(&pid), "server {pid} should be running");
    pid
}

#[cfg(target_os = "linux")]
pub(crate) async fn wait_until_gone(pid: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while running(pid) {
        assert!(
            Instant::now() < deadline,
            "server {pid} outlived its connection"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_and_drop_kill_the_server() {
    let _serial = serial().await;
    if !python_mcp_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let spec = || {
        let mut spec = server(&[]);
        spec.env.insert(
            "MCP_FIXTURE_PID_FILE".into(),
            dir.path().join("pid").display().to_string(),
        );
        spec
    };

    let (conn, _) = connect(spec(), FAST_RETRY);
    let pid = server_pid(dir.path(), &conn).await;
    conn.shutdown().await;
    // shutdown() reaps the child before it returns.
    assert!(!running(&pid), "server {pid} survived shutdown()");

    let (conn, _) = connect(spec(), FAST_RETRY);
    let pid = server_pid(dir.path(), &conn).await;
    drop(conn);
    wait_until_gone(&pid).await;
}
