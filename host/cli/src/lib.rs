//! The `prompt-host` command line. One file per subcommand under `cli/`; `main.rs` only
//! calls `cli::main`.
//!
//! Exit codes: 0 success; 1 configuration, plugin, assembly or render error (the whole error
//! chain on stderr, naming plugin, section and scope); 2 usage error.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

mod call;
mod check;
mod commands;
mod conversation;
mod dev;
mod inspect;
mod log_level;
mod new;
mod oci;
mod panics;
mod prefix;
mod route_args;
pub mod serve;
mod sessions;
mod store_flag;
mod telemetry;

/// prompt-host: assemble an agent's system prompt from sandboxed Wasm plugins.
#[derive(Debug, Parser)]
#[command(name = "prompt-host", bin_name = "prompt-host", version, about)]
pub struct Cli {
    /// Plugin output shown on stderr: its log lines at this level or more severe (stdout and
    /// stderr lines count as info).
    #[arg(long, global = true, value_enum, default_value = "warn")]
    pub log_level: log_level::LogLevel,
    /// The session store a bare session name is an id in (`sqlite:PATH` or
    /// `postgres://USER@HOST/DB`), over host.toml's `[sessions] store`; `file:PATH` still
    /// names a log file.
    #[arg(
        long,
        global = true,
        env = "PROMPT_HOST_STORE",
        value_name = "STORE",
        hide_env_values = true
    )]
    pub store: Option<String>,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// `--tokenizer T` / `--tokens`: the token counts `assemble` and `render --json` add.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Counting {
    /// Add `"tokens"`: the whole prompt, each section, each runtime context and each tool
    /// schema counted with this tokenizer (o200k_base, cl100k_base, or a tokenizer.json
    /// path relative to the working directory).
    #[arg(long, value_name = "TOKENIZER", conflicts_with = "tokens")]
    pub tokenizer: Option<String>,
    /// Add `"tokens"`, counted with host.toml's `[prompt] tokenizer`.
    #[arg(long)]
    pub tokens: bool,
    /// Count each tool schema as this route's requests carry it (chat-completions,
    /// anthropic-messages, openai-responses) instead of as the schema itself.
    #[arg(long, value_name = "ROUTE", value_parser = route_args::parse_route)]
    pub tools_as: Option<prompt_host::session::route::RouteName>,
}

