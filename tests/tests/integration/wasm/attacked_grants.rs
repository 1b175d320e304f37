//! Granted directories attacked from outside, through `serve` and the command line: a grant
//! swapped for a symbolic link after the load, a FIFO swapped in while a plugin opens a
//! file, symbolic links swapped inside the root, and a directory too large to list within a
//! call's deadline. Each race runs for a bounded time; a hang fails through the answer
//! timeout of `Served` or of the command.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::integration::support::cli::Deployment;
use crate::integration::support::serve::Served;

fn quoted(p: &Path) -> String {
    Value::String(p.display().to_string()).to_string()
}

/// Swap the names `a` and `b` atomically (`renameat2(RENAME_EXCHANGE)`).
pub(crate) fn exchange(a: &Path, b: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let a = std::ffi::CString::new(a.as_os_str().as_bytes()).unwrap();
    let b = std::ffi::CString::new(b.as_os_str().as_bytes()).unwrap();
    // SAFETY: both paths are valid NUL-terminated strings for the duration of the call.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    assert_eq!(rc, 0, "renameat2: {}", std::io::Error::last_os_error());
}

pub(crate) fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

/// Swap `a` and `b` in a tight loop until the returned flag is cleared; the thread's handle
/// yields how many swaps it made.
fn swapping(a: PathBuf, b: PathBuf) -> (Arc<AtomicBool>, std::thread::JoinHandle<u64>) {
    let running = Arc::new(AtomicBool::new(true));
    let flag = running.clone();
    let thread = std::thread::spawn(move || {
        let mut swaps = 0;
        while flag.load(Ordering::Relaxed) {
            exchange(&a, &b);
            swaps += 1;
        }
        // Back as they were, whatever the count.
        if swaps % 2 == 1 {
            exchange(&a, &b);
        }
        swaps
    });
    (running, thread)
}

/// A root holding `repo/x` ("GRANTED") and `secret/x` ("SECRET").
fn tree(root: &Path) -> (PathBuf, PathBuf) {
    let repo = root.join("repo");
    let secret = root.join("secret");
    for (dir, text) in [(&repo, "GRANTED"), (&secret, "SECRET")] {
        std::fs::create_dir(dir).unwrap();
        std::fs::write(dir.join("x"), text).unwrap();
    }
    (repo, secret)
}

fn load_reader(served: &mut Served, repo: &Path, mode: &str, path: &str) -> u64 {
    let loaded = served.ok(
        "load_plugin",
        json!({
            "name": "reader",
            "wasm": env!("GUEST_HOSTILE"),
            "config": {"mode": mode, "in": "section", "path": path},
            "grants": {"dirs": [{"host": repo, "guest": "/project"}]},
            // A busy machine must not turn a slow read into a timeout.
            "limits": {"call_timeout_ms": 10000},
        }),
    );
    loaded["id"].as_u64().unwrap()
}

/// What one render said about the file: the whole response, as text.
fn render_text(served: &mut Served) -> String {
    served.call("render", json!({})).to_string()
}

#[test]
fn a_granted_dir_swapped_for_a_symlink_after_the_load_is_not_followed() {
    let root = tempfile::tempdir().unwrap();
    let (repo, secret) = tree(root.path());
    let mut served = Served::start(&[], &root.path().join("cache"));
    // Every call reads the file, then traps: each render runs in a fresh instance.
    let id = load_reader(&mut served, &repo, "read_then_trap", "/project/x");
    assert!(render_text(&mut served).contains("read /project/x: GRANTED"));
    std::fs::rename(&repo, root.path().join("repo.orig")).unwrap();
    std::os::unix::fs::symlink(&secret, &repo).unwrap();
    for _ in 0..3 {
        let text = render_text(&mut served);
        assert!(text.contains("read /project/x: GRANTED"), "{text}");
        assert!(!text.contains("SECRET"), "{text}");
    }
    // A reload keeps the directories opened at the first load.
    let reloaded = served.ok(
        "reload_plugin",
        json!({"id": id, "wasm": env!("GUEST_HOSTILE")}),
    );
    assert!(reloaded["declarations"].is_u64(), "{reloaded}");
    let text = render_text(&mut served);
    assert!(text.contains("read /project/x: GRANTED"), "{text}");
    // What `plugins` shows is what is read.
    let plugins = served.ok("plugins", json!({}));
    let shown = plugins.to_string();
    let granted = repo.parent().unwrap().canonicalize().unwrap().join("repo");
    assert!(shown.contains(&granted.display().to_string()), "{shown}");
}

