//! Assembling, rendering and stepping: the per-step work of a [`Host`], with the caller's
//! signal (a cancelled or dropped call stops the assembly in flight) and the `[prompt]`
//! budgets.

use std::time::Instant;

use tracing::Instrument;

use super::*;
use crate::session::context_in_force;
use crate::session::route::{RouteContext, RouteName, RouteSpec};

impl Host {
    /// Assemble for `scope` with the caller's facts. The assembly stops with a `cancelled`
    /// error when the facts' signal is cancelled ([`Facts::signal`]) or when this future is
    /// dropped before it completes. While the host starts, it first waits for the MCP
    /// servers the scope sees ([`Host::wait_mcp_start`]).
    pub async fn assemble(&self, scope: Option<&str>, facts: Facts) -> Result<Assembly, HostError> {
        self.check_scope(scope)?;
        self.wait_mcp_start(scope, facts.signal_token().as_ref())
            .await?;
        let mut ctx = facts.into_context();
        let signal = ctx.signal.get_or_insert_with(CancelToken::new).clone();
        // Dropped with this future: the blocking assembly sees the cancellation.
        let guard = signal.drop_guard();
        let result = self.registry.assemble(scope, ctx).await;
        guard.disarm();
        result.map_err(|source| HostError::Assemble {
            scope: scope_label(scope),
            error: Box::new(source),
        })
    }

    /// Assemble and render: the system prompt and the runtime-context snapshot.
    /// With [`Facts::timings`], the assemble and render phases are recorded.
    pub async fn render(&self, scope: Option<&str>, facts: Facts) -> Result<Rendered, HostError> {
        let span = spans::render(scope);
        let rendering = async {
            let timings = facts.timings_handle();
            let started = Instant::now();
            let assembly = self.assemble(scope, facts).await?;
            let assembled = Instant::now();
            let rendered = self.render_assembly(assembly, scope)?;
            if let Some(timings) = timings {
                timings.phase("assemble", assembled - started);
                timings.phase("render", assembled.elapsed());
            }
            Ok::<_, HostError>(rendered)
        };
        let rendered = rendering.instrument(span.clone()).await?;
        if !span.is_disabled() {
            let content = self
                .prompt_in_spans
                .load(std::sync::atomic::Ordering::Relaxed);
            // Counted only while a subscriber records the span, with `[prompt] tokenizer`;
            // the counts are remembered by text, so an unchanged prompt is not counted again
            // (a token budget has usually counted it already). A count that fails is left out.
            spans::record_render(&span, &rendered, self.span_tokens(&rendered), content);
        }
        Ok(rendered)
    }

    /// Render an assembly made for `scope` within the `[prompt]` byte and token budgets.
    /// Errors name the scope and the plugins that registered the section and variable
    /// involved (for a token budget, the largest sections or contexts).
    pub fn render_assembly(
        &self,
        assembly: Assembly,
        scope: Option<&str>,
    ) -> Result<Rendered, HostError> {
        let rendered = self.render_assembly_within_bytes(assembly, scope)?;
        self.check_token_budgets(&rendered, scope)?;
        Ok(rendered)
    }

    /// [`Host::render_assembly`] within the byte budgets only: what `inspect` shows of a
    /// prompt that is over a token budget, beside [`Host::check_token_budgets`]' error.
    pub fn render_assembly_within_bytes(
        &self,
        assembly: Assembly,
        scope: Option<&str>,
    ) -> Result<Rendered, HostError> {
        let config = self.registry.config();
        let render_err = |source| self.render_error(scope, source);
        let prompt =
            render_prompt_within(&assembly, config.max_prompt_bytes).map_err(render_err)?;
        let context_sections = render_context_sections_within(&assembly, config.max_context_bytes)
            .map_err(render_err)?;
        let context = join_context_sections(&context_sections);
        Ok(Rendered {
            assembly,
            prompt,
            context_sections,
            context,
        })
    }

