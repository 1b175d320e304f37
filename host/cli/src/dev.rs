//! `prompt-host dev`: the plugin author's loop. Watch each plugin's sources and `.wasm`,
//! rebuild with the project's build command when a source changes, reload the plugin when
//! its `.wasm` changes (the old instance keeps serving if the build or the new `init`
//! fails), and after every reload render again and show how the prompt changed and where a
//! model's KV-cache reuse now stops.
//!
//! host.toml is watched too: a change to it loads the whole deployment again — a new host
//! built from the file as it now is (every plugin loaded again, from the compile cache;
//! scopes, MCP servers and `[prompt]` settings as the file says), the watch list made
//! again from it — and the new host replaces the running one only once it is ready. A file
//! that cannot be loaded (a TOML error, a plugin whose `init` fails, a `--scope` the file
//! no longer declares) leaves the running deployment as it was.
//!
//! Output lines that start with `== ` mark what happened, for people and scripts alike.
//!
//! With `--ui`, `inspect --html`'s page is served on a loopback port too (`ui`), and drawn
//! again after every reload.

mod ui;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::commands::{facts, load_host_and_config, ready, runtime_config};
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
    /// `--ui`: serve the live page on this 127.0.0.1 port (0: any free one).
    pub ui: Option<u16>,
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
    let mut config_seen = fingerprint(std::slice::from_ref(&target.config));
    let (host, config) = load_host_and_config(&target.config, runtime_config())?;
    let mut host = ready(host, target.scope.as_deref()).await?;
    let mut watched = watch_list(&host, &config);
    let mut out = std::io::stdout().lock();
    announce(&watched, &mut out)?;
    let mut stop = Stop::new()?;
    let mut prompt = render(&host, target, &mut out).await?;
    let mut page = match options.ui {
        Some(port) => Some(Page::start(port, &host, target, &mut out).await?),
        None => None,
    };
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
        let config_now = fingerprint(std::slice::from_ref(&target.config));
        if config_now != config_seen {
            config_seen = config_now;
            rounds += 1;
            let shown = target.config.display();
            writeln!(out, "== {shown} changed: loading the deployment again")?;
            out.flush()?;
            let loaded = tokio::select! {
                loaded = load_deployment(target) => loaded,
                signal = stop.next() => {
                    writeln!(out, "== stopped ({signal})")?;
                    return Ok(());
                }
            };
            match loaded {
                Err(e) => {
                    let why = super::chain(&e);
                    writeln!(
                        out,
                        "== loading {shown} failed; the running deployment stays loaded: {why}"
                    )?;
                    if let Some(page) = &mut page {
                        page.failed(format!("loading {shown} failed: {why}"));
                    }
                }
                Ok((next_host, next_config)) => {
                    // The old host goes here: its plugins disposed, its MCP servers stopped.
                    host = next_host;
                    watched = watch_list(&host, &next_config);
                    writeln!(
                        out,
                        "== reloaded {shown} ({} plugin(s))",
                        host.plugins().len()
                    )?;
                    announce(&watched, &mut out)?;
                    let next = render(&host, target, &mut out).await?;
                    report_change(&host, target, &prompt, &next, &mut out).await?;
                    prompt = next;
                    if let Some(page) = &mut page {
                        page.redraw(&host, target, format!("{shown} reloaded"))
                            .await;
                    }
                }
            }
            out.flush()?;
            // The new watch list starts from what is on disk now: its plugins are looked
            // at from the next round on.
            continue;
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
                            if let Some(page) = &mut page {
                                page.failed(format!(
                                    "the build of plugin \"{}\" failed:\n{why}",
                                    w.name
                                ));
                            }
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
                Err(e) => {
                    let why = super::chain(&anyhow::Error::new(e));
                    writeln!(
                        out,
                        "== reload of plugin \"{}\" failed; the running plugin stays loaded: {why}",
                        w.name
                    )?;
                    if let Some(page) = &mut page {
                        page.failed(format!("the reload of plugin \"{}\" failed: {why}", w.name));
                    }
                }
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
                    if let Some(page) = &mut page {
                        page.redraw(&host, target, format!("plugin \"{}\" reloaded", w.name))
                            .await;
                    }
                }
            }
            out.flush()?;
        }
    }
}

/// The live page of `--ui`: the report drawn last, and the server that serves it.
struct Page {
    live: ui::Live,
    last: Option<super::inspect::report::Report>,
}

