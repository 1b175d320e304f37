//! Driving a real `prompt-host serve` over its stdio, one request at a time: the child is
//! killed when dropped, and every read has a timeout so a hang fails the test instead of
//! stalling it.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

use serde_json::{json, Value};

use crate::integration::support::cli::{bin, QUIET_PROGRESS};

/// A running `prompt-host serve`.
pub struct Served {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: Receiver<String>,
    next_id: u64,
}

/// How long one answer may take before the test fails.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(60);

impl Served {
    /// Start `prompt-host serve <args>` with its compile cache in `cache`.
    pub fn start(args: &[&str], cache: &Path) -> Self {
        Self::start_with_env(args, cache, &[])
    }

    /// [`Served::start`] with `env` added to the server's environment.
    pub fn start_with_env(args: &[&str], cache: &Path, env: &[(&str, &str)]) -> Self {
        let mut child = Command::new(bin())
            .arg("serve")
            .args(args)
            .envs(env.iter().copied())
            .env("PROMPT_HOST_CACHE_DIR", cache)
            .env(QUIET_PROGRESS.0, QUIET_PROGRESS.1)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn prompt-host serve");
        let stdin = child.stdin.take();
        let lines = pump(BufReader::new(child.stdout.take().expect("stdout")));
        let stderr = pump(BufReader::new(child.stderr.take().expect("stderr")));
        Self {
            child,
            stdin,
            lines,
            stderr,
            next_id: 1,
        }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Send one raw line (a newline is added).
    pub fn send_line(&mut self, line: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line).expect("write request");
        stdin.write_all(b"\n").expect("write newline");
        stdin.flush().expect("flush");
    }

    /// Send the request `line` and wait for the next response; `None` when the server is
    /// gone (killed) before answering.
    pub fn try_call_line(&mut self, line: &str) -> Option<Value> {
        let stdin = self.stdin.as_mut()?;
        stdin.write_all(line.as_bytes()).ok()?;
        stdin.write_all(b"\n").ok()?;
        stdin.flush().ok()?;
        match self.lines.recv_timeout(ANSWER_TIMEOUT) {
            Ok(answer) => serde_json::from_str(&answer).ok(),
            Err(RecvTimeoutError::Disconnected) => None,
            Err(RecvTimeoutError::Timeout) => panic!(
                "no answer within {ANSWER_TIMEOUT:?}; stderr:\n{}",
                self.stderr()
            ),
        }
    }

    /// The next response line, as sent.
    pub fn answer_text(&mut self) -> String {
        match self.lines.recv_timeout(ANSWER_TIMEOUT) {
            Ok(line) => line,
            Err(e) => panic!("no answer ({e:?}); stderr:\n{}", self.stderr()),
        }
    }

    /// The next response line, parsed.
    pub fn answer(&mut self) -> Value {
        match self.lines.recv_timeout(ANSWER_TIMEOUT) {
            Ok(line) => serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("response is not JSON ({e}): {line}")),
            Err(RecvTimeoutError::Timeout) => {
                panic!(
                    "no answer within {ANSWER_TIMEOUT:?}; stderr:\n{}",
                    self.stderr()
                )
            }
            Err(RecvTimeoutError::Disconnected) => panic!(
                "the server exited ({:?}); stderr:\n{}",
                self.child.try_wait(),
                self.stderr()
            ),
        }
    }

    /// Call `method` with `params`; the whole response.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_line(request.to_string().as_bytes());
        let response = self.answer();
        assert_eq!(response["id"], json!(id), "{response}");
        response
    }

    /// Call and expect a result.
    pub fn ok(&mut self, method: &str, params: Value) -> Value {
        let response = self.call(method, params);
        match response.get("result") {
            Some(result) => result.clone(),
            None => panic!("{method} failed: {response}"),
        }
    }

    /// Call and expect an error; its message.
    pub fn err(&mut self, method: &str, params: Value) -> String {
        let response = self.call(method, params);
        match response["error"]["message"].as_str() {
            Some(message) => message.to_string(),
            None => panic!("{method} did not fail: {response}"),
        }
    }

    /// Whatever the server wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.try_iter().collect::<Vec<_>>().join("\n")
    }

    /// What the server wrote to stderr until a line containing `needle` (waiting up to
    /// `timeout` for it: stderr is read by a thread of its own, so a line the server wrote
    /// before its last answer may still be on its way).
    pub fn stderr_with(&self, needle: &str, timeout: std::time::Duration) -> String {
        let deadline = std::time::Instant::now() + timeout;
        let mut lines = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.stderr.recv_timeout(left) {
                Ok(line) => {
                    let found = line.contains(needle);
                    lines.push(line);
                    if found {
                        break;
                    }
                }
                Err(_) => break,
            }
        }
        lines.join("\n")
    }

    /// Whether the process is still running.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn pump(reader: impl BufRead + Send + 'static) -> Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in reader.lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// A resident-set figure of a process, from `/proc/<pid>/status` (`VmRSS`, `VmHWM`), in
/// bytes.
pub fn memory_of(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    let line = status
        .lines()
        .find(|l| l.starts_with(field))
        .unwrap_or_else(|| panic!("{field} not in /proc/{pid}/status"));
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .expect("a number of kB");
    kib * 1024
}