    /// Who wrote each section of `assembly`'s prompt (made for `scope`), and where it lies:
    /// what a system commit records. Empty when the prompt does not render.
    pub fn section_origins(
        &self,
        assembly: &Assembly,
        scope: Option<&str>,
    ) -> Vec<crate::projection::SectionOrigin> {
        let max_bytes = self.registry.config().max_prompt_bytes;
        let Ok((_, spans)) = crate::prompt::cache_prefix::section_spans(assembly, max_bytes) else {
            return Vec::new();
        };
        spans
            .into_iter()
            .map(|span| crate::projection::SectionOrigin {
                plugin: self
                    .registry
                    .owner_of(EntryKind::Section, &span.name, scope)
                    .map_or_else(|| "(listener)".to_string(), |owner| owner.plugin),
                name: span.name,
                start: span.start,
                end: span.end,
            })
            .collect()
    }

    /// A render error for `scope`, with who registered the entries it names.
    pub fn render_error(&self, scope: Option<&str>, source: RenderError) -> HostError {
        HostError::Render {
            scope: scope_label(scope),
            blame: self.blame(&source, scope),
            hint: self.hint(&source, scope),
            error: Box::new(source),
        }
    }

    /// A missing value of one of the host's own variables is a missing caller fact: say how
    /// to give it.
    fn hint(&self, error: &RenderError, scope: Option<&str>) -> Option<String> {
        let RenderError::NoValue { reference, .. } = error else {
            return None;
        };
        let ours = HOST_VARIABLES.contains(&reference.as_str())
            && self
                .registry
                .owner_of(EntryKind::Variable, reference, scope)
                .is_some_and(|o| o.plugin == BUILT_IN_OWNER);
        ours.then(|| {
            format!(
                "; \"{reference}\" is the caller fact of that name, which this call did not give \
                 (command line: --fact {reference}=…; serve: \"facts\": {{\"{reference}\": …}}; \
                 library: Facts::with(\"{reference}\", …))"
            )
        })
    }

    /// Who registered the section or context a render error names, and the variable a
    /// budget error names; an entry a listener made has no owner and is left out.
    fn blame(&self, error: &RenderError, scope: Option<&str>) -> Vec<Blame> {
        let (kind, owner) = error.entry();
        // Blamed: the entry, and the variable that pushed it over its budget.
        let variable = match error {
            RenderError::OverBudget { .. } => error.variable(),
            _ => None,
        };
        std::iter::once((kind, owner))
            .chain(variable.map(|name| (EntryKind::Variable, name)))
            .filter_map(|(kind, name)| {
                Some(Blame {
                    kind,
                    name: name.to_string(),
                    owner: self.registry.owner_of(kind, name, scope)?,
                })
            })
            .collect()
    }

    /// One step against a session log: assemble, render, project and commit the system
    /// prompt, append the user's input and the runtime-context snapshot, and derive the
    /// model request (which has no system field). Refused while tool calls of the current
    /// turn have no result. A cancelled step writes nothing. With [`Facts::timings`], the
    /// assemble, render and commit phases and every plugin call are recorded.
    pub async fn step(
        &self,
        session: &mut Session,
        scope: Option<&str>,
        facts: Facts,
        options: &StepOptions,
    ) -> Result<(Rendered, StepOutcome), HostError> {
        check_no_open_calls(session)?;
        let route = route_of(options, &facts, session)?;
        let span = spans::step(&route, facts.get("provider"), scope, None);
        let signal = facts.signal_token();
        let timings = facts.timings_handle();
        let rendered = self.render(scope, facts).instrument(span.clone()).await?;
        let how = Commit {
            route: &route,
            retry_of: None,
            signal: signal.as_ref(),
        };
        let started = Instant::now();
        let committed = span.in_scope(|| self.commit_step(session, scope, rendered, options, how));
        if let Some(timings) = timings {
            timings.phase("commit", started.elapsed());
        }
        if let Ok((rendered, outcome)) = &committed {
            spans::record_step(&span, rendered, outcome);
        }
        committed
    }