/// The subcommands (the contract external tools use; see docs/cli.md).
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the assembly as JSON: sections, contexts, tools and variables.
    Assemble {
        /// Where and for whom.
        #[command(flatten)]
        target: Target,
        /// How the assembly is counted in tokens (adds `"tokens"`).
        #[command(flatten)]
        counting: Counting,
    },
    /// Print the rendered system prompt (or `{"prompt","context"}` with --json).
    Render {
        /// Where and for whom.
        #[command(flatten)]
        target: Target,
        /// Print `{"prompt": …, "context": …}` instead of the bare prompt.
        #[arg(long)]
        json: bool,
        /// With `--json`, how the rendering is counted in tokens (adds `"tokens"`).
        #[command(flatten)]
        counting: Counting,
    },
    /// Run one step against a session log and print the model request JSON.
    Step {
        /// Where and for whom.
        #[command(flatten)]
        target: Target,
        /// The session: a log file (JSON lines; created by the step's first write when
        /// missing), `sqlite:PATH#ID`, `postgres://USER@HOST/DB#ID`, or an id within the
        /// configured store (`--store`, `[sessions] store`).
        #[arg(long, env = "PROMPT_HOST_SESSION")]
        session: PathBuf,
        /// Which provider API the request is prepared for, and how.
        #[command(flatten)]
        route: route_args::RouteArgs,
        /// Ask for in-history system updates (as `--system-updates in-history`).
        #[arg(long)]
        in_history: bool,
        /// This step starts a new request series (the head is re-baselined).
        #[arg(long)]
        starts_series: bool,
        /// A user message for this step (repeatable).
        #[arg(long = "user", value_name = "TEXT")]
        users: Vec<String>,
        /// Also count the request as its route sends it (system prompt, tools, messages) with
        /// host.toml's `[prompt] tokenizer`, on standard error.
        #[arg(long)]
        tokens: bool,
        /// As `--tokens`, with this tokenizer: `o200k_base`, `cl100k_base` or a
        /// `tokenizer.json` path.
        #[arg(long, value_name = "TOKENIZER", conflicts_with = "tokens")]
        tokenizer: Option<String>,
    },
    /// Append the model's reply to a session log: text, reasoning, tool calls.
    Assistant {
        /// The session: a log file, `sqlite:PATH#ID`, `postgres://…#ID`, or an id within
        /// `--store`'s store.
        #[arg(long, env = "PROMPT_HOST_SESSION")]
        session: PathBuf,
        /// The reply's text.
        #[arg(long)]
        text: Option<String>,
        /// The reasoning the model showed.
        #[arg(long)]
        reasoning: Option<String>,
        /// A tool call as JSON `{"id", "name", "arguments"}` (repeatable); `arguments` is an
        /// object or the JSON text of one.
        #[arg(long = "tool-call", value_name = "JSON")]
        tool_calls: Vec<String>,
        /// The provider's own reply instead (a chat completion or its `choices[0].message`,
        /// an Anthropic Message, a Responses response): inline JSON, or `@FILE`.
        #[arg(long, value_name = "JSON", conflicts_with_all = ["text", "reasoning", "tool_calls"])]
        reply: Option<String>,
        /// The route whose provider sent `--reply` (default: the route of the log's newest
        /// step).
        #[arg(long, value_name = "NAME", value_parser = route_args::parse_route, requires = "reply")]
        route: Option<prompt_host::session::route::RouteName>,
    },
    /// Append a tool's result to a session log; it must answer an open tool call.
    ToolResult {
        /// The session: a log file, `sqlite:PATH#ID`, `postgres://…#ID`, or an id within
        /// `--store`'s store.
        #[arg(long, env = "PROMPT_HOST_SESSION")]
        session: PathBuf,
        /// The id of the tool call it answers.
        #[arg(long = "call-id")]
        call_id: String,
        /// What the tool returned.
        #[arg(long)]
        content: String,
        /// The tool failed.
        #[arg(long)]
        error: bool,
    },
    /// Replace a range of a session's surface by a summary (compaction): the log keeps what
    /// it replaced, the next step's request carries the summary in its place. Prints what
    /// was written and how much of the request's cached prefix is kept.
    Compact {
        /// The session: a log file, `sqlite:PATH#ID`, `postgres://…#ID`, or an id within
        /// `--store`'s store.
        #[arg(long, env = "PROMPT_HOST_SESSION")]
        session: PathBuf,
        /// The summary (text your model wrote), or `@FILE` to read it from a file; at most
        /// 1 MiB.
        #[arg(long, value_name = "TEXT")]
        summary: String,
        /// The first surface node to replace (an event seq).
        #[arg(long, requires = "end_seq", conflicts_with = "keep_turns")]
        start_seq: Option<u64>,
        /// The last surface node to replace (an event seq).
        #[arg(long, requires = "start_seq")]
        end_seq: Option<u64>,
        /// Instead of a range: replace everything after the system prompt but the newest
        /// this many turns.
        #[arg(long, value_name = "N", required_unless_present = "start_seq")]
        keep_turns: Option<u32>,
    },
    /// Operate session stores: list, export, import, copy, prune, migrate.
    Sessions {
        /// What to do.
        #[command(subcommand)]
        command: sessions::SessionsCommand,
    },
    /// Print the request a past step returned, rebuilt from the session log alone.
    Replay {
        /// The session: a log file, `sqlite:PATH#ID`, `postgres://…#ID`, or an id within
        /// `--store`'s store.
        #[arg(long, env = "PROMPT_HOST_SESSION")]
        session: PathBuf,
        /// The step (default: the newest completed one).
        #[arg(long)]
        step: Option<u64>,
    },
    /// Show who contributed what, where, and how big; optionally compare with a previous
    /// rendering to see where a model's KV-cache reuse stops.
    Inspect {
        /// Where and for whom.
        #[command(flatten)]
        target: Target,
        /// A previous `render --json`, `assemble` or `step` output, or a plain prompt text.
        #[arg(long, value_name = "PREVIOUS")]
        against: Option<PathBuf>,
        /// A session log: show where its newest request's prompt-cache breakpoints are and
        /// the cached-token counts its providers reported, beside the prefix report.
        #[arg(long, value_name = "LOG")]
        session: Option<PathBuf>,
        /// Count tokens with this tokenizer: o200k_base, cl100k_base, or a tokenizer.json
        /// path (relative to the working directory). Default: host.toml's `[prompt]
        /// tokenizer`, when it sets one.
        #[arg(long, value_name = "TOKENIZER")]
        tokenizer: Option<String>,
        /// Show where the assembly's time went: each plugin call (slowest first), the
        /// assemble and render phases, each plugin's instantiation and `init`, and the
        /// compile cache's hits and misses.
        #[arg(long)]
        timings: bool,
        /// Print the report as JSON instead of the tables.
        #[arg(long, conflicts_with = "html")]
        json: bool,
        /// Write the report as one self-contained HTML page (no network, no external
        /// assets) to this file: the prompt coloured by plugin, tokens against the budgets,
        /// the tools, listeners, variables and plugins.
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
        /// The model's context window, in tokens: the totals by category are shown as
        /// shares of it (needs a tokenizer).
        #[arg(long, value_name = "TOKENS")]
        context_window: Option<usize>,
        /// Count each tool schema as this route's requests carry it (chat-completions,
        /// anthropic-messages, openai-responses). Default: the route of the `--session`
        /// log, else the schema itself.
        #[arg(long, value_name = "ROUTE", value_parser = route_args::parse_route)]
        tools_as: Option<prompt_host::session::route::RouteName>,
    },
    /// Watch the plugins' sources and `.wasm` files, rebuild and hot-reload a changed plugin,
    /// and show how the prompt changed (diff and KV-cache prefix report).
    Dev {
        /// Where and for whom.
        #[command(flatten)]
        target: Target,
        /// How often to look for changes, in milliseconds.
        #[arg(long, default_value_t = 300)]
        interval_ms: u64,
        /// Stop after this many builds and reloads (default: run until interrupted).
        #[arg(long)]
        max_rounds: Option<u32>,
        /// Also serve `inspect --html`'s page on a loopback port, drawn again after every
        /// reload with what the change did (sections added, removed and changed, the token
        /// delta, whether the cache prefix survived).
        #[arg(long)]
        ui: bool,
        /// The port `--ui` listens on, on 127.0.0.1 (0: any free port; the address is
        /// printed).
        #[arg(long, value_name = "PORT", default_value_t = 0, requires = "ui")]
        ui_port: u16,
    },
    /// Print the body of an MCP server's skill (its `SKILL.md`), read from the server now
    /// and checked against the skills index (size, digest, frontmatter name); its digest on
    /// standard error.
    Skill {
        /// The host.toml whose `[[mcp]]` server offers the skill.
        #[arg(long)]
        config: PathBuf,
        /// The `[[mcp]]` server's name.
        #[arg(long)]
        server: String,
        /// The scope the server is connected into (default: global).
        #[arg(long)]
        scope: Option<String>,
        /// The skill's name, as the index lists it.
        name: String,
    },
    /// Load one plugin alone, call one export, and print its result, its log lines and the
    /// time taken.
    Call {
        /// The component file, or the name of a plugin on the plugin search path.
        plugin: PathBuf,
        /// `init`, `section-text`, `context-text`, `variable`, `tools` or `on-assemble`.
        export: String,
        /// The entry: section, context or variable name, tool-provider or listener key.
        name: Option<String>,
        /// JSON handed to the plugin's `init` (default `{}`).
        #[arg(long, default_value = "{}")]
        config: String,
        /// Load the plugin into this scope (default: global).
        #[arg(long)]
        scope: Option<String>,
        /// A caller fact `KEY=VALUE` (repeatable).
        #[arg(long = "fact", value_name = "K=V", value_parser = parse_fact)]
        facts: Vec<(String, String)>,
        /// For `on-assemble`: the assembly to work on, as `prompt-host assemble` prints it —
        /// inline JSON (`'{"sections":[…]}'`) or a file holding it (default: empty).
        #[arg(long, value_name = "JSON|FILE")]
        assembly: Option<String>,
    },
    /// Validate a plugin component and list what it declares.
    Check {
        /// The component file, or the name of a plugin on the plugin search path.
        plugin: PathBuf,
        /// JSON handed to the plugin's `init` (default `{}`).
        #[arg(long, default_value = "{}")]
        config: String,
        /// Grant a read-only directory for `init`: `HOST:GUEST` (repeatable).
        #[arg(long = "grant-dir", value_name = "HOST:GUEST")]
        grant_dirs: Vec<String>,
        /// Grant an environment variable (repeatable).
        #[arg(long = "grant-env", value_name = "NAME")]
        grant_env: Vec<String>,
    },
    /// Write a new plugin project (Rust, JavaScript or Python) that builds on its own.
    New(new::NewArgs),
    /// Fetch a plugin from an OCI registry into the content store (verified by digest) and
    /// print its digests as JSON.
    Pull {
        /// `oci://REGISTRY/REPOSITORY:TAG` or `…@sha256:DIGEST`.
        reference: String,
        /// Registry settings.
        #[command(flatten)]
        registry: oci::RegistryArgs,
    },
    /// Publish a plugin component to an OCI registry as a Wasm OCI artifact, annotated from
    /// its project (title, version, description, source); print the digests as JSON.
    Push {
        /// The component file.
        file: PathBuf,
        /// `oci://REGISTRY/REPOSITORY:TAG`.
        reference: String,
        /// Registry settings.
        #[command(flatten)]
        registry: oci::RegistryArgs,
        /// The plugin's project (its Cargo.toml or package.json, or their directory);
        /// default: the nearest one above FILE.
        #[arg(long)]
        project: Option<PathBuf>,
        /// An annotation `KEY=VALUE` on the manifest (repeatable; overrides the project's).
        #[arg(long = "annotation", value_name = "KEY=VALUE")]
        annotations: Vec<String>,
    },
    /// Check that each `oci://` plugin of host.toml still names what its lock file recorded
    /// (exit 1 when a tag moved or is not locked); with --update, resolve them again and
    /// rewrite the lock.
    Lock {
        /// The host.toml whose lock (host.lock beside it) is checked.
        #[arg(long)]
        config: PathBuf,
        /// Resolve every tag again, pull what changed and rewrite the lock.
        #[arg(long)]
        update: bool,
    },
    /// Serve JSON-RPC 2.0 over stdio, one request per line.
    Serve {
        /// Start from this host.toml (otherwise an empty default host).
        #[arg(long)]
        config: Option<PathBuf>,
        /// The longest request line accepted, in bytes; a longer one is answered with an
        /// error (-32600) and skipped without being buffered.
        #[arg(long, value_name = "BYTES", default_value_t = serve::DEFAULT_MAX_REQUEST_BYTES,
              value_parser = parse_positive)]
        max_request_bytes: usize,
        /// Requests taken in and not yet answered (a batch counts once); the next request
        /// is read when one is answered. `$/cancelRequest` is handled as soon as it is read.
        #[arg(long, value_name = "N", default_value_t = serve::DEFAULT_MAX_INFLIGHT,
              value_parser = parse_positive)]
        max_inflight: usize,
        /// Bytes of answers waiting to be written (a client not reading them) before requests
        /// stop being read; notifications are dropped meanwhile.
        #[arg(long, value_name = "BYTES", default_value_t = serve::DEFAULT_MAX_OUTPUT_BYTES,
              value_parser = parse_positive)]
        max_output_bytes: usize,
        /// Sessions held at once (a log file's holds a file descriptor): at the limit, the
        /// least recently used idle one is closed to make room; a request is refused only
        /// when every session held is busy.
        #[arg(long, value_name = "N", default_value_t = serve::DEFAULT_MAX_SESSIONS,
              value_parser = parse_positive)]
        max_sessions: usize,
        /// What the idle sessions kept between requests may hold, measured as the bytes of
        /// their logs' lines and last renderings; past it the least recently used are closed
        /// (their next request opens them again).
        #[arg(long, value_name = "BYTES", default_value_t = serve::DEFAULT_SESSION_CACHE_BYTES,
              value_parser = parse_positive)]
        session_cache_bytes: usize,
    },
}

