//! `prompt-host dev`: the plugin author's loop. Watch each plugin's sources and `.wasm`,
//! rebuild with the project's build command when a source changes, reload the plugin when
//! its `.wasm` changes (the old instance keeps serving if the build or the new `init`
//! fails), and after every reload render again and show how the prompt changed and where a
//! model's KV-cache reuse now stops.
//!
//! Output lines that start with `== ` mark what happened, for people and scripts alike.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::commands::{facts, load_ready_host};
use super::Target;
use prompt_host::config::{HostConfig, PluginConfig};
use prompt_host::host::{Host, PluginId};
use prompt_host::prompt::cache_prefix::{compare, section_spans};

/// Options of `dev` beyond the target.
pub struct DevOptions {
    /// How often to look for changes.
    pub interval: Duration,
    /// Stop after this many builds and reloads (for scripts and tests); `None` = never.
    pub max_rounds: Option<u32>,
}

/// One plugin being watched.
struct Watched {
    id: PluginId,
    name: String,
    wasm: PathBuf,
    build: Option<Build>,
    sources: Vec<PathBuf>,
    sources_seen: u64,
    wasm_seen: u64,
}

struct Build {
    command: String,
    dir: PathBuf,
}

/// Run `dev` until interrupted (or `max_rounds`).
pub async fn run(target: &Target, options: DevOptions) -> anyhow::Result<()> {
    let config = HostConfig::load(&target.config)?;
    let host = load_ready_host(&target.config, target.scope.as_deref()).await?;
    let mut watched = watch_list(&host, &config);
    let mut out = std::io::stdout().lock();
    for w in &watched {
        match &w.build {
            Some(b) => writeln!(
                out,
                "== watching plugin \"{}\": sources {}, build `{}`",
                w.name,
                list(&w.sources),
                b.command
            )?,
            None => writeln!(
                out,
                "== watching plugin \"{}\": {} (no build command)",
                w.name,
                w.wasm.display()
            )?,
        }
    }
    let mut stop = Stop::new()?;
    let mut prompt = render(&host, target, &mut out).await?;
    let mut rounds = 0;
    loop {
        if options.max_rounds.is_some_and(|max| rounds >= max) {
            writeln!(out, "== stopping after {rounds} round(s)")?;
            return Ok(());
        }
        tokio::select! {
            () = tokio::time::sleep(options.interval) => {}
            signal = stop.next() => {
                writeln!(out, "== stopped ({signal})")?;
                return Ok(());
            }
        }
        for w in &mut watched {
            let sources = fingerprint(&w.sources);
            if sources != w.sources_seen {
                w.sources_seen = sources;
                if let Some(build) = &w.build {
                    rounds += 1;
                    writeln!(out, "== building plugin \"{}\": {}", w.name, build.command)?;
                    out.flush()?;
                    match run_build(build, &mut stop).await {
                        Ok(()) => {}
                        Err(BuildFailure::Failed(why)) => {
                            writeln!(out, "== build failed for plugin \"{}\"; the running plugin stays loaded\n{why}", w.name)?;
                            out.flush()?;
                            continue;
                        }
                        Err(BuildFailure::Stopped(signal)) => {
                            writeln!(out, "== stopped ({signal}) during the build of plugin \"{}\"; the build was stopped", w.name)?;
                            return Ok(());
                        }
                    }
                }
            }
            let wasm = fingerprint(std::slice::from_ref(&w.wasm));
            if wasm == w.wasm_seen {
                continue;
            }
            w.wasm_seen = wasm;
            if w.build.is_none() {
                rounds += 1;
            }
            match host.reload_plugin(w.id, &w.wasm) {
                Err(e) => writeln!(
                    out,
                    "== reload of plugin \"{}\" failed; the running plugin stays loaded: {}",
                    w.name,
                    super::chain(&anyhow::Error::new(e))
                )?,
                Ok(declared) => {
                    writeln!(
                        out,
                        "== reloaded plugin \"{}\" ({} declarations)",
                        w.name,
                        declared.len()
                    )?;
                    let next = render(&host, target, &mut out).await?;
                    report_change(&host, target, &prompt, &next, &mut out).await?;
                    prompt = next;
                }
            }
            out.flush()?;
        }
    }
}

