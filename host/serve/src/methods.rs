//! The methods: each parses its params, calls the [`Host`], and shapes the result (see
//! docs/protocol.md for every result and error).

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::params::{self, parse};
use super::protocol::notifications::{RegistryChanged, NOTIFICATIONS};
use super::protocol::results::{
    Appended, AssemblyView, Closed, Described, Disposed, Done, Loaded, McpStatusView, PluginEntry,
    Reloaded, RenderResult, Replayed, SkillBodyView, SkillEntryView,
};
use super::protocol::step_result::StepResultView;
use super::{RpcError, Server, METHODS, PROTOCOL_VERSION};
use prompt_host::host::{Facts, Host, PluginId, Rendered, StepOptions};
use prompt_host::mcp::InstructionsCut;
use prompt_host::policy::{PluginOptions, PluginSpec};
use prompt_host::projection::StepOutcome;
use prompt_host::prompt::{CancelToken, TimingReport, Timings};
use prompt_host::session::{AssistantReply, Session, ToolResult};
use prompt_host::tokens::Tokenizer;
use prompt_host::HostError;

/// What a session's queue keeps between its requests: the open log, and the newest step's
/// rendering (what `retry` re-uses).
#[derive(Default)]
pub(crate) struct SessionState {
    session: Option<Session>,
    last: Option<(Option<String>, Rendered)>,
    /// The number of the step `last` rendered.
    last_step: u64,
    /// What a step leaves to free (its outcome, with the whole request, and the rendering it
    /// replaced): freed after the answer is on its way, not before.
    after_answer: Vec<Box<dyn Send + Sync>>,
}

impl SessionState {
    /// Free `value` after the answer is on its way ([`SessionState::free_after_answer`]).
    pub(crate) fn free_later(&mut self, value: impl Send + Sync + 'static) {
        self.after_answer.push(Box::new(value));
    }

    /// Free what the last request left to free (after its answer was sent).
    pub(crate) fn free_after_answer(&mut self) {
        self.after_answer.clear();
    }

    /// Hand what the last request left to free to a step's `answer`, freed with it by whoever
    /// drops it: an in-process caller then frees it on its own thread, after its answer,
    /// instead of another thread freeing what this one allocated.
    pub(crate) fn leave_with(&mut self, answer: &mut Result<Answer, RpcError>) {
        if let Ok(Answer::Step(step)) = answer {
            step.leftovers.0.append(&mut self.after_answer);
        }
    }

    /// The open session, if any.
    pub(crate) fn session(&self) -> Option<&Session> {
        self.session.as_ref()
    }

    /// The rendering `retry` would re-use, if any.
    pub(crate) fn last_rendering(&self) -> Option<&Rendered> {
        self.last.as_ref().map(|(_, rendered)| rendered)
    }

    /// Whether nothing is held: no open log, no step to retry.
    pub(crate) fn is_idle(&self) -> bool {
        self.session.is_none() && self.last.is_none()
    }

    /// The open log at `path`, opening (and locking) it on first use. A session of a shared
    /// store first catches up with what other writers appended since this server read it.
    fn open(&mut self, path: &Path) -> Result<&mut Session, RpcError> {
        match &mut self.session {
            None => {
                let (session, _) = Session::open(path).map_err(|e| session_error(path, e))?;
                self.session = Some(session);
            }
            Some(session) => {
                if let Err(e) = session.refresh() {
                    self.session = None;
                    return Err(session_error(path, e));
                }
            }
        }
        self.session
            .as_mut()
            .ok_or_else(|| RpcError::failed("session", "session log is not open"))
    }
}

fn session_error(path: &Path, e: impl std::fmt::Display) -> RpcError {
    let mut error = RpcError::failed("session", e.to_string());
    error.data =
        Some(json!({"kind": "session", "session": prompt_host::session::display_name(path)}));
    error
}