    /// Retry the newest step with new route facts (another model after a provider error,
    /// say): `previous` — what that step rendered — is rendered again with the host's own
    /// fact variables (`model`, `cwd`, `provider`) re-read from `facts`; no plugin is called.
    /// The log gets a step marked `retryOf`, holding only what the projections require (a
    /// new system prompt only if the re-rendered prompt differs), and the request derived
    /// from it.
    pub fn retry(
        &self,
        session: &mut Session,
        scope: Option<&str>,
        previous: &Rendered,
        facts: Facts,
        options: &StepOptions,
    ) -> Result<(Rendered, StepOutcome), HostError> {
        check_no_open_calls(session)?;
        let route = route_of(options, &facts, session)?;
        let retried = crate::session::last_step(session).ok_or_else(|| {
            HostError::Replay(crate::session::ReplayError::NoSteps {
                path: session.path().display().to_string(),
            })
        })?;
        let span = spans::step(&route, facts.get("provider"), scope, Some(retried));
        let _entered = span.enter();
        let mut assembly = previous.assembly.clone();
        let ctx = facts.clone().into_context();
        for name in HOST_VARIABLES {
            let ours = self
                .registry
                .owner_of(EntryKind::Variable, name, scope)
                .is_some_and(|o| o.plugin == BUILT_IN_OWNER);
            if ours {
                assembly.set_variable(name, ctx.fact(name).map(str::to_string));
            }
        }
        let rendered = self.render_assembly(assembly, scope)?;
        let retry = options.clone().user_texts(Vec::new());
        let signal = facts.signal_token();
        let how = Commit {
            route: &route,
            retry_of: Some(retried),
            signal: signal.as_ref(),
        };
        let committed = self.commit_step(session, scope, rendered, &retry, how);
        if let Ok((rendered, outcome)) = &committed {
            spans::record_step(&span, rendered, outcome);
        }
        committed
    }

    /// Project and commit a rendered step (unless the caller cancelled it meanwhile).
    fn commit_step(
        &self,
        session: &mut Session,
        scope: Option<&str>,
        rendered: Rendered,
        options: &StepOptions,
        how: Commit<'_>,
    ) -> Result<(Rendered, StepOutcome), HostError> {
        let Commit {
            route,
            retry_of,
            signal,
        } = how;
        if signal.is_some_and(CancelToken::is_cancelled) {
            return Err(HostError::Assemble {
                scope: scope_label(scope),
                error: Box::new(crate::prompt::AssembleError::Cancelled(
                    "the caller cancelled the step before it was written".into(),
                )),
            });
        }
        let span = spans::project();
        let _entered = span.enter();
        let origins = || self.section_origins(&rendered.assembly, scope);
        let input = StepInput {
            rendered_prompt: &rendered.prompt,
            context_sections: &rendered.context_sections,
            context_snapshot: &rendered.context,
            tools: &rendered.assembly.tools,
            route,
            starts_series: options.starts_series,
            user_texts: &options.user_texts,
            retry_of,
            origins: Some(&origins),
        };
        let checked = run_step_checked(session, &input, |outcome| {
            self.check_request_budget(&outcome.request)
        });
        let outcome = checked.map_err(|refused| {
            let path = session.path().display().to_string();
            match refused {
                StepRefused::Append(error) => HostError::Session { path, error },
                StepRefused::Check(over) => over.into_error(path, session),
            }
        })?;
        if !span.is_disabled() {
            span.record("prompt_host.commits", spans::int(outcome.commits.len()));
        }
        Ok((rendered, outcome))
    }

    /// Append the model's reply (text, reasoning, tool calls) to the log; its seq. Checked
    /// first: tool call ids must be new and complete.
    pub fn append_assistant(
        &self,
        session: &mut Session,
        reply: &AssistantReply,
    ) -> Result<u64, HostError> {
        let event = crate::session::assistant_event(session, reply)
            .map_err(|source| conversation_error(session, source))?;
        append(session, event)
    }