/// Render and print the prompt; on an error print it and keep the previous prompt.
async fn render(host: &Host, target: &Target, out: &mut impl Write) -> anyhow::Result<String> {
    match host.render(target.scope.as_deref(), facts(target)).await {
        Ok(rendered) => {
            writeln!(out, "== prompt ({} bytes)", rendered.prompt.len())?;
            writeln!(out, "{}", rendered.prompt)?;
            writeln!(out, "== end of prompt")?;
            out.flush()?;
            Ok(rendered.prompt)
        }
        Err(e) => {
            writeln!(
                out,
                "== render failed: {}",
                super::chain(&anyhow::Error::new(e))
            )?;
            out.flush()?;
            Ok(String::new())
        }
    }
}

/// The line diff between two prompts and the KV-cache prefix report.
async fn report_change(
    host: &Host,
    target: &Target,
    before: &str,
    after: &str,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    writeln!(out, "== diff")?;
    for line in diff_lines(before, after) {
        writeln!(out, "{line}")?;
    }
    let timings = prompt_host::prompt::Timings::new();
    let assembly = host
        .assemble(
            target.scope.as_deref(),
            facts(target).timings(std::sync::Arc::clone(&timings)),
        )
        .await?;
    let max = host.registry().config().max_prompt_bytes;
    let (_, spans) =
        section_spans(&assembly, max).map_err(|e| host.render_error(target.scope.as_deref(), e))?;
    let report = compare(before, after, &spans);
    if report.keeps_prefix {
        writeln!(
            out,
            "== cache prefix kept: the new prompt starts with the whole previous one ({} bytes)",
            report.previous_bytes
        )?;
    } else {
        writeln!(
            out,
            "== cache prefix broken at byte {} of {}; first changed section: {}",
            report.reusable_bytes,
            report.previous_bytes,
            report
                .first_changed_section
                .as_deref()
                .unwrap_or("(none: the prompt got shorter)")
        )?;
    }
    // Where the new assembly's time went: its plugin calls, the slowest named.
    let report = timings.report();
    let total: f64 = report.calls.iter().map(|c| c.micros).sum();
    let slowest = report.slowest().first().map_or(String::new(), |c| {
        format!(
            "; slowest: {} \"{}\" of plugin \"{}\" {:.0} µs",
            c.kind,
            c.name.as_deref().unwrap_or("-"),
            c.plugin,
            c.micros
        )
    });
    writeln!(
        out,
        "== timings: {} plugin calls, {total:.0} µs{slowest}",
        report.calls.len()
    )?;
    // With a `[prompt] tokenizer`, what the change costs in tokens.
    if let Some(tokenizer) = host.tokenizer() {
        let (was, now) = (tokenizer.count(before)?, tokenizer.count(after)?);
        let change = i128::try_from(now).unwrap_or(i128::MAX) - i128::try_from(was).unwrap_or(0);
        writeln!(
            out,
            "== tokens ({}): {now}, was {was} ({change:+})",
            tokenizer.name()
        )?;
    }
    Ok(())
}

/// `- removed` and `+ added` lines of a line diff (longest common subsequence); a prompt
/// too long for that gets a one-line summary.
fn diff_lines(before: &str, after: &str) -> Vec<String> {
    let a: Vec<&str> = before.lines().collect();
    let b: Vec<&str> = after.lines().collect();
    if a.len().saturating_mul(b.len()) > 4_000_000 {
        return vec![format!("(prompt changed: {} → {} lines)", a.len(), b.len())];
    }
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut lines) = (0, 0, Vec::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            // On a tie the removed line comes first, as in a unified diff.
            lines.push(format!("- {}", a[i]));
            i += 1;
        } else {
            lines.push(format!("+ {}", b[j]));
            j += 1;
        }
    }
    if lines.is_empty() {
        lines.push("(no change)".to_string());
    }
    lines
}