/// A step's answer: its outcome, and its token counts and timings when they were asked for.
pub struct StepAnswer {
    /// What the step did, with the whole request.
    pub outcome: StepOutcome,
    /// The rendering's token counts (`tokens` in the params).
    pub tokens: Option<prompt_host::tokens::TokenReport>,
    /// The request's tokens as its route sends it, counted with the tokenizer `tokens` asked
    /// for.
    pub request_tokens: Option<prompt_host::tokens::RequestTokens>,
    /// Why a token count asked for (`tokens`, `request_tokens`) is missing: the step was
    /// written, and a count that failed afterwards does not turn it into an error.
    pub tokens_error: Option<String>,
    /// Where the step's time went (`timings` in the params).
    pub timings: Option<TimingReport>,
    /// How the instructions of the MCP servers the step's scope sees were cut to their
    /// instruction budgets (empty when none was).
    pub mcp_cuts: Vec<InstructionsCut>,
    /// What the request that answered this left to free (the rendering it replaced), freed
    /// when this is dropped.
    pub(crate) leftovers: Leftovers,
}

/// Values freed together with the answer that carries them.
#[derive(Default)]
pub(crate) struct Leftovers(pub(crate) Vec<Box<dyn Send + Sync>>);

/// What a `render`, `step` or `retry` was asked to measure besides its own work.
struct Measure {
    /// Counts the rendering (`tokens` in the params).
    tokenizer: Option<Arc<Tokenizer>>,
    /// Records where the time went (`timings` in the params).
    timings: Option<Arc<Timings>>,
}

impl Measure {
    /// The measures asked for, and `facts` recording the timings. The tokenizer is loaded
    /// now: one that cannot be loaded fails the call before anything is written.
    fn asked(
        host: &Host,
        tokens: &Option<params::TokensParam>,
        timed: bool,
        facts: Facts,
    ) -> Result<(Measure, Facts), RpcError> {
        let tokenizer = params::tokens_asked(tokens)
            .map(|name| host.tokenizer_named(name))
            .transpose()?;
        let timings = timed.then(Timings::new);
        let facts = match &timings {
            Some(timings) => facts.timings(Arc::clone(timings)),
            None => facts,
        };
        Ok((Measure { tokenizer, timings }, facts))
    }

    /// The answer of a step (or retry) that rendered `rendered` and did `outcome`.
    fn answer(
        self,
        host: &Host,
        scope: Option<&str>,
        rendered: &Rendered,
        outcome: StepOutcome,
    ) -> StepAnswer {
        // Only when asked: a request budget counts inside the step, and a second count of a
        // long conversation on every step would cost what the budget's count costs.
        let (counted, request_counted) = match &self.tokenizer {
            Some(tokenizer) => (
                Some(host.token_report_as(rendered, scope, tokenizer, Some(outcome.route.name))),
                Some(host.request_tokens(&outcome.request, tokenizer)),
            ),
            None => (None, None),
        };
        let mut tokens_error = None;
        let tokens = kept(counted, &mut tokens_error);
        let request_tokens = kept(request_counted, &mut tokens_error);
        StepAnswer {
            outcome,
            tokens,
            request_tokens,
            tokens_error,
            timings: self.timings.map(|t| t.report()),
            mcp_cuts: host.instructions_cuts_for(scope),
            leftovers: Leftovers::default(),
        }
    }
}

/// A count's value, or `None` with the first count's error kept in `error`.
fn kept<T>(counted: Option<Result<T, HostError>>, error: &mut Option<String>) -> Option<T> {
    match counted? {
        Ok(value) => Some(value),
        Err(failed) => {
            error.get_or_insert_with(|| failed.to_string());
            None
        }
    }
}

/// What a method answers: the JSON text of its result, or a step's outcome itself (the whole
/// request, with every tool schema), which a line's answer writes straight from the host's
/// values ([`StepResultView`]) and an in-process client turns into its own objects
/// ([`StepResultView`]) without a text form in between.
pub enum Answer {
    /// The result, as JSON text.
    Json(Box<RawValue>),
    /// The outcome of `step` or `retry`.
    Step(Box<StepAnswer>),
}

impl Answer {
    /// The result as JSON text; a step's outcome is handed to `keep` to be freed later (after
    /// the answer is on its way).
    pub(super) fn into_json(self, keep: &mut SessionState) -> Result<Box<RawValue>, RpcError> {
        match self {
            Answer::Json(raw) => Ok(raw),
            Answer::Step(answer) => {
                let raw = raw(&StepResultView::of(&answer));
                keep.free_later(answer);
                raw
            }
        }
    }
}

