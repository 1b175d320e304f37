//! Running the real `prompt-host` binary: a deployment directory with a host.toml, a private
//! compile cache, and output capture.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// `PROMPT_HOST_PROGRESS_AFTER_MS` for the commands the tests run: a compile that takes more
/// than a second on a loaded machine would otherwise announce itself on stderr, which the
/// tests read exactly (`cli::details` tests the announcement itself).
pub const QUIET_PROGRESS: (&str, &str) = ("PROMPT_HOST_PROGRESS_AFTER_MS", "3600000");

/// The command-line binary (the same `cli::main` as `prompt-host`).
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_prompt-host-cli"))
}

/// A deployment directory holding `host.toml` and a compile cache.
pub struct Deployment {
    /// The temp dir (removed on drop).
    pub dir: tempfile::TempDir,
    /// The compile cache, when not the deployment's own `cache/` (see
    /// [`Deployment::sharing_cache`]).
    cache: Option<PathBuf>,
}

impl Deployment {
    /// A deployment whose host.toml is `toml`; `{DECLARE}`, `{PERSONA}`, `{TOOL_GUIDE}`,
    /// `{REDACTOR}`, `{RUNTIME_POLICY}`, `{CLOCK}`, `{HOSTILE}` are replaced by the guests'
    /// paths.
    pub fn new(toml: &str) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let text = toml
            .replace("{DECLARE}", env!("GUEST_DECLARE"))
            .replace("{PERSONA}", env!("GUEST_PERSONA"))
            .replace("{TOOL_GUIDE}", env!("GUEST_TOOL_GUIDE"))
            .replace("{REDACTOR}", env!("GUEST_REDACTOR"))
            .replace("{RUNTIME_POLICY}", env!("GUEST_RUNTIME_POLICY"))
            .replace("{CLOCK}", env!("GUEST_CLOCK"))
            .replace("{HOSTILE}", env!("GUEST_HOSTILE"));
        std::fs::write(dir.path().join("host.toml"), text).expect("write host.toml");
        Self { dir, cache: None }
    }

    /// Use `cache` as the compile cache (many deployments of the same plugins compile each
    /// component once).
    pub fn sharing_cache(mut self, cache: &Path) -> Self {
        self.cache = Some(cache.to_path_buf());
        self
    }

    /// The host.toml path.
    pub fn config(&self) -> PathBuf {
        self.dir.path().join("host.toml")
    }

    /// A path inside the deployment dir.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Run `prompt-host <args>` with this deployment's cache.
    pub fn run(&self, args: &[&str]) -> Run {
        run_in(self.dir.path(), self.cache.as_deref(), args, None)
    }

    /// Run, killing the command if it has not ended within `timeout` (`None`: it hung).
    pub fn run_timed(&self, args: &[&str], timeout: std::time::Duration) -> Option<Run> {
        let cache = self
            .cache
            .clone()
            .unwrap_or_else(|| self.dir.path().join("cache"));
        let child = Command::new(bin())
            .args(args)
            .env("PROMPT_HOST_CACHE_DIR", cache)
            .env(QUIET_PROGRESS.0, QUIET_PROGRESS.1)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn prompt-host");
        let pid = child.id();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(child.wait_with_output());
        });
        match rx.recv_timeout(timeout) {
            Ok(output) => {
                let Output {
                    status,
                    stdout,
                    stderr,
                } = output.expect("output");
                Some(Run {
                    code: status.code().unwrap_or(-1),
                    stdout: String::from_utf8_lossy(&stdout).into_owned(),
                    stderr: String::from_utf8_lossy(&stderr).into_owned(),
                })
            }
            Err(_) => {
                // SAFETY: kill only sends a signal to the child we started (not yet reaped:
                // its waiting thread still holds it).
                unsafe {
                    libc::kill(pid as libc::pid_t, libc::SIGKILL);
                }
                None
            }
        }
    }

    /// Run with `input` on stdin.
    pub fn run_with_input(&self, args: &[&str], input: &str) -> Run {
        run_in(self.dir.path(), self.cache.as_deref(), args, Some(input))
    }
}

/// A finished run.
pub struct Run {
    /// Exit code.
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Run {
    /// Assert success and return stdout.
    pub fn ok(&self) -> &str {
        assert_eq!(self.code, 0, "expected success; stderr:\n{}", self.stderr);
        &self.stdout
    }

    /// Stdout as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(self.ok())
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.stdout))
    }

    /// Assert a failure with `code` whose stderr contains every needle.
    pub fn fails(&self, code: i32, needles: &[&str]) {
        assert_eq!(
            self.code, code,
            "exit code; stdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        for needle in needles {
            assert!(
                self.stderr.contains(needle),
                "stderr lacks {needle:?}:\n{}",
                self.stderr
            );
        }
    }
}

fn run_in(dir: &Path, cache: Option<&Path>, args: &[&str], input: Option<&str>) -> Run {
    let cache = cache.map_or_else(|| dir.join("cache"), Path::to_path_buf);
    let mut child = Command::new(bin())
        .args(args)
        .env("PROMPT_HOST_CACHE_DIR", cache)
        .env(QUIET_PROGRESS.0, QUIET_PROGRESS.1)
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn prompt-host");
    if let Some(text) = input {
        let mut stdin = child.stdin.take().expect("stdin");
        // Write from a thread so a large input cannot deadlock against a full stdout pipe.
        let text = text.to_string();
        std::thread::spawn(move || {
            let _ = stdin.write_all(text.as_bytes());
        });
    }
    let Output {
        status,
        stdout,
        stderr,
    } = child.wait_with_output().expect("wait");
    Run {
        code: status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    }
}