/// The flags every assembling command shares.
#[derive(Debug, Clone, Args)]
pub struct Target {
    /// The host.toml to load.
    #[arg(long)]
    pub config: PathBuf,
    /// The scope to assemble for (default: global).
    #[arg(long)]
    pub scope: Option<String>,
    /// A caller fact `KEY=VALUE` (repeatable); `model`, `cwd` and `provider` feed the
    /// host's global variables of the same name.
    #[arg(long = "fact", value_name = "K=V", value_parser = parse_fact)]
    pub facts: Vec<(String, String)>,
}

fn parse_positive(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!(
            "expected a positive number of bytes, got \"{text}\""
        )),
    }
}

fn parse_fact(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(format!("expected KEY=VALUE, got \"{text}\"")),
    }
}

/// Parse the process's arguments, run, print errors, and turn the outcome into an exit code.
/// The plugins shipped with the binary are those in `plugins/` beside it (the release
/// tarball's and the npm package's layout), found by name.
pub fn main() -> ExitCode {
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("plugins")))
    {
        prompt_host::plugin_path::set_bundled_dir(dir);
    }
    ExitCode::from(run_command_line(std::env::args_os()))
}

/// A plugin argument of `check` or `call`: a plugin name found on the plugin search path
/// (`prompt-host check persona`), else the file it names.
fn plugin_argument(written: &std::path::Path) -> anyhow::Result<PathBuf> {
    let (path, _) = prompt_host::plugin_path::resolve(written, std::path::Path::new(""))?;
    Ok(path)
}