impl Page {
    /// Serve the page of `host`'s rendering on 127.0.0.1:`port`, and say where.
    async fn start(
        port: u16,
        host: &Host,
        target: &Target,
        out: &mut impl Write,
    ) -> anyhow::Result<Self> {
        let (drawing, last) = match super::inspect::live_report(host, target).await {
            Ok(report) => (drawing(&report, 1, None)?, Some(report)),
            Err(e) => (failed_drawing(1, &super::chain(&e)), None),
        };
        let live = ui::Live::start(port, drawing)
            .await
            .map_err(|e| anyhow::anyhow!("--ui: cannot listen on 127.0.0.1:{port}: {e}"))?;
        writeln!(out, "== ui: http://{}/", live.addr)?;
        out.flush()?;
        Ok(Self { live, last })
    }

    /// Draw `host`'s rendering after `cause`, with what changed since the last drawing.
    async fn redraw(&mut self, host: &Host, target: &Target, cause: String) {
        let generation = self.live.generation() + 1;
        match super::inspect::live_report(host, target).await {
            Ok(mut report) => {
                report.changes = self
                    .last
                    .as_ref()
                    .map(|before| super::inspect::report::Changes::between(before, &report, cause));
                match drawing(&report, generation, None) {
                    Ok(drawing) => self.live.publish(drawing),
                    Err(e) => self.failed(super::chain(&e)),
                }
                self.last = Some(report);
            }
            Err(e) => self.failed(format!("{cause}, but: {}", super::chain(&e))),
        }
    }

    /// Show `why` above the last report (which stays what the page shows).
    fn failed(&mut self, why: String) {
        let generation = self.live.generation() + 1;
        let drawn = match &self.last {
            Some(report) => drawing(report, generation, Some(why.clone())),
            None => Ok(failed_drawing(generation, &why)),
        };
        self.live
            .publish(drawn.unwrap_or_else(|_| failed_drawing(generation, &why)));
    }
}

/// The page and update of `report` at `generation`; with `error`, shown above it.
fn drawing(
    report: &super::inspect::report::Report,
    generation: u64,
    error: Option<String>,
) -> anyhow::Result<ui::Drawing> {
    use super::inspect::html;
    let mut data = html::page_data(report, Some(generation))?;
    if let (Some(error), Some(object)) = (error, data.as_object_mut()) {
        object.insert("error".into(), error.into());
    }
    let json = serde_json::to_string(&data)?;
    Ok(ui::Drawing {
        generation,
        page: std::sync::Arc::new(html::page_from_data(&json, true)),
        json: std::sync::Arc::new(json),
    })
}

/// A drawing with no report: the first rendering failed.
fn failed_drawing(generation: u64, why: &str) -> ui::Drawing {
    let data = serde_json::json!({
        "scope": "", "prompt_bytes": 0, "sections": [], "contexts": [], "tools": [], "tool_providers": [],
        "variables": [], "suppressors": [], "listeners": [], "plugins": [],
        "mcp_servers": [], "cuts": [], "budgets": {}, "live": true,
        "generation": generation, "error": why,
    });
    let json = data.to_string();
    ui::Drawing {
        generation,
        page: std::sync::Arc::new(super::inspect::html::page_from_data(&json, true)),
        json: std::sync::Arc::new(json),
    }
}

