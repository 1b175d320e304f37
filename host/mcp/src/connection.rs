//! [`McpConnection`]: keeps one MCP server connected and reports every generation and
//! failure, reconnecting with exponential backoff.

use std::sync::{Arc, PoisonError};
use std::time::Duration;

use rmcp::{Peer, RoleClient};

use tokio::sync::{broadcast, watch, Mutex};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::Instrument;

use super::session::{Ended, Session};
use super::skills::{read_skill, McpSkill, SkillBody, SkillError};
use super::{LifecycleUsed, McpError, McpEvent, McpServerSpec, McpSnapshot, McpTool};

/// Events kept for [`McpConnection::next_event`] / [`McpConnection::subscribe`] readers; a
/// reader that falls further behind skips the oldest ones (the callback sees them all).
const EVENT_BUFFER: usize = 64;
/// How long [`McpConnection::shutdown`] waits for the task to kill and reap the server.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// The callback a connection reports to. It runs on the connection's task, so it must return
/// quickly (hand the event to a channel or a registry update); it must not block, and a panic
/// in it ends the connection.
pub type McpListener = Arc<dyn Fn(McpEvent) + Send + Sync>;

/// Delays between connection attempts: `initial`, doubling up to `max`. A session that stayed
/// up for at least `max` starts the sequence over, so a server that crashes once reconnects
/// fast while one that crashes on every start is not respawned in a tight loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReconnectPolicy {
    /// The first delay after a failure.
    pub initial: Duration,
    /// The longest delay.
    pub max: Duration,
}

impl Default for ReconnectPolicy {
    /// 100 ms doubling to 5 s.
    fn default() -> Self {
        ReconnectPolicy::new(Duration::from_millis(100), Duration::from_secs(5))
    }
}

/// A supervised connection to one MCP server, running on its own Tokio task.
///
/// Dropping it (or calling [`McpConnection::shutdown`]) stops the task and kills the server.
pub struct McpConnection {
    server: String,
    snapshot: watch::Receiver<Option<McpSnapshot>>,
    events_tx: broadcast::Sender<McpEvent>,
    events: Mutex<broadcast::Receiver<McpEvent>>,
    stop: watch::Sender<bool>,
    task: Option<JoinHandle<()>>,
    live: LivePeer,
}

/// The live session's peer and the bound on each request to it, while a session is open
/// (for what is read on request, outside the session's own loop: a skill's body).
type LivePeer = Arc<std::sync::Mutex<Option<(Peer<RoleClient>, Duration)>>>;

impl McpConnection {
    /// Starts connecting to `spec` with the default [`ReconnectPolicy`].
    ///
    /// # Panics
    ///
    /// When called outside a Tokio runtime (the connection lives on a spawned task).
    pub fn spawn(spec: McpServerSpec, on_update: McpListener) -> McpConnection {
        McpConnection::spawn_with_policy(spec, ReconnectPolicy::default(), on_update)
    }

    /// Starts connecting to `spec`, retrying after failures as `policy` says.
    ///
    /// # Panics
    ///
    /// When called outside a Tokio runtime (the connection lives on a spawned task).
    pub fn spawn_with_policy(
        spec: McpServerSpec,
        policy: ReconnectPolicy,
        on_update: McpListener,
    ) -> McpConnection {
        let (snapshot_tx, snapshot) = watch::channel(None);
        // The receiver exists before the task does, so `next_event` misses nothing.
        let (events_tx, events) = broadcast::channel(EVENT_BUFFER);
        let (stop, stop_rx) = watch::channel(false);
        let live = LivePeer::default();
        let emitter = Emitter {
            live: live.clone(),
            server: spec.name.clone(),
            generation: 0,
            on_update,
            snapshot: snapshot_tx,
            events: events_tx.clone(),
        };
        // The span current here (the command's, on the command line) is the parent of the
        // first session's opening exchanges: what the code that started the connection
        // waits for belongs to its trace.
        let opening = tracing::Span::current();
        let task = tokio::spawn(supervise(spec.clone(), policy, emitter, stop_rx, opening));
        McpConnection {
            server: spec.name,
            snapshot,
            events_tx,
            events: Mutex::new(events),
            stop,
            task: Some(task),
            live,
        }
    }

    /// What reads a skill's body from whichever session is live when asked.
    pub fn skill_reader(&self) -> SkillReader {
        SkillReader {
            server: self.server.clone(),
            live: self.live.clone(),
        }
    }

