//! The JavaScript and Python example plugins (`guest-examples-js/`, `guest-examples-py/`):
//! where they are, whether their built component is up to date, and building it with the
//! example's own `build.sh`. Shared by the polyglot integration test and the polyglot bench.
//!
//! **Up to date** means: `dist/plugin.wasm` exists and its modification time is later than
//! that of every input of the build — `build.sh`, the package manifest and lock file
//! (`package.json` + `package-lock.json`, or `requirements.txt`), every file under `src/`
//! (but `__pycache__/`, which the Python build itself writes there) and every file of the
//! contract it is built against (`wit/0.1.0/`). Anything else (a missing component, an older
//! one) runs `./build.sh`, which installs the pinned toolchain on its first run (npm or PyPI)
//! and builds offline after that.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

/// Whether `PROMPT_HOST_POLYGLOT=1`: the polyglot test runs (building what it needs).
pub fn enabled() -> bool {
    std::env::var("PROMPT_HOST_POLYGLOT").as_deref() == Ok("1")
}

/// How long one `./build.sh` may take: the first run downloads a toolchain (~340 MB of npm
/// packages for JavaScript, one 17 MB wheel for Python).
pub const BUILD_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// One example plugin project.
#[derive(Debug, Clone, Copy)]
pub struct Example {
    /// The language, as its README and greeting name it.
    pub language: &'static str,
    /// Its directory, relative to the repository root.
    pub dir: &'static str,
    /// The prefix of its entries (`js` → `js:hello`, `js:scope`, `js_assembly`, `js:stamp`).
    pub prefix: &'static str,
    /// The listener's default stamp.
    pub stamp: &'static str,
    /// The plugin's name in the example's host.toml.
    pub plugin: &'static str,
    /// What its build needs, for messages.
    pub needs: &'static str,
    /// The build's inputs, relative to `dir` (directories are walked).
    pub inputs: &'static [&'static str],
}

/// `guest-examples-js/`.
pub const JAVASCRIPT: Example = Example {
    language: "JavaScript",
    dir: "guest-examples-js",
    prefix: "js",
    stamp: "JS",
    plugin: "js-example",
    needs: "Node.js >= 20 with npm; the first build installs jco and componentize-js \
            (~340 MB in node_modules) from npm",
    inputs: &[
        "build.sh",
        "package.json",
        "package-lock.json",
        "src",
        "../wit/0.1.0",
    ],
};

/// `guest-examples-py/`.
pub const PYTHON: Example = Example {
    language: "Python",
    dir: "guest-examples-py",
    prefix: "py",
    stamp: "PY",
    plugin: "py-example",
    needs: "Python >= 3.9 with venv; the first build installs componentize-py (one 17 MB \
            wheel) from PyPI",
    inputs: &["build.sh", "requirements.txt", "src", "../wit/0.1.0"],
};

/// Both examples.
pub const EXAMPLES: [Example; 2] = [JAVASCRIPT, PYTHON];

/// Directories never walked for inputs: written by the builds themselves.
const NOT_INPUTS: &[&str] = &["__pycache__", "node_modules", ".venv", "dist"];

/// The repository root (this package lives in `tests/`).
pub fn checkout() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ lives in the repository")
        .to_path_buf()
}

/// Whether a built component can be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Freshness {
    /// Newer than every input.
    UpToDate,
    /// Not built.
    Missing,
    /// This input is at least as new as the component.
    Stale(PathBuf),
}

impl std::fmt::Display for Freshness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::UpToDate => f.write_str("newer than every source and lock file"),
            Self::Missing => f.write_str("not built"),
            Self::Stale(input) => write!(f, "older than {}", input.display()),
        }
    }
}

/// The newest file among `inputs` (relative to `root`; directories walked, `NOT_INPUTS`
/// skipped) and its modification time. A listed input that is missing is an error: the
/// rule would otherwise pass a component whose sources moved.
pub fn newest_input(root: &Path, inputs: &[&str]) -> std::io::Result<(SystemTime, PathBuf)> {
    let mut newest: Option<(SystemTime, PathBuf)> = None;
    let mut pending: Vec<PathBuf> = inputs.iter().map(|i| root.join(i)).collect();
    while let Some(path) = pending.pop() {
        let metadata = std::fs::metadata(&path)
            .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        if metadata.is_dir() {
            for entry in std::fs::read_dir(&path)? {
                let entry = entry?;
                let skipped = entry
                    .file_name()
                    .to_str()
                    .is_some_and(|n| NOT_INPUTS.contains(&n));
                if !skipped {
                    pending.push(entry.path());
                }
            }
            continue;
        }
        let modified = metadata.modified()?;
        if newest.as_ref().is_none_or(|(t, _)| modified > *t) {
            newest = Some((modified, path));
        }
    }
    newest.ok_or_else(|| std::io::Error::other(format!("no input files under {}", root.display())))
}

