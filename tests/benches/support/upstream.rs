//! The upstream side of a side-by-side run: the DeepSeek Harness system-prompt service,
//! bundled from upstream's sources by `tests/upstream/build.sh`, run by Node on the same
//! host.toml (`tests/upstream/bench.mjs`). The bundle is not part of this project, so the
//! benches run it only when `PROMPT_HOST_UPSTREAM_BUNDLE` names one; without it they say so
//! and print prompt-host's side alone.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The environment variable naming the bundle.
pub const BUNDLE_VAR: &str = "PROMPT_HOST_UPSTREAM_BUNDLE";

/// A bundle of upstream's system-prompt service and the script that times it.
pub struct Upstream {
    bundle: PathBuf,
    script: PathBuf,
}

impl Upstream {
    /// The bundle `PROMPT_HOST_UPSTREAM_BUNDLE` names, or `None` after saying why the
    /// upstream side is not run.
    pub fn from_env() -> Option<Self> {
        let Some(bundle) = std::env::var_os(BUNDLE_VAR) else {
            println!(
                "upstream side not run: set {BUNDLE_VAR} to the bundle tests/upstream/build.sh writes (tests/upstream/README.md)"
            );
            return None;
        };
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("upstream/bench.mjs");
        Some(Self {
            bundle: PathBuf::from(bundle),
            script,
        })
    }

    fn run(&self, host_toml: &Path, extra: &[&str]) -> serde_json::Value {
        let out = Command::new("node")
            .arg(&self.script)
            .arg("--bundle")
            .arg(&self.bundle)
            .arg("--host-toml")
            .arg(host_toml)
            .args(extra)
            .output()
            .expect("run node (the upstream side needs Node.js on PATH)");
        assert!(
            out.status.success(),
            "upstream bench failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("upstream bench: one JSON line")
    }

    /// One fresh Node process loading the deployment once: `(parse, load)` in ms, the load
    /// including the parse, as prompt-host's figure does.
    pub fn first_load(&self, host_toml: &Path) -> (f64, f64) {
        let v = self.run(host_toml, &["--first-load-only"]);
        (ms(&v["parse_us"]), ms(&v["load_us"]))
    }

    /// Repeated loads and steps in one warm Node process: the JSON line (`load_us`,
    /// `parse_us`, `step_us` each with `min`, `median`, `p99` in µs).
    pub fn warm(&self, host_toml: &Path, rounds: usize, steps: usize) -> serde_json::Value {
        self.run(
            host_toml,
            &[
                "--rounds",
                &rounds.to_string(),
                "--steps",
                &steps.to_string(),
            ],
        )
    }
}

/// A µs figure of the upstream script in ms.
pub fn ms(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN) / 1e3
}