/// [`main`] with the given arguments (the first is the program's name): the exit status. The
/// Python package's `prompt-host` command runs the command line this way, in process.
pub fn run_command_line<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    ignore_file_size_signal();
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            // clap prints help/version to stdout with success; real usage errors exit 2.
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return code;
        }
    };
    // Outside the runtime: the exporter's blocking HTTP client is built and dropped here.
    // Started before the runtime, it is dropped after it: a span a task of the command still
    // holds (an MCP connection's opening, aborted with its host) closes as the runtime drops
    // the task, and is in the export flushed then.
    let _telemetry = telemetry::start();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            warn(&format!("error: cannot start the async runtime: {e}"));
            return 1;
        }
    };
    panics::install();
    let span = telemetry::command_span(&cli.command);
    // The boundary of the command: a panic (a defect, or a third-party crate choking on its
    // input) was reported by the hook as one escaped line; the command fails with status 1,
    // never a panic's 101.
    let Ok(outcome) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        runtime.block_on(tracing::Instrument::instrument(run(cli), span.clone()))
    })) else {
        telemetry::command_failed(&span);
        return 1;
    };
    match outcome {
        Ok(()) => 0,
        // A reader that stopped reading (`| head -1`) ends the command normally.
        Err(e) if closed_stdout(&e) => 0,
        Err(e) if e.downcast_ref::<Usage>().is_some() => {
            telemetry::command_failed(&span);
            warn(&format!("error: {e}"));
            2
        }
        Err(e) => {
            telemetry::command_failed(&span);
            warn(&format!("error: {}", chain(&e)));
            1
        }
    }
}