/// What to watch and how to build, per kept plugin (by name and scope in host.toml).
fn watch_list(host: &Host, config: &HostConfig) -> Vec<Watched> {
    let base = here_if_empty(config.path.as_deref().and_then(Path::parent)).to_path_buf();
    host.plugins()
        .into_iter()
        .filter_map(|kept| {
            let (id, name, scope) = (kept.id, kept.name, kept.scope);
            let plugin = config
                .plugins
                .iter()
                .find(|p| p.name == name && p.scope == scope)?;
            let (build, sources) = build_of(plugin, &base);
            Some(Watched {
                id,
                name,
                wasm: plugin.wasm.clone(),
                sources_seen: fingerprint(&sources),
                wasm_seen: fingerprint(std::slice::from_ref(&plugin.wasm)),
                build,
                sources,
            })
        })
        .collect()
}

/// `dir`, or `.` for a path with no directory part (`host.toml`'s parent is the empty
/// path, which no program can be run in).
fn here_if_empty(dir: Option<&Path>) -> &Path {
    match dir {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

/// The plugin's `dev` table, or what its project implies: the nearest directory above the
/// `.wasm` holding `Cargo.toml` (cargo), `package.json` (npm run build) or `build.sh`; none
/// for a plugin given by name.
fn build_of(plugin: &PluginConfig, base: &Path) -> (Option<Build>, Vec<PathBuf>) {
    if let Some(dev) = &plugin.dev {
        let dir = here_if_empty(Some(dev.dir.as_deref().unwrap_or(base))).to_path_buf();
        let build = dev.build.clone().map(|command| Build { command, dir });
        return (build, dev.watch.clone());
    }
    // A plugin given by name is an installed one: the directories above it belong to the
    // package that ships it (a `package.json`, a virtual environment), not to a project.
    if plugin.wasm_name.is_some() {
        return (None, Vec::new());
    }
    for dir in plugin.wasm.ancestors().skip(1) {
        let command = if dir.join("Cargo.toml").is_file() {
            "cargo build --release --target wasm32-wasip2"
        } else if dir.join("package.json").is_file() {
            "npm run build"
        } else if dir.join("build.sh").is_file() {
            "sh build.sh"
        } else {
            continue;
        };
        let sources = ["src", "Cargo.toml", "package.json", "build.sh"]
            .iter()
            .map(|p| dir.join(p))
            .filter(|p| p.exists())
            .collect();
        return (
            Some(Build {
                command: command.to_string(),
                dir: here_if_empty(Some(dir)).to_path_buf(),
            }),
            sources,
        );
    }
    (None, Vec::new())
}

/// The most of a build's output `dev` keeps (the end of it, shown when the build fails):
/// a build that prints without end must not fill memory.
const KEPT_BUILD_OUTPUT: usize = 64 << 10;

/// Why a build did not succeed.
enum BuildFailure {
    /// It failed; its last lines of output.
    Failed(String),
    /// `dev` was asked to stop (SIGTERM, SIGINT) while it ran; the build was stopped too.
    Stopped(&'static str),
}

/// Run a build (a contained child: see `prompt_host::child`), keeping the end of its output.
async fn run_build(build: &Build, stop: &mut Stop) -> Result<(), BuildFailure> {
    let mut command = tokio::process::Command::new("sh");
    prompt_host::child::contain(&mut command);
    command
        .arg("-c")
        .arg(&build.command)
        .current_dir(&build.dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = command.spawn().map_err(|e| {
        BuildFailure::Failed(format!(
            "cannot run `{}` in {}: {e}",
            build.command,
            build.dir.display()
        ))
    })?;
    let tail = std::sync::Arc::new(std::sync::Mutex::new(Tail::default()));
    let readers: Vec<_> = [
        child
            .stdout
            .take()
            .map(|o| Box::new(o) as Box<dyn tokio::io::AsyncRead + Send + Unpin>),
        child
            .stderr
            .take()
            .map(|e| Box::new(e) as Box<dyn tokio::io::AsyncRead + Send + Unpin>),
    ]
    .into_iter()
    .flatten()
    .map(|mut stream| {
        let tail = tail.clone();
        tokio::spawn(async move {
            use tokio::io::AsyncReadExt;
            let mut chunk = vec![0u8; 8192];
            while let Ok(n) = stream.read(&mut chunk).await {
                if n == 0 {
                    break;
                }
                if let Ok(mut tail) = tail.lock() {
                    tail.push(&chunk[..n]);
                }
            }
        })
    })
    .collect();
    let status = tokio::select! {
        status = child.wait() => status,
        signal = stop.next() => {
            stop_build(&mut child).await;
            return Err(BuildFailure::Stopped(signal));
        }
    };
    for reader in readers {
        let _ = reader.await;
    }
    let status = status.map_err(|e| BuildFailure::Failed(format!("`{}`: {e}", build.command)))?;
    if status.success() {
        return Ok(());
    }
    let text = tail.lock().map(|t| t.text()).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let shown = &lines[lines.len().saturating_sub(20)..];
    Err(BuildFailure::Failed(format!(
        "`{}` exited with {status}:\n{}",
        build.command,
        shown.join("\n")
    )))
}

/// Stop a build: SIGTERM to its process group, then SIGKILL if it has not ended in a moment.
async fn stop_build(child: &mut tokio::process::Child) {
    #[cfg(unix)]
    prompt_host::child::signal_group(child, libc::SIGTERM);
    if tokio::time::timeout(Duration::from_secs(2), child.wait())
        .await
        .is_err()
    {
        prompt_host::child::kill_group(child);
        let _ = child.wait().await;
    }
}

/// The last [`KEPT_BUILD_OUTPUT`] bytes of a build's output (stdout and stderr as they came).
#[derive(Default)]
struct Tail {
    bytes: std::collections::VecDeque<u8>,
    dropped: usize,
}

impl Tail {
    fn push(&mut self, chunk: &[u8]) {
        self.bytes.extend(chunk);
        let over = self.bytes.len().saturating_sub(KEPT_BUILD_OUTPUT);
        self.bytes.drain(..over);
        self.dropped += over;
    }

    fn text(&self) -> String {
        let (a, b) = self.bytes.as_slices();
        let mut bytes = a.to_vec();
        bytes.extend_from_slice(b);
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

/// SIGTERM and SIGINT, as a stream of their names; `dev` ends cleanly on either (stopping a
/// build that runs).
struct Stop {
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
}

impl Stop {
    fn new() -> std::io::Result<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            Ok(Self {
                term: signal(SignalKind::terminate())?,
                int: signal(SignalKind::interrupt())?,
            })
        }
        #[cfg(not(unix))]
        Ok(Self {})
    }

    async fn next(&mut self) -> &'static str {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.term.recv() => "SIGTERM",
                _ = self.int.recv() => "SIGINT",
            }
        }
        #[cfg(not(unix))]
        std::future::pending().await
    }
}

/// A number that changes when a file under `paths` changes (sizes and modification times;
/// build output and dependency directories are skipped).
fn fingerprint(paths: &[PathBuf]) -> u64 {
    let mut sum: u64 = 0;
    let mut stack: Vec<PathBuf> = paths.to_vec();
    let mut seen = 0;
    while let Some(path) = stack.pop() {
        seen += 1;
        if seen > 20_000 {
            break;
        }
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            let skip = path.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                matches!(
                    n,
                    "target" | "node_modules" | "dist" | ".git" | ".venv" | "__pycache__"
                )
            });
            if skip {
                continue;
            }
            if let Ok(entries) = std::fs::read_dir(&path) {
                stack.extend(entries.flatten().map(|e| e.path()));
            }
            continue;
        }
        let mtime = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos() as u64);
        let mut h = std::collections::hash_map::DefaultHasher::new();
        std::hash::Hash::hash(&(path.as_os_str(), meta.len(), mtime), &mut h);
        sum = sum.wrapping_add(std::hash::Hasher::finish(&h));
    }
    sum
}

fn list(paths: &[PathBuf]) -> String {
    if paths.is_empty() {
        return "none".into();
    }
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::diff_lines;

    #[test]
    fn line_diff() {
        assert_eq!(diff_lines("a\nb\nc", "a\nB\nc\nd"), ["- b", "+ B", "+ d"]);
        assert_eq!(diff_lines("x", "x"), ["(no change)"]);
    }
}