/// The `== watching plugin …` lines of a watch list.
fn announce(watched: &[Watched], out: &mut impl Write) -> std::io::Result<()> {
    for w in watched {
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
    Ok(())
}

/// host.toml loaded again into a new host, ready (its MCP servers waited for, as at the
/// start) and declaring the scope `dev` renders, with the configuration its watch list is
/// made from.
async fn load_deployment(target: &Target) -> anyhow::Result<(Host, HostConfig)> {
    let (host, config) = load_host_and_config(&target.config, runtime_config())?;
    let host = ready(host, target.scope.as_deref()).await?;
    host.check_scope(target.scope.as_deref())?;
    Ok((host, config))
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
    // So is one from a registry: its file is in the content store, whose directories
    // above (the user's cache, home) are no project either.
    if plugin.wasm_name.is_some() || plugin.oci.is_some() {
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
    let kept = std::sync::Arc::new(std::sync::Mutex::new(Kept::default()));
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
    .enumerate()
    .filter_map(|(i, stream)| stream.map(|s| (i, s)))
    .map(|(index, mut stream)| {
        let kept = kept.clone();
        tokio::spawn(async move {
            use tokio::io::AsyncReadExt;
            let mut chunk = vec![0u8; 8192];
            while let Ok(n) = stream.read(&mut chunk).await {
                if n == 0 {
                    break;
                }
                if let Ok(mut kept) = kept.lock() {
                    kept.tail.push(&chunk[..n]);
                    kept.first_error.push(index, &chunk[..n]);
                }
            }
            if let Ok(mut kept) = kept.lock() {
                kept.first_error.end(index);
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
    let (text, first_error) = kept
        .lock()
        .map(|k| (k.tail.text(), k.first_error.block.clone()))
        .unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let last = &lines[lines.len().saturating_sub(TAIL_LINES)..];
    // The first error is the cause; what a compiler prints last is mostly its summary
    // (`error: could not compile …`, counts), which alone cuts the cause off. When the
    // first error's first line is among the last lines, those say it all.
    let shown_in_tail = first_error
        .first()
        .is_none_or(|head| last.contains(&head.as_str()));
    if shown_in_tail {
        return Err(BuildFailure::Failed(format!(
            "`{}` exited with {status}:\n{}",
            build.command,
            last.join("\n")
        )));
    }
    Err(BuildFailure::Failed(format!(
        "`{}` exited with {status}; its first error:\n{}\n… and the last {} lines of its output:\n{}",
        build.command,
        first_error.join("\n"),
        last.len(),
        last.join("\n")
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

/// The lines of a failed build's output shown from its end.
const TAIL_LINES: usize = 20;

/// The most lines of a build's first error shown (a rustc error with its source snippet
/// and notes is a dozen).
const ERROR_LINES: usize = 40;

/// The most bytes of one line of the first error kept; the rest of the line is dropped
/// (a build that prints a line without end must not fill memory either).
const ERROR_LINE_BYTES: usize = 1024;

/// What `dev` keeps of a build's output while it runs.
#[derive(Default)]
struct Kept {
    tail: Tail,
    first_error: FirstError,
}

/// The first error block of a build's output: from the first line that reads as a
/// compiler's error to the blank line (or the next diagnostic) that ends it, at most
/// [`ERROR_LINES`] lines, read from the stream it started on (stdout and stderr are read
/// apart, so the other's lines do not break into it).
#[derive(Default)]
struct FirstError {
    /// Per stream (stdout, stderr), the line being read, up to [`ERROR_LINE_BYTES`].
    partial: [Vec<u8>; 2],
    /// The block, as its lines were printed (without their line ends).
    block: Vec<String>,
    /// The stream the block is being read from.
    open: Option<usize>,
    /// The block is complete (or there will be none to read): nothing more is looked at.
    done: bool,
}

impl FirstError {
    fn push(&mut self, stream: usize, chunk: &[u8]) {
        for piece in chunk.split_inclusive(|b| *b == b'\n') {
            if self.done {
                return;
            }
            let Some(partial) = self.partial.get_mut(stream) else {
                return;
            };
            let room = ERROR_LINE_BYTES.saturating_sub(partial.len());
            let (body, ends) = match piece.strip_suffix(b"\n") {
                Some(body) => (body, true),
                None => (piece, false),
            };
            partial.extend_from_slice(&body[..body.len().min(room)]);
            if ends {
                let line = std::mem::take(partial);
                self.line(stream, &line);
            }
        }
    }

    /// The stream ended: its unfinished line is a line, and a block read from it is
    /// complete.
    fn end(&mut self, stream: usize) {
        if let Some(partial) = self.partial.get_mut(stream) {
            let line = std::mem::take(partial);
            if !line.is_empty() && !self.done {
                self.line(stream, &line);
            }
        }
        if self.open == Some(stream) {
            self.done = true;
        }
    }

    fn line(&mut self, stream: usize, raw: &[u8]) {
        // Most lines of a long build say nothing of an error: looked at without a copy.
        let mentions_error = raw.windows(4).any(|w| w.eq_ignore_ascii_case(b"rror"));
        if self.open.is_none() && !mentions_error {
            return;
        }
        let text = String::from_utf8_lossy(raw);
        let text = text.strip_suffix('\r').unwrap_or(&text);
        let plain = without_escapes(text);
        match self.open {
            None if is_error_head(&plain) => {
                self.open = Some(stream);
                self.block.push(text.to_owned());
            }
            Some(open) if open == stream => {
                let ends = plain.trim().is_empty()
                    || is_error_head(&plain)
                    || is_warning_head(&plain)
                    || self.block.len() >= ERROR_LINES;
                if ends {
                    self.done = true;
                } else {
                    self.block.push(text.to_owned());
                }
            }
            _ => {}
        }
    }
}

/// Whether a line (without colour escapes) starts a compiler's error: `error[E0425]: …` and
/// `error: …` (rustc, cargo, clang, npm), `Error: …` (Node), `file:3:5: error: …` (gcc,
/// clang), `file(3,5): error TS2322: …` (tsc).
fn is_error_head(line: &str) -> bool {
    let start = line.trim_start();
    let lead = start.get(..6).unwrap_or("");
    (lead.eq_ignore_ascii_case("error:") || lead.eq_ignore_ascii_case("error["))
        || [": error:", ": error[", ": error TS", ": fatal error:"]
            .iter()
            .any(|mark| line.contains(mark))
}

/// Whether a line starts a warning (which ends an error block printed before it).
fn is_warning_head(line: &str) -> bool {
    let lead = line.get(..8).unwrap_or("");
    lead.eq_ignore_ascii_case("warning:") || lead.eq_ignore_ascii_case("warning[")
}

/// `line` without ANSI escape sequences (`CARGO_TERM_COLOR=always` colours `error`).
fn without_escapes(line: &str) -> std::borrow::Cow<'_, str> {
    if !line.contains('\u{1b}') {
        return std::borrow::Cow::Borrowed(line);
    }
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        // CSI: ESC [ parameters… final byte (@ to ~).
        if chars.peek() == Some(&'[') {
            chars.next();
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
        }
    }
    std::borrow::Cow::Owned(out)
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
    use super::{diff_lines, FirstError, ERROR_LINES};

    fn first_error(chunks: &[(usize, &str)]) -> Vec<String> {
        let mut first = FirstError::default();
        for (stream, text) in chunks {
            first.push(*stream, text.as_bytes());
        }
        first.end(0);
        first.end(1);
        first.block
    }

    #[test]
    fn the_first_error_block_is_kept_whole_and_alone() {
        let rustc = "   Compiling probe v0.1.0\n\
                     warning: unused variable: `y`\n\n\
                     error[E0425]: cannot find value `x` in this scope\n \
                     --> src/lib.rs:3:5\n  |\n3 |     x\n  |     ^ not found in this scope\n\n\
                     error[E0308]: mismatched types\n\nerror: could not compile `probe`\n";
        // Cut anywhere, and with the other stream's lines in between.
        let (a, b) = rustc.split_at(90);
        assert_eq!(
            first_error(&[(1, a), (0, "progress\n"), (1, b)]),
            [
                "error[E0425]: cannot find value `x` in this scope",
                " --> src/lib.rs:3:5",
                "  |",
                "3 |     x",
                "  |     ^ not found in this scope",
            ]
        );
        // Coloured, as with CARGO_TERM_COLOR=always; tsc's and gcc's forms.
        assert_eq!(
            first_error(&[(
                1,
                "\u{1b}[1m\u{1b}[31merror\u{1b}[0m: linking failed\nnote: x\n"
            )]),
            [
                "\u{1b}[1m\u{1b}[31merror\u{1b}[0m: linking failed",
                "note: x"
            ]
        );
        assert_eq!(
            first_error(&[(0, "src/a.ts(3,5): error TS2322: no\n")]),
            ["src/a.ts(3,5): error TS2322: no"]
        );
        assert!(first_error(&[(0, "all good\nerrors: 0 is fine\n")]).is_empty());
        // Bounded in lines and in bytes per line.
        let long = format!("error: x\n{}", "y\n".repeat(100));
        assert_eq!(first_error(&[(1, &long)]).len(), ERROR_LINES);
        let wide = format!("error: {}\n", "z".repeat(1 << 20));
        assert_eq!(first_error(&[(1, &wide)])[0].len(), super::ERROR_LINE_BYTES);
    }

    #[test]
    fn line_diff() {
        assert_eq!(diff_lines("a\nb\nc", "a\nB\nc\nd"), ["- b", "+ B", "+ d"]);
        assert_eq!(diff_lines("x", "x"), ["(no change)"]);
    }
}