/// Run `method`. A step's outcome is answered as it is (see [`Answer`]); the other results
/// are small and answered as JSON text.
pub(super) async fn dispatch(
    server: &Arc<Server>,
    state: &mut SessionState,
    method: &str,
    params: Value,
    signal: &CancelToken,
) -> Result<Answer, RpcError> {
    let host = server.host();
    match method {
        "step" => {
            let p: params::Step = parse(params)?;
            let facts = p.facts.into_facts()?.signal(signal.clone());
            let (measure, facts) = Measure::asked(host, &p.tokens, p.timings, facts)?;
            let options = step_options(p.route, p.in_history, p.starts_series, p.user)?;
            let session = state.open(&p.session)?;
            let (rendered, outcome) = host
                .step(session, p.scope.as_deref(), facts, &options)
                .await?;
            state.last_step = outcome.step;
            let answer = measure.answer(host, p.scope.as_deref(), &rendered, outcome);
            if let Some(previous) = state.last.replace((p.scope, rendered)) {
                state.free_later(previous);
            }
            Ok(Answer::Step(Box::new(answer)))
        }
        "retry" => {
            let p: params::Retry = parse(params)?;
            let facts = p.facts.into_facts()?.signal(signal.clone());
            let (measure, facts) = Measure::asked(host, &p.tokens, p.timings, facts)?;
            let options = step_options(p.route, p.in_history, p.starts_series, Vec::new())?;
            let Some((scope, previous)) = state.last.take() else {
                return Err(session_error(
                    &p.session,
                    format!(
                        "session log {}: no step of this server to retry (retry re-uses the rendering of this server's newest step on the session; call step)",
                        prompt_host::session::display_name(&p.session)
                    ),
                ));
            };
            let ours = state.last_step;
            // Caught up with other writers: the newest step must still be this server's,
            // or the retry would redo another writer's step with this one's rendering.
            let newest = prompt_host::session::last_step(state.open(&p.session)?);
            if let Some(newest) = newest.filter(|newest| *newest != ours) {
                let error = session_error(
                    &p.session,
                    format!(
                        "session {}: another writer stepped since this server's step {ours} (the session's newest step is {newest}); nothing to retry: call step",
                        prompt_host::session::display_name(&p.session),
                    ),
                );
                state.last = Some((scope, previous));
                return Err(error);
            }
            let session = state
                .session
                .as_mut()
                .ok_or_else(|| RpcError::failed("session", "session log is not open"))?;
            let result = host.retry(session, scope.as_deref(), &previous, facts, &options);
            match result {
                Ok((rendered, outcome)) => {
                    state.last_step = outcome.step;
                    let answer = measure.answer(host, scope.as_deref(), &rendered, outcome);
                    let previous = state.last.replace((scope, rendered));
                    state.free_later(previous);
                    Ok(Answer::Step(Box::new(answer)))
                }
                Err(e) => {
                    state.last = Some((scope, previous));
                    Err(e.into())
                }
            }
        }
        _ => small_result(server, state, method, params, signal)
            .await
            .map(Answer::Json),
    }
}

/// A step's (or retry's) flags from its params.
fn step_options(
    route: Option<Value>,
    in_history: bool,
    starts_series: bool,
    user_texts: Vec<String>,
) -> Result<StepOptions, RpcError> {
    let mut options = StepOptions::default();
    options.route = params::route_spec(route)?;
    options.in_history = in_history;
    options.starts_series = starts_series;
    options.user_texts = user_texts;
    Ok(options)
}

/// The JSON text of `value`.
/// The range a `compact` call names: both seqs, or `keep_turns`, not both.
fn compaction_range(
    session: &Session,
    p: &params::Compact,
) -> Result<prompt_host::session::CompactionRange, RpcError> {
    use prompt_host::session::CompactionRange;
    match (p.start_seq, p.end_seq, p.keep_turns) {
        (Some(start_seq), Some(end_seq), None) => Ok(CompactionRange { start_seq, end_seq }),
        (None, None, Some(keep)) => {
            CompactionRange::keeping(session, keep as usize).map_err(|error| {
                HostError::Compaction {
                    path: session.path().display().to_string(),
                    error,
                }
                .into()
            })
        }
        _ => Err(RpcError::params(
            "give start_seq and end_seq, or keep_turns, to name what to compact",
        )),
    }
}

pub(super) fn raw(value: &impl Serialize) -> Result<Box<RawValue>, RpcError> {
    serde_json::value::to_raw_value(value)
        .map_err(|e| RpcError::failed("internal", format!("cannot write the result: {e}")))
}