/// Render in a loop for a bounded time while `a` and `b` swap; every answer must contain
/// `expected` or `refused` and never `SECRET`.
fn race(served: &mut Served, a: PathBuf, b: PathBuf, expected: &str, refused: &str) {
    let (flag, swapper) = swapping(a, b);
    let started = Instant::now();
    let mut renders = 0;
    while started.elapsed() < Duration::from_millis(1500) || renders < 50 {
        let text = render_text(served);
        assert!(
            !text.contains("SECRET"),
            "escape after {renders} renders: {text}"
        );
        assert!(text.contains(expected) || text.contains(refused), "{text}");
        renders += 1;
    }
    flag.store(false, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(swaps > 100, "the race hardly ran: {swaps} swaps");
    eprintln!("{renders} renders, {swaps} swaps, 0 escapes");
}

#[test]
fn a_grant_and_a_symlink_swapped_in_a_loop_never_lead_out_through_serve() {
    let root = tempfile::tempdir().unwrap();
    let (repo, secret) = tree(root.path());
    // The granted directory itself swapped with a link to another directory.
    let decoy = root.path().join("decoy");
    std::os::unix::fs::symlink(&secret, &decoy).unwrap();
    let mut served = Served::start(&[], &root.path().join("cache"));
    load_reader(&mut served, &repo, "read_then_trap", "/project/x");
    race(
        &mut served,
        repo.clone(),
        decoy,
        "read /project/x: GRANTED",
        "read /project/x: GRANTED",
    );
    // A directory inside the root swapped with a link out of it: the link is never
    // followed out.
    std::fs::create_dir(repo.join("sub")).unwrap();
    std::fs::write(repo.join("sub/x"), "INSIDE").unwrap();
    std::os::unix::fs::symlink(&secret, repo.join("sub-link")).unwrap();
    let mut served = Served::start(&[], &root.path().join("cache"));
    load_reader(&mut served, &repo, "read_then_trap", "/project/sub/x");
    race(
        &mut served,
        repo.join("sub"),
        repo.join("sub-link"),
        "read /project/sub/x: INSIDE",
        "cannot read /project/sub/x",
    );
}

#[test]
fn a_fifo_swapped_in_while_a_plugin_opens_never_hangs_serve() {
    let root = tempfile::tempdir().unwrap();
    let (repo, _) = tree(root.path());
    std::fs::write(repo.join("file"), "REGULAR").unwrap();
    mkfifo(&repo.join("spare"));
    let mut served = Served::start(&[], &root.path().join("cache"));
    load_reader(&mut served, &repo, "read_file", "/project/file");
    let (flag, swapper) = swapping(repo.join("file"), repo.join("spare"));
    let started = Instant::now();
    let (mut read, mut refused) = (0, 0);
    while started.elapsed() < Duration::from_millis(1500) || read + refused < 100 {
        // `Served` fails the test when an answer takes longer than its timeout: a hang.
        let response = served.call("render", json!({}));
        let text = response.to_string();
        if text.contains("read /project/file: 7 bytes") {
            read += 1;
        } else {
            assert!(text.contains("cannot read /project/file"), "{text}");
            refused += 1;
        }
    }
    flag.store(false, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(swaps > 100, "the race hardly ran: {swaps} swaps");
    eprintln!("{read} reads, {refused} refused, {swaps} swaps, 0 hangs");
    // The server still ends when its input closes.
    drop(served);
}

#[test]
fn a_fifo_swapped_in_while_a_plugin_opens_never_hangs_the_cli() {
    let root = tempfile::tempdir().unwrap();
    let (repo, _) = tree(root.path());
    std::fs::write(repo.join("file"), "REGULAR").unwrap();
    mkfifo(&repo.join("spare"));
    let d = Deployment::new(&format!(
        "[[plugin]]\nname = \"reader\"\nwasm = {}\ngrants = {{ dirs = [{{ host = {}, guest = \"/project\" }}] }}\nconfig = {{ mode = \"read_file\", in = \"section\", path = \"/project/file\" }}\nlimits = {{ call_timeout_ms = 10000 }}\n",
        quoted(Path::new(env!("GUEST_HOSTILE"))),
        quoted(&repo)
    ));
    // Compile once, before the race.
    let warm = d.run(&["render", "--config", d.config().to_str().unwrap()]);
    assert!(
        warm.stdout.contains("read /project/file: 7 bytes"),
        "{}",
        warm.stderr
    );
    let (flag, swapper) = swapping(repo.join("file"), repo.join("spare"));
    let runs = AtomicU64::new(0);
    for _ in 0..15 {
        let run = d.run_timed(
            &["render", "--config", d.config().to_str().unwrap()],
            Duration::from_secs(60),
        );
        let run = run.unwrap_or_else(|| panic!("render hung (after {runs:?} runs)"));
        let text = format!("{}{}", run.stdout, run.stderr);
        assert!(
            text.contains("read /project/file: 7 bytes")
                || text.contains("cannot read /project/file"),
            "{text}"
        );
        runs.fetch_add(1, Ordering::Relaxed);
    }
    flag.store(false, Ordering::Relaxed);
    swapper.join().unwrap();
}

#[test]
fn listing_a_huge_granted_directory_is_bounded_by_the_call() {
    let root = tempfile::tempdir().unwrap();
    let big = root.path().join("big");
    std::fs::create_dir(&big).unwrap();
    // 200,000 entries: the listing takes longer than the deadline and more than the output
    // budget, whichever comes first.
    for i in 0..200_000 {
        std::fs::File::create(big.join(format!("entry-{i:06}"))).unwrap();
    }
    let mut served = Served::start(&[], &root.path().join("cache"));
    served.ok(
        "load_plugin",
        json!({
            "name": "lister",
            "wasm": env!("GUEST_HOSTILE"),
            "config": {"mode": "list_dir", "in": "section", "path": "/big"},
            "grants": {"dirs": [{"host": big, "guest": "/big"}]},
            "limits": {"max_output_bytes": 262144},
        }),
    );
    let started = Instant::now();
    let response = served.call("render", json!({}));
    let took = started.elapsed();
    let message = response["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("plugin \"lister\" export \"section-text\" (global)"),
        "{response}"
    );
    assert!(
        message.contains("output limit of 262144 bytes exceeded (directory listing)")
            || message.contains("deadline of 50 ms exceeded"),
        "{response}"
    );
    eprintln!("refused in {took:?}: {message}");
    // A small directory is listed whole.
    let small = root.path().join("small");
    std::fs::create_dir(&small).unwrap();
    for name in ["a", "b", "c"] {
        std::fs::write(small.join(name), name).unwrap();
    }
    let mut served = Served::start(&[], &root.path().join("cache"));
    served.ok(
        "load_plugin",
        json!({
            "name": "lister",
            "wasm": env!("GUEST_HOSTILE"),
            "config": {"mode": "list_dir", "in": "section", "path": "/small"},
            "grants": {"dirs": [{"host": small, "guest": "/small"}]},
        }),
    );
    let prompt = served.ok("render", json!({}))["prompt"].to_string();
    assert!(prompt.contains("listed /small: 3 entries"), "{prompt}");
}