/// Under a file-size limit (`ulimit -f`), a write past it raises SIGXFSZ, whose default
/// action kills the process mid-append and leaves a torn line. Ignored, the write fails with
/// `EFBIG` ("File too large"), which the session log rolls back and reports like any other
/// failed write.
fn ignore_file_size_signal() {
    #[cfg(unix)]
    // SAFETY: setting a signal's disposition to SIG_IGN installs no handler code, and is one
    // system call (safe with other threads running, as under the Python package's command).
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}

/// A usage error found after parsing (a missing argument only one export needs): printed
/// like clap's, exit status 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Usage(pub String);

/// The line `prompt-host serve` writes on stderr for a plugin's log line (`None` when the
/// default level leaves it out): an in-process server gives its client the same lines.
pub fn plugin_log_text(line: &prompt_host::wasm::PluginLog) -> Option<String> {
    log_level::text(line)
}

/// Write one line to stderr; a closed stderr is ignored (there is nobody left to tell).
pub fn warn(text: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{text}");
}

/// Whether `e` comes from writing to a closed pipe.
fn closed_stdout(e: &anyhow::Error) -> bool {
    let broken = Some(std::io::ErrorKind::BrokenPipe);
    e.chain().any(|cause| {
        cause.downcast_ref::<std::io::Error>().map(|io| io.kind()) == broken
            || cause
                .downcast_ref::<serde_json::Error>()
                .and_then(serde_json::Error::io_error_kind)
                == broken
    })
}