    /// The server name.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The last good generation, if any; a later failure does not clear it.
    pub fn current(&self) -> Option<McpSnapshot> {
        self.snapshot.borrow().clone()
    }

    /// The next event since the previous call (or since the connection started). `None` once
    /// the connection has stopped and every event has been read. Wrap it in a timeout: a
    /// healthy connection with an idle server reports nothing.
    pub async fn next_event(&self) -> Option<McpEvent> {
        let mut events = self.events.lock().await;
        loop {
            match events.recv().await {
                Ok(event) => return Some(event),
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }

    /// A fresh receiver of the events that follow this call.
    pub fn subscribe(&self) -> broadcast::Receiver<McpEvent> {
        self.events_tx.subscribe()
    }

    /// Stops the task, kills the server and waits (bounded) until it has been reaped.
    pub async fn shutdown(mut self) {
        let _ = self.stop.send(true);
        if let Some(mut task) = self.task.take() {
            if tokio::time::timeout(SHUTDOWN_GRACE, &mut task)
                .await
                .is_err()
            {
                task.abort();
            }
        }
    }
}

impl Drop for McpConnection {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        // Aborting drops the session, and the child was spawned with kill_on_drop.
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// Reads a skill's body from a connection's live session; cloned out of the connection so
/// that no lock is held while the server answers.
#[derive(Clone)]
pub struct SkillReader {
    server: String,
    live: LivePeer,
}

impl SkillReader {
    /// Read `skill`'s `SKILL.md` from the live session and check it against the index
    /// entry (size, digest, then the frontmatter's name). Refused when no session is open.
    pub async fn read(&self, skill: &McpSkill) -> Result<SkillBody, SkillError> {
        let live = self
            .live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let Some((peer, timeout)) = live.filter(|(peer, _)| !peer.is_transport_closed()) else {
            return Err(SkillError::NotConnected {
                server: self.server.clone(),
                skill: skill.name.clone(),
            });
        };
        read_skill(&peer, &self.server, skill, timeout).await
    }
}

/// Publishes events to the callback, the event channel and the snapshot.
struct Emitter {
    live: LivePeer,
    server: String,
    generation: u64,
    on_update: McpListener,
    snapshot: watch::Sender<Option<McpSnapshot>>,
    events: broadcast::Sender<McpEvent>,
}

impl Emitter {
    /// A new generation — unless `only_if_changed` and it is the same as the last one (a
    /// refresh on a time to live that found nothing new changes nothing).
    fn generation(
        &mut self,
        (lifecycle, protocol_version): (LifecycleUsed, &str),
        instructions: &str,
        tools: Vec<McpTool>,
        skills: Vec<McpSkill>,
        only_if_changed: bool,
    ) {
        if only_if_changed {
            let last = self.snapshot.borrow();
            let same = last.as_ref().is_some_and(|last| {
                last.instructions == instructions
                    && last.tools == tools
                    && last.skills == skills
                    && last.lifecycle == lifecycle
            });
            if same {
                return;
            }
        }
        self.generation += 1;
        let snapshot = McpSnapshot {
            server: self.server.clone(),
            generation: self.generation,
            instructions: instructions.to_owned(),
            lifecycle,
            protocol_version: protocol_version.to_owned(),
            tools,
            skills,
        };
        self.snapshot.send_replace(Some(snapshot.clone()));
        self.emit(McpEvent::Generation(snapshot));
    }

    fn failed(&self, error: &McpError) {
        self.emit(McpEvent::Failed {
            server: self.server.clone(),
            error: error.to_string(),
        });
    }

    fn emit(&self, event: McpEvent) {
        // The callback first: whoever waits on the channel may rely on the consumer having
        // seen the event already.
        (self.on_update)(event.clone());
        // No receiver is fine: the callback is the primary consumer.
        let _ = self.events.send(event);
    }
}

/// The connection task: attempt, report, back off, repeat until stopped. A session that
/// ended only because its OAuth token is due is followed by the next one at once, unreported.
async fn supervise(
    spec: McpServerSpec,
    policy: ReconnectPolicy,
    mut emitter: Emitter,
    mut stop: watch::Receiver<bool>,
    opening: tracing::Span,
) {
    let mut delay = policy.initial;
    // Taken by the first attempt: a reconnect is a trace of its own.
    let mut opening = Some(opening);
    loop {
        let mut slot = None;
        let started = Instant::now();
        let parent = opening.take().unwrap_or_else(tracing::Span::none);
        let ended = tokio::select! {
            ended = CatchPanic(Box::pin(run_session(&spec, &mut slot, &mut emitter, parent))) => {
                ended.unwrap_or_else(|message| Ended::Failed(McpError::Panicked {
                    server: spec.name.clone(),
                    message,
                }))
            }
            () = stopped(&mut stop) => {
                if let Some(session) = slot.take() {
                    session.kill().await;
                }
                return;
            }
        };
        *emitter.live.lock().unwrap_or_else(PoisonError::into_inner) = None;
        if let Some(session) = slot.take() {
            session.kill().await;
        }
        let error = match ended {
            Ended::TokenDue => continue,
            Ended::Failed(error) => error,
        };
        emitter.failed(&error);
        if started.elapsed() >= policy.max {
            delay = policy.initial;
        }
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            () = stopped(&mut stop) => return,
        }
        delay = (delay * 2).min(policy.max);
    }
}

/// One session from its start to its end. The session is kept in `slot` so that the caller
/// can stop it whichever way this future ends (including being dropped on stop). A session
/// that follows one ended for its token reports a generation only if something changed.
///
/// The opening exchanges (the lifecycle and the first listing) run in `opening`; what
/// follows them (refreshes for as long as the session lasts) does not, so that no span is
/// held open for the connection's life.
async fn run_session(
    spec: &McpServerSpec,
    slot: &mut Option<Session>,
    emitter: &mut Emitter,
    opening: tracing::Span,
) -> Ended {
    let opened = async move {
        let session = match Session::start(spec).await {
            Ok(session) => slot.insert(session),
            Err(error) => return Err(error),
        };
        match session.list().await {
            Ok(lists) => Ok((session, lists)),
            Err(error) => Err(session.explain(error).await),
        }
    }
    .instrument(opening)
    .await;
    let (session, (tools, skills)) = match opened {
        Ok(opened) => opened,
        Err(error) => return Ended::Failed(error),
    };
    let instructions = session.instructions.clone();
    let agreed = session.protocol_version.clone();
    let how = (session.lifecycle, agreed.as_str());
    // After a session ended for its token, the same server is read again: a generation only
    // if something changed.
    let renewed = emitter.generation > 0 && spec.remote.as_ref().is_some_and(|r| r.oauth.is_some());
    *emitter.live.lock().unwrap_or_else(PoisonError::into_inner) = Some(session.peer());
    emitter.generation(how, &instructions, tools, skills, renewed);
    session
        .watch(|instructions, tools, skills, timed| {
            emitter.generation(how, instructions, tools, skills, timed)
        })
        .await
}

/// A session's future with a panic inside it (a defect, or a third-party crate choking on
/// what a server sent) turned into its message: the connection reports it as a failure and
/// tries again after its delay, instead of its task ending with the status left `starting`.
struct CatchPanic<F>(std::pin::Pin<Box<F>>);

impl<F: std::future::Future> std::future::Future for CatchPanic<F> {
    type Output = Result<F::Output, String>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let inner = self.0.as_mut();
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(poll) => poll.map(Ok),
            Err(payload) => {
                let message = payload
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "(no message)".to_owned());
                std::task::Poll::Ready(Err(prompt_host_peer::shown(&message)))
            }
        }
    }
}

/// Resolves when a stop was requested (or the connection handle is gone).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|stopped| *stopped).await;
}

impl ReconnectPolicy {
    /// Delays from `initial`, doubling up to `max`.
    pub const fn new(initial: Duration, max: Duration) -> Self {
        Self { initial, max }
    }
}

#[cfg(test)]
mod tests {
    use super::CatchPanic;

    #[tokio::test]
    async fn a_panic_in_a_session_becomes_its_message_escaped() {
        let calm = CatchPanic(Box::pin(async { 7 })).await;
        assert_eq!(calm, Ok(7));
        let panicked = CatchPanic(Box::pin(async {
            if std::hint::black_box(true) {
                panic!("overflow when adding duration to instant\n\u{1b}[2Jerror: forged");
            }
            7
        }))
        .await;
        assert_eq!(
            panicked,
            Err("overflow when adding duration to instant\\n\\u{1b}[2Jerror: forged".into())
        );
    }
}