/// Whether `component` is newer than every input (see [`newest_input`]).
pub fn freshness(component: &Path, root: &Path, inputs: &[&str]) -> std::io::Result<Freshness> {
    let built = match std::fs::metadata(component) {
        Ok(m) => m.modified()?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Freshness::Missing),
        Err(e) => return Err(e),
    };
    let (input_time, input) = newest_input(root, inputs)?;
    Ok(if built > input_time {
        Freshness::UpToDate
    } else {
        Freshness::Stale(input)
    })
}

impl Example {
    /// The project directory.
    pub fn root(&self) -> PathBuf {
        checkout().join(self.dir)
    }

    /// `dist/plugin.wasm`.
    pub fn component(&self) -> PathBuf {
        self.root().join("dist").join("plugin.wasm")
    }

    /// The example's `host.toml`.
    pub fn host_toml(&self) -> PathBuf {
        self.root().join("host.toml")
    }

    /// The greeting its host.toml configures.
    pub fn greeting(&self) -> String {
        format!("These lines come from a {} plugin.", self.language)
    }

    /// The fixed section's name.
    pub fn hello(&self) -> String {
        format!("{}:hello", self.prefix)
    }

    /// The dynamic section's name.
    pub fn scope_section(&self) -> String {
        format!("{}:scope", self.prefix)
    }

    /// The dynamic variable's name.
    pub fn variable(&self) -> String {
        format!("{}_assembly", self.prefix)
    }

    /// The listener's key.
    pub fn listener(&self) -> String {
        format!("{}:stamp", self.prefix)
    }

    /// Whether `dist/plugin.wasm` is up to date with the sources.
    pub fn freshness(&self) -> std::io::Result<Freshness> {
        freshness(&self.component(), &self.root(), self.inputs)
    }

    /// Run `./build.sh` (output to files, so a hung toolchain cannot block on a full pipe;
    /// killed after `timeout`). Returns how long it took.
    pub fn build(&self, timeout: Duration) -> Result<Duration, String> {
        let logs = std::env::temp_dir();
        let tag = format!("prompt-host-{}-build-{}", self.prefix, std::process::id());
        let out_path = logs.join(format!("{tag}.out"));
        let err_path = logs.join(format!("{tag}.err"));
        let file = |p: &Path| std::fs::File::create(p).map_err(|e| format!("{}: {e}", p.display()));
        let started = Instant::now();
        let mut child = Command::new(self.root().join("build.sh"))
            .current_dir(self.root())
            .stdin(Stdio::null())
            .stdout(file(&out_path)?)
            .stderr(file(&err_path)?)
            .spawn()
            .map_err(|e| format!("{}/build.sh: cannot run: {e}", self.dir))?;
        let status = loop {
            if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
                break Some(status);
            }
            if started.elapsed() > timeout {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
        let (stdout, stderr) = (read(&out_path), read(&err_path));
        let _ = std::fs::remove_file(&out_path);
        let _ = std::fs::remove_file(&err_path);
        match status {
            Some(s) if s.success() => Ok(started.elapsed()),
            Some(s) => Err(format!(
                "{}/build.sh failed ({s}):\nstdout:\n{stdout}\nstderr:\n{stderr}",
                self.dir
            )),
            None => Err(format!(
                "{}/build.sh did not finish within {timeout:?}:\nstdout:\n{stdout}\nstderr:\n{stderr}",
                self.dir
            )),
        }
    }

    /// The component, built first unless it is up to date; says on stderr which it did.
    pub fn ensure_built(&self) -> Result<PathBuf, String> {
        let state = self.freshness().map_err(|e| format!("{}: {e}", self.dir))?;
        if state == Freshness::UpToDate {
            eprintln!("{}: dist/plugin.wasm reused ({state})", self.dir);
        } else {
            eprintln!("{}: dist/plugin.wasm {state}: running ./build.sh", self.dir);
            let took = self.build(BUILD_TIMEOUT)?;
            eprintln!("{}: ./build.sh took {:.1} s", self.dir, took.as_secs_f64());
            match self.freshness().map_err(|e| e.to_string())? {
                Freshness::UpToDate => {}
                other => {
                    return Err(format!(
                        "{}: after ./build.sh, dist/plugin.wasm is {other}",
                        self.dir
                    ))
                }
            }
        }
        Ok(self.component())
    }
}