/// Run a method other than `step` and `retry`: its result, as JSON text.
async fn small_result(
    server: &Arc<Server>,
    state: &mut SessionState,
    method: &str,
    params: Value,
    signal: &CancelToken,
) -> Result<Box<RawValue>, RpcError> {
    let host = server.host();
    match method {
        "describe" => {
            let _: params::Empty = parse(params)?;
            raw(&Described {
                name: "prompt-host",
                version: env!("CARGO_PKG_VERSION"),
                protocol: PROTOCOL_VERSION,
                methods: METHODS,
                notifications: NOTIFICATIONS,
            })
        }
        "bind_scope" => {
            let p: params::BindScope = parse(params)?;
            host.bind_scope(&p.scope, p.parent.as_deref())?;
            raw(&Done {})
        }
        "dispose_scope" => {
            let p: params::ScopeOnly = parse(params)?;
            host.check_scope(Some(&p.scope))?;
            host.dispose_scope(&p.scope);
            raw(&Done {})
        }
        "scopes" => {
            let _: params::Empty = parse(params)?;
            raw(&host.scopes())
        }
        "load_plugin" => load_plugin(host, parse(params)?, signal).await,
        "reload_plugin" => {
            let p: params::ReloadPlugin = parse(params)?;
            // An `oci://` reference is fetched and verified as `load_plugin` does it.
            let declared = match p.wasm.to_str().filter(|t| prompt_host::oci::is_oci(t)) {
                Some(text) => {
                    let reference = prompt_host::oci::OciReference::parse(text)
                        .map_err(|e| RpcError::params(format!("wasm: {e}")))?;
                    let fetched = fetch_oci(host, &reference, signal).await?;
                    let pin = fetched.component.trim_start_matches("sha256:");
                    host.reload_plugin_pinned(PluginId(p.id), &fetched.path, Some(pin))?
                }
                None => host.reload_plugin(PluginId(p.id), &named_or_path(&p.wasm)?)?,
            };
            raw(&Reloaded {
                id: p.id,
                declarations: declared.len(),
            })
        }
        "dispose_plugin" => {
            let p: params::PluginRef = parse(params)?;
            raw(&Disposed {
                disposed: host.dispose_plugin(PluginId(p.id)),
            })
        }
        "plugins" => {
            let _: params::Empty = parse(params)?;
            let kept = host.plugins();
            let entries: Vec<PluginEntry<'_>> = kept
                .iter()
                .map(|p| PluginEntry {
                    id: p.id.0,
                    name: &p.name,
                    scope: p.scope.as_deref(),
                    grants: &p.grants,
                })
                .collect();
            raw(&entries)
        }
        "assemble" => {
            let p: params::Target = parse(params)?;
            let facts = p.facts.into_facts()?.signal(signal.clone());
            let assembly = host.assemble(p.scope.as_deref(), facts).await?;
            raw(&AssemblyView::of(&assembly))
        }
        "render" => {
            let p: params::Render = parse(params)?;
            let facts = p.facts.into_facts()?.signal(signal.clone());
            let (measure, facts) = Measure::asked(host, &p.tokens, p.timings, facts)?;
            let rendered = host.render(p.scope.as_deref(), facts).await?;
            let tokens = match &measure.tokenizer {
                Some(tokenizer) => {
                    Some(host.token_report(&rendered, p.scope.as_deref(), tokenizer)?)
                }
                None => None,
            };
            raw(&RenderResult {
                prompt: &rendered.prompt,
                context: &rendered.context,
                tokens,
                timings: measure.timings.as_ref().map(|t| t.report()),
                mcp_cuts: host.instructions_cuts_for(p.scope.as_deref()),
            })
        }
        "append_assistant" => {
            let p: params::AppendAssistant = parse(params)?;
            let seq = match p.reply {
                Some(reply) => {
                    if p.text.is_some() || p.reasoning.is_some() || !p.tool_calls.is_empty() {
                        return Err(RpcError::params(
                            "give the provider's reply or text/reasoning/tool_calls, not both",
                        ));
                    }
                    let route = p.route.as_deref().map(params::route_name).transpose()?;
                    let session = state.open(&p.session)?;
                    let mut read = host.read_reply(session, route, &reply)?;
                    if read.usage.is_none() {
                        read.usage = p.usage;
                    }
                    host.append_assistant(session, &read)?
                }
                None => {
                    if p.route.is_some() {
                        return Err(RpcError::params(
                            "route names the provider of a reply; it goes with reply",
                        ));
                    }
                    let mut reply = AssistantReply::default();
                    reply.text = p.text;
                    reply.reasoning = p.reasoning;
                    reply.tool_calls = p.tool_calls;
                    reply.usage = p.usage;
                    host.append_assistant(state.open(&p.session)?, &reply)?
                }
            };
            raw(&Appended { seq })
        }
        "append_tool_result" => {
            let p: params::AppendToolResult = parse(params)?;
            let result = ToolResult {
                call_id: p.call_id,
                content: p.content,
                is_error: p.is_error,
            };
            let seq = host.append_tool_result(state.open(&p.session)?, &result)?;
            raw(&Appended { seq })
        }
        "request" => {
            let p: params::Request = parse(params)?;
            // A log this server does not hold is opened for the replay only.
            let opened_here = state.session.is_none();
            let replayed = host.replay(state.open(&p.session)?, p.step);
            if opened_here {
                state.session = None;
            }
            let (step, request) = replayed?;
            raw(&Replayed {
                step,
                request: &request,
            })
        }
        "compact" => {
            let p: params::Compact = parse(params)?;
            let session = state.open(&p.session)?;
            let range = compaction_range(session, &p)?;
            raw(&host.compact(session, &range, &p.summary)?)
        }
        "close_session" => {
            let p: params::SessionRef = parse(params)?;
            let closed = state.session.take().is_some();
            state.last = None;
            let _ = p.session;
            raw(&Closed { closed })
        }
        "mcp_status" => {
            let p: params::McpStatus = parse(params)?;
            let statuses = match p.wait_ms {
                Some(ms) => {
                    host.wait_mcp_ready(std::time::Duration::from_millis(ms))
                        .await
                }
                None => host.mcp_status(),
            };
            let views: Vec<McpStatusView<'_>> = statuses
                .iter()
                .map(|kept| McpStatusView::of(kept.id.0, &kept.status))
                .collect();
            raw(&views)
        }
        "mcp_skill" => {
            let p: params::McpSkill = parse(params)?;
            let body = host
                .mcp_skill(&p.server, p.scope.as_deref(), &p.skill)
                .await?;
            raw(&SkillBodyView {
                server: &p.server,
                skill: SkillEntryView::of(&body.skill),
                text: &body.text,
                digest: &body.digest,
                verified: body.verified,
            })
        }
        "subscribe" => {
            let p: params::Subscribe = parse(params)?;
            server
                .notifier()
                .subscribe(p.log.as_deref(), p.plugins, p.registry, p.mcp)
                .map_err(RpcError::params)?;
            start_watchers(server);
            raw(&Done {})
        }
        other => {
            let suggestion = prompt_host_core::suggest::closest(other, METHODS.iter().copied());
            let hint = suggestion
                .as_ref()
                .map(|s| format!(" (did you mean \"{s}\"?)"))
                .unwrap_or_default();
            Err(RpcError {
                code: super::code::METHOD_NOT_FOUND,
                message: format!(
                    "method not found: {other}{hint}; methods: {}",
                    METHODS.join(", ")
                ),
                data: Some(match &suggestion {
                    Some(s) => {
                        json!({"kind": "method-not-found", "methods": METHODS, "suggestion": s})
                    }
                    None => json!({"kind": "method-not-found", "methods": METHODS}),
                }),
            })
        }
    }
}