    /// Append the model's reply exactly as its provider sent it — an OpenAI chat completion
    /// (or `choices[0].message`), an Anthropic `Message`, a Responses response (or its
    /// `output`) — for `route` (the route of the log's newest step when `None`); its seq.
    /// The reply is kept whole, so the next request of that route carries it back as it
    /// was sent; tool-call arguments given as JSON text are parsed (text that is not a JSON
    /// object is refused), and usage figures are recorded with the turn.
    pub fn append_reply(
        &self,
        session: &mut Session,
        route: Option<RouteName>,
        reply: &serde_json::Value,
    ) -> Result<u64, HostError> {
        let reply = self.read_reply(session, route, reply)?;
        self.append_assistant(session, &reply)
    }

    /// A provider's reply read for `route` (the route of the log's newest step when
    /// `None`), as [`Host::append_reply`] records it; nothing is written.
    pub fn read_reply(
        &self,
        session: &Session,
        route: Option<RouteName>,
        reply: &serde_json::Value,
    ) -> Result<AssistantReply, HostError> {
        let route = route.unwrap_or_else(|| context_in_force(session.events()).name);
        crate::session::route::reply::parse(route, reply)
            .map_err(|source| conversation_error(session, source))
    }

    /// Append a tool's result to the log; its seq. It must answer an open call of the
    /// current turn.
    pub fn append_tool_result(
        &self,
        session: &mut Session,
        result: &ToolResult,
    ) -> Result<u64, HostError> {
        let event = crate::session::tool_result_event(session, result)
            .map_err(|source| conversation_error(session, source))?;
        append(session, event)
    }

    /// The request step `step` returned (the newest when `None`), rebuilt from the log
    /// alone, byte for byte; and that step's number.
    pub fn replay(
        &self,
        session: &Session,
        step: Option<u64>,
    ) -> Result<(u64, ModelRequest), HostError> {
        crate::session::request_at(session, step).map_err(HostError::Replay)
    }
}

/// How a rendered step is committed: the route it was prepared for, the step it retries,
/// and the caller's cancellation.
struct Commit<'a> {
    route: &'a RouteContext,
    retry_of: Option<u64>,
    signal: Option<&'a CancelToken>,
}

/// The route a step asked for, resolved against its facts (the `model` fact). Without one,
/// the route in force in the log goes on (its model unless the facts name another); a new
/// log starts with `chat-completions`.
fn route_of(
    options: &StepOptions,
    facts: &Facts,
    session: &Session,
) -> Result<RouteContext, HostError> {
    let model = facts.get("model");
    let continuing;
    let spec = match &options.route {
        Some(spec) => Some(spec),
        None if has_context(session) => {
            continuing = RouteSpec::continuing(&context_in_force(session.events()), model);
            Some(&continuing)
        }
        None => None,
    };
    RouteContext::resolve(spec, model, options.in_history).map_err(HostError::Route)
}

/// Whether the log holds a `request/context`.
fn has_context(session: &Session) -> bool {
    session
        .events()
        .iter()
        .any(|e| e.kind == crate::session::REQUEST_CONTEXT)
}

fn check_no_open_calls(session: &Session) -> Result<(), HostError> {
    let open = crate::session::open_calls(session);
    if open.is_empty() {
        return Ok(());
    }
    Err(conversation_error(
        session,
        crate::session::ConversationError::Unanswered { open },
    ))
}

fn conversation_error(session: &Session, source: crate::session::ConversationError) -> HostError {
    HostError::Conversation {
        path: session.path().display().to_string(),
        error: source,
    }
}

fn append(session: &mut Session, event: crate::session::NewEvent) -> Result<u64, HostError> {
    session
        .append(event)
        .map(|e| e.seq)
        .map_err(|source| HostError::Session {
            path: session.path().display().to_string(),
            error: source,
        })
}