/// The whole error chain on one paragraph: `outer: inner: root`.
pub fn chain(e: &anyhow::Error) -> String {
    // Library errors display their cause or return it as their source, never both, so
    // the chain is printed as it is.
    e.chain()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(": ")
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    log_level::set(cli.log_level);
    store_flag::set(cli.store.as_deref())?;
    #[cfg(debug_assertions)]
    {
        // The subcommand's name, as the fault variable names it (`cli:render`).
        let shown = format!("{:?}", cli.command);
        let variant = shown.split(|c: char| !c.is_alphanumeric()).next();
        prompt_host::fault::inject(&format!("cli:{}", variant.unwrap_or("").to_lowercase()));
    }
    match cli.command {
        Command::Assemble { target, counting } => commands::assemble(&target, &counting).await,
        Command::Render {
            target,
            json,
            counting,
        } => {
            if !json && (counting.tokens || counting.tokenizer.is_some()) {
                anyhow::bail!("--tokenizer and --tokens add counts to the JSON output: add --json");
            }
            commands::render(&target, json, &counting).await
        }
        Command::Step {
            target,
            session,
            route,
            in_history,
            starts_series,
            users,
            tokens,
            tokenizer,
        } => {
            let counting = match tokenizer {
                Some(spec) => commands::RequestCounting::Named(commands::load_tokenizer(&spec)?),
                None if tokens => commands::RequestCounting::Configured,
                None => commands::RequestCounting::None,
            };
            let mut options = prompt_host::host::StepOptions::default();
            if let Some(spec) = route.spec() {
                options = options.route(spec);
            }
            let options = options
                .in_history(in_history)
                .starts_series(starts_series)
                .user_texts(users);
            commands::step(&target, &session, options, counting).await
        }
        Command::Inspect {
            target,
            against,
            session,
            tokenizer,
            timings,
            json,
            html,
            context_window,
            tools_as,
        } => {
            inspect::run(
                &target,
                inspect::Options {
                    against: against.as_deref(),
                    session: session.as_deref(),
                    tokenizer: tokenizer.as_deref(),
                    timed: timings,
                    json,
                    html: html.as_deref(),
                    context_window,
                    tools_as,
                },
            )
            .await
        }
        Command::Check {
            plugin,
            config,
            grant_dirs,
            grant_env,
        } => check::run(&plugin_argument(&plugin)?, &config, &grant_dirs, grant_env),
        Command::Dev {
            target,
            interval_ms,
            max_rounds,
            ui,
            ui_port,
        } => {
            dev::run(
                &target,
                dev::DevOptions {
                    interval: std::time::Duration::from_millis(interval_ms.max(10)),
                    max_rounds,
                    ui: ui.then_some(ui_port),
                },
            )
            .await
        }
        Command::Call {
            plugin,
            export,
            name,
            config,
            scope,
            facts,
            assembly,
        } => call::run(call::CallArgs {
            plugin: &plugin_argument(&plugin)?,
            export: &export,
            name: name.as_deref(),
            config: &config,
            scope: scope.as_deref(),
            facts,
            assembly: assembly.as_deref(),
        }),
        Command::Assistant {
            session,
            text,
            reasoning,
            tool_calls,
            reply,
            route,
        } => match reply {
            Some(reply) => {
                conversation::assistant_reply(&store_flag::resolve(&session)?, &reply, route)
            }
            None => conversation::assistant(
                &store_flag::resolve(&session)?,
                text,
                reasoning,
                &tool_calls,
            ),
        },
        Command::ToolResult {
            session,
            call_id,
            content,
            error,
        } => conversation::tool_result(&store_flag::resolve(&session)?, call_id, content, error),
        Command::Replay { session, step } => {
            conversation::replay(&store_flag::resolve(&session)?, step)
        }
        Command::Compact {
            session,
            summary,
            start_seq,
            end_seq,
            keep_turns,
        } => {
            let range = match (start_seq, end_seq) {
                (Some(start_seq), Some(end_seq)) => conversation::Range::Seqs(start_seq, end_seq),
                _ => conversation::Range::KeepTurns(keep_turns.unwrap_or(1)),
            };
            conversation::compact(&store_flag::resolve(&session)?, &summary, range)
        }
        Command::Sessions { command } => sessions::run(command),
        Command::Skill {
            config,
            server,
            scope,
            name,
        } => commands::skill(&config, &server, scope.as_deref(), &name).await,
        Command::Serve {
            config,
            max_request_bytes,
            max_inflight,
            max_output_bytes,
            max_sessions,
            session_cache_bytes,
        } => {
            let limits = serve::ServeLimits::default()
                .max_request_bytes(max_request_bytes)
                .max_inflight(max_inflight)
                .max_output_bytes(max_output_bytes)
                .max_sessions(max_sessions)
                .session_cache_bytes(session_cache_bytes);
            serve::run(config.as_deref(), limits).await
        }
        Command::New(args) => new::run(&args),
        Command::Pull {
            reference,
            registry,
        } => oci::pull(&reference, &registry).await,
        Command::Push {
            file,
            reference,
            registry,
            project,
            annotations,
        } => {
            oci::push(
                &file,
                &reference,
                &registry,
                project.as_deref(),
                &annotations,
            )
            .await
        }
        Command::Lock { config, update } => oci::lock(&config, update).await,
    }
}