/// The component an `oci://` reference names ([`Host::fetch_oci`]), or `cancelled` as soon
/// as the request is: the fetch's future is dropped, which ends its network wait (a
/// registry trickling its answer is not waited for).
async fn fetch_oci(
    host: &Host,
    reference: &prompt_host::oci::OciReference,
    signal: &CancelToken,
) -> Result<prompt_host::oci::Resolution, RpcError> {
    tokio::select! {
        fetched = host.fetch_oci(reference) => Ok(fetched?),
        () = signal.cancelled() => Err(super::cancelled()),
    }
}

/// A `wasm` parameter that is a plugin name (`"persona"`), found on the plugin search path
/// ([`prompt_host::plugin_path`]); any other text is a path, relative to serve's directory.
fn named_or_path(wasm: &Path) -> Result<std::path::PathBuf, RpcError> {
    prompt_host::plugin_path::resolve(wasm, Path::new(""))
        .map(|(path, _)| path)
        .map_err(|e| RpcError::params(format!("wasm: {e}")))
}

async fn load_plugin(
    host: &Host,
    p: params::LoadPlugin,
    signal: &CancelToken,
) -> Result<Box<RawValue>, RpcError> {
    let limits = p.limits.unwrap_or_default();
    limits
        .validate()
        .map_err(|e| RpcError::params(format!("limits.{e}")))?;
    if p.quarantine_after == Some(0) {
        return Err(RpcError::params("quarantine_after: must be at least 1"));
    }
    let grants = p
        .grants
        .unwrap_or_default()
        .resolve(std::path::Path::new("."))
        .map_err(|e| RpcError::params(format!("grants.{e}")))?;
    let mut options = PluginOptions::default();
    options.limits = limits;
    options.on_error = p.on_error.unwrap_or_default();
    options.quarantine_after = p.quarantine_after.unwrap_or(options.quarantine_after);
    options.grants = grants;
    let mut spec = PluginSpec::new(p.name).options(options);
    spec.scope = p.scope;
    spec.config = p.config.unwrap_or_else(|| json!({}));
    spec.sha256 = p.sha256;
    // An `oci://` reference is fetched (or found in the content store) and verified first;
    // the component digest becomes the pin the runtime checks the compiled bytes against.
    let Some(text) = p.wasm.to_str().filter(|t| prompt_host::oci::is_oci(t)) else {
        let loaded = host.load_plugin(spec, &named_or_path(&p.wasm)?)?;
        let id = host.attach(loaded);
        return raw(&Loaded {
            id: id.0,
            manifest: None,
            component: None,
        });
    };
    let reference = prompt_host::oci::OciReference::parse(text)
        .map_err(|e| RpcError::params(format!("wasm: {e}")))?;
    host.check_scope(spec.scope.as_deref())?;
    let fetched = fetch_oci(host, &reference, signal).await?;
    let component = fetched.component.trim_start_matches("sha256:").to_string();
    if let Some(pin) = &spec.sha256 {
        if !prompt_host_core::digest::pin_matches(pin.trim_start_matches("sha256:"), &component) {
            return Err(
                prompt_host::HostError::Oci(prompt_host::oci::OciError::Plugin {
                    plugin: spec.name.clone(),
                    message: format!(
                        "{reference} resolves to component {}, but its sha256 pins {pin}; refused",
                        fetched.component
                    ),
                })
                .into(),
            );
        }
    }
    let mut spec = spec;
    spec.sha256 = Some(component);
    let loaded = host.load_plugin(spec, &fetched.path)?;
    let id = host.attach(loaded);
    raw(&Loaded {
        id: id.0,
        manifest: Some(fetched.manifest),
        component: Some(fetched.component),
    })
}

