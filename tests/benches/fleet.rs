//! Sessions past one machine, through the release binary's `serve` with the reference
//! deployment: (1) resident memory after 10,000 sessions were each stepped once and left
//! idle, per store, beside a server told to keep them all; (2) steps per second and their
//! p99 with 1, 2 and 4 `serve` processes stepping sessions of one store side by side —
//! PostgreSQL when `PROMPT_HOST_BENCH_POSTGRES` names a database (`scripts/postgres` starts
//! one), and SQLite beside it. `cargo bench -p prompt-host-tests --bench fleet`
//! (`-- quick`: 2,000 sessions, 4 s per fleet; `-- memory`: the first part alone). docs/benchmarks.md §16 has the figures.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use prompt_host_tests::reference::{self, Guests, Reference};
use serde_json::{json, Value};

fn cli() -> &'static str {
    env!("CARGO_BIN_EXE_prompt-host-cli")
}

/// A `serve` process of the reference deployment, driven over its stdio.
struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Server {
    /// A server of the deployment at `config`; `store` is its `PROMPT_HOST_STORE` (`None`:
    /// sessions are log files named by path).
    fn start(config: &Path, cache: &Path, store: Option<&str>, extra: &[&str]) -> Self {
        let mut command = Command::new(cli());
        command
            .args(["serve", "--config", config.to_str().expect("utf-8")])
            .args(extra)
            .env("PROMPT_HOST_CACHE_DIR", cache)
            .env_remove("PROMPT_HOST_STORE");
        if let Some(store) = store {
            command.env("PROMPT_HOST_STORE", store);
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("serve");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        Self {
            child,
            stdin,
            stdout,
            next_id: 0,
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// One step on `session` (an id in the server's store); its answer.
    fn step(&mut self, session: &str) -> Value {
        self.next_id += 1;
        let request = step_request(self.next_id, session);
        self.send(request)
    }

    /// `close_session` on `session`.
    fn close(&mut self, session: &str) -> Value {
        self.next_id += 1;
        self.send(
            json!({"jsonrpc": "2.0", "id": self.next_id, "method": "close_session",
                         "params": {"session": session}}),
        )
    }

    fn send(&mut self, request: Value) -> Value {
        let stdin = self.stdin.as_mut().expect("stdin");
        stdin
            .write_all(format!("{request}\n").as_bytes())
            .expect("send");
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("answer");
        let answer: Value = serde_json::from_str(&line).expect("JSON answer");
        assert!(answer.get("result").is_some(), "{answer}");
        answer
    }

    /// One step on each of `sessions`, sent from a thread while the answers are read here.
    fn step_each(&mut self, sessions: Vec<String>) {
        let mut writer = self.stdin.take().expect("stdin");
        let count = sessions.len();
        let first = self.next_id + 1;
        self.next_id += count as u64;
        let sender = std::thread::spawn(move || {
            for (i, session) in sessions.iter().enumerate() {
                let request = step_request(first + i as u64, session);
                writer
                    .write_all(format!("{request}\n").as_bytes())
                    .expect("send");
            }
            writer
        });
        let mut line = String::new();
        for _ in 0..count {
            line.clear();
            self.stdout.read_line(&mut line).expect("answer");
            assert!(line.contains("\"result\""), "{line}");
        }
        self.stdin = Some(sender.join().expect("sender"));
    }

    fn rss_mb(&self) -> f64 {
        support::resident_kib(self.pid(), "VmRSS") as f64 / 1024.0
    }

    fn open_fds(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid()))
            .map(|d| d.count())
            .unwrap_or(0)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

fn step_request(id: u64, session: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "step", "params": {
        "session": session,
        "scope": reference::agent(0),
        "facts": {"model": "deepseek-v4", "cwd": "/work/project"},
        "user": ["Fix the failing test in tests/cli.rs."],
    }})
}

/// The stores measured: a name for the report and the store's name (`PROMPT_HOST_STORE`;
/// `None`: log files in `dir`, named by path).
fn stores(dir: &Path, with_files: bool) -> Vec<(&'static str, Option<String>)> {
    let mut stores = Vec::new();
    if with_files {
        stores.push(("file", None));
    }
    stores.push((
        "sqlite",
        Some(format!("sqlite:{}", dir.join("fleet.db").display())),
    ));
    match std::env::var("PROMPT_HOST_BENCH_POSTGRES") {
        Ok(url) => stores.push(("postgres", Some(url))),
        Err(_) => println!(
            "PostgreSQL not measured: PROMPT_HOST_BENCH_POSTGRES names no database (scripts/postgres starts one)"
        ),
    }
    stores
}

/// A session unique to this run: an id in the store, or a log file in `logs` (`None`).
fn id(store: Option<&str>, logs: &Path, tag: &str, i: usize) -> String {
    let id = format!("{}-{tag}-{i}", std::process::id());
    match store {
        Some(_) => id,
        None => logs.join(format!("{id}.jsonl")).display().to_string(),
    }
}

/// Resident memory of one server after `n` sessions were each stepped once: (MB with
/// none, MB after, file descriptors after).
fn idle_memory(
    deployment: &Deployment,
    store: Option<&str>,
    tag: &str,
    n: usize,
    extra: &[&str],
) -> (f64, f64, usize) {
    let d = deployment;
    let mut server = Server::start(&d.config, &d.cache, store, extra);
    // Warmed up: the plugins' first calls and the store's connection made.
    server.step(&id(store, &d.logs, &format!("{tag}-warm"), 0));
    std::thread::sleep(Duration::from_millis(300));
    let none = server.rss_mb();
    let sessions: Vec<String> = (0..n).map(|i| id(store, &d.logs, tag, i)).collect();
    // Eight at a time, as a few clients would: a burst of hundreds in flight would measure
    // the burst's peak, which the allocator keeps, not what idle sessions hold.
    for chunk in sessions.chunks(8) {
        server.step_each(chunk.to_vec());
    }
    std::thread::sleep(Duration::from_millis(500));
    (none, server.rss_mb(), server.open_fds())
}

/// `processes` servers on `store`, each stepping its own 8 sessions round robin for
/// `duration`: steps per second in all, and the median and p99 of a step in ms.
fn fleet(
    deployment: &Deployment,
    store: Option<&str>,
    processes: usize,
    duration: Duration,
) -> (f64, f64, f64) {
    let runs: Vec<_> = (0..processes)
        .map(|p| {
            let d = deployment.clone();
            let store = store.map(str::to_string);
            let tag = format!("fleet-{processes}-{p}");
            std::thread::spawn(move || {
                let store = store.as_deref();
                let mut server = Server::start(&d.config, &d.cache, store, &[]);
                server.step(&id(store, &d.logs, &format!("{tag}-warm"), 0));
                let mut times = Vec::new();
                let started = Instant::now();
                let mut i = 0;
                while started.elapsed() < duration {
                    let t = Instant::now();
                    server.step(&id(store, &d.logs, &tag, i % 8));
                    times.push(t.elapsed().as_secs_f64() * 1e3);
                    i += 1;
                }
                (times, started.elapsed())
            })
        })
        .collect();
    let mut all = Vec::new();
    let mut steps_per_second = 0.0;
    for run in runs {
        let (times, took) = run.join().expect("fleet member");
        steps_per_second += times.len() as f64 / took.as_secs_f64();
        all.extend(times);
    }
    let (_, median, p99) = support::min_median_p99(&mut all);
    (steps_per_second, median, p99)
}

/// Picking a session of `turns` steps up through one server: the median ms of a step on it
/// while the server holds it (hot), and of `close_session` then a step (cold: the log read
/// and replayed again), 15 rounds each.
fn pickup(deployment: &Deployment, store: Option<&str>, turns: usize) -> (f64, f64) {
    let d = deployment;
    let mut server = Server::start(&d.config, &d.cache, store, &[]);
    let session = id(store, &d.logs, &format!("pickup-{turns}"), 0);
    for _ in 0..turns / 500 {
        server.step_each(vec![session.clone(); 500]);
    }
    server.step_each(vec![session.clone(); turns % 500]);
    let (mut hot, mut cold) = (Vec::new(), Vec::new());
    for _ in 0..15 {
        let t = Instant::now();
        server.step(&session);
        hot.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        server.close(&session);
        server.step(&session);
        cold.push(t.elapsed().as_secs_f64() * 1e3);
    }
    (support::median(&mut hot), support::median(&mut cold))
}

/// Where the reference deployment was written: its host.toml, compile cache and a
/// directory for log files.
#[derive(Clone)]
struct Deployment {
    config: PathBuf,
    cache: PathBuf,
    logs: PathBuf,
}

fn main() {
    let quick = std::env::args().any(|a| a == "quick");
    let memory_only = std::env::args().any(|a| a == "memory");
    let (sessions, kept, duration) = if quick {
        (2_000, 500, Duration::from_secs(4))
    } else {
        (10_000, 2_000, Duration::from_secs(10))
    };
    let dir =
        tempfile::tempdir_in(Path::new(env!("CARGO_MANIFEST_DIR")).join("../target")).expect("dir");
    let cache = dir.path().join("cache");
    let config = Reference::new().write_deployment(dir.path(), &Guests::load(), &cache);
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).expect("logs");
    let d = Deployment {
        config,
        cache,
        logs,
    };
    // The components compiled into the cache first, so no server below measures that.
    Server::start(&d.config, &d.cache, None, &[]).step(&id(None, &d.logs, "compile", 0));

    println!("## serve: resident memory after N sessions were each stepped once and left idle");
    println!("| store | sessions | MB with none | MB after | MB per 1,000 | fds after |");
    println!("|---|---|---|---|---|---|");
    for (store, name) in stores(dir.path(), true) {
        let name = name.as_deref();
        let (none, after, fds) = idle_memory(&d, name, "idle", sessions, &[]);
        println!(
            "| {store} | {sessions} (default cache) | {none:.1} | {after:.1} | {:.1} | {fds} |",
            (after - none) / sessions as f64 * 1000.0
        );
        let keep_all = [
            "--session-cache-bytes",
            "100000000000",
            "--max-sessions",
            "15000",
        ];
        let (none, after, fds) = idle_memory(&d, name, "kept", kept, &keep_all);
        println!(
            "| {store} | {kept} (all kept) | {none:.1} | {after:.1} | {:.1} | {fds} |",
            (after - none) / kept as f64 * 1000.0
        );
    }

    if memory_only {
        return;
    }
    println!();
    println!("## serve: a step on a session of N steps, held (hot) and picked up again (cold)");
    println!("| store | steps | hot ms | cold ms (close_session + step) |");
    println!("|---|---|---|---|");
    let turns: &[usize] = if quick {
        &[100, 500]
    } else {
        &[100, 1_000, 2_000]
    };
    for (store, name) in stores(dir.path(), true) {
        for &n in turns {
            let (hot, cold) = pickup(&d, name.as_deref(), n);
            println!("| {store} | {n} | {hot:.2} | {cold:.2} |");
        }
    }

    println!();
    println!("## serve: N processes stepping 8 sessions each, side by side, for {duration:?}");
    println!("| store | processes | steps/s in all | median ms | p99 ms |");
    println!("|---|---|---|---|---|");
    for (store, name) in stores(dir.path(), false) {
        for processes in [1, 2, 4] {
            let (rate, median, p99) = fleet(&d, name.as_deref(), processes, duration);
            println!("| {store} | {processes} | {rate:.0} | {median:.2} | {p99:.2} |");
        }
    }
}