/// Start, once per server, the observers behind `registry/changed` and `mcp/status`; each
/// sends only while the client is subscribed to it.
fn start_watchers(server: &Arc<Server>) {
    if server.watchers_started.swap(true, Ordering::SeqCst) {
        return;
    }
    let notifier = Arc::clone(server.notifier());
    let host: Arc<Host> = Arc::clone(server.host_arc());
    let registry_notifier = Arc::clone(&notifier);
    host.subscribe(Arc::new(move || {
        if registry_notifier.wants_registry() {
            registry_notifier.send("registry/changed", &RegistryChanged {});
        }
    }));
    for id in host.mcp_status().into_iter().map(|kept| kept.id) {
        let Some(mut watch) = host.watch_mcp(id) else {
            continue;
        };
        let notifier = Arc::clone(&notifier);
        tokio::spawn(async move {
            // The generation of the last cut announced, so each cut is announced once.
            let mut announced = None;
            while watch.changed().await.is_ok() {
                let status = watch.borrow().clone();
                if notifier.wants_mcp() {
                    notifier.send("mcp/status", &McpStatusView::of(id.0, &status));
                }
                let cut = status.instructions_cut.as_ref();
                if cut.map(|c| c.generation) != announced {
                    announced = cut.map(|c| c.generation);
                    if let (Some(cut), true) = (cut, notifier.wants_mcp()) {
                        notifier.send("mcp/instructions_cut", cut);
                    }
                }
            }
        });
    }
}
