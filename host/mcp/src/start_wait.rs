//! [`StartWait`]: how long an assembly waits for an MCP server's first generation, and what
//! it does when the server has published nothing by then.
//!
//! A server's first generation arrives a while after the host started it: a process has to
//! start, a remote server has to answer. An assembly made before would have neither its
//! section nor its tools and the next one would have them: a prompt that changes at step 1
//! for no reason of the deployment's, with a new `system/message` in the log and a prompt
//! cache broken. So an assembly that sees a server within its start wait waits for it
//! first, whatever asked for it (the command line, `serve`, a client, the library): until the
//! server's first generation was handled or its first failure reported, at most until
//! `start_wait` after the connection started, and never past the server's own bound (twice
//! its timeout plus two seconds, also the default wait). The deadline is a point in time,
//! not a time per call: only assemblies made while the host starts wait, later ones find it
//! passed.
//!
//! A server that has published nothing by then is left out of the assembly, with one
//! warning. A `required` one instead fails every assembly that sees it until it has
//! published, naming it and its last error; it is waited for through its reconnections, for
//! the whole `start_wait`, and only a published generation (or a first one its provider
//! refused, which waiting does not change) ends its wait early.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use super::status::{McpBridgeError, McpState, McpStatus};
use super::McpServerSpec;

/// The longest start wait: host.toml refuses more, the library clamps to it.
pub const MAX_START_WAIT: Duration = Duration::from_secs(3600);

/// A server's start wait: see the module documentation.
#[derive(Debug)]
pub struct StartWait {
    wait: Duration,
    deadline: Instant,
    required: bool,
    /// The server published, or the warning that it was left out was given: nothing more
    /// to wait for or to say.
    passed: AtomicBool,
}

impl StartWait {
    /// The start wait of a connection to `spec` started at `started`, whose own bound for
    /// a first generation or failure is `ready_by`.
    pub fn new(spec: &McpServerSpec, started: Instant, ready_by: Instant) -> Self {
        let wait = spec
            .start_wait
            .unwrap_or_else(|| ready_by.saturating_duration_since(started))
            .min(MAX_START_WAIT);
        let until = started + wait;
        StartWait {
            wait,
            // A server left out when late need not be waited for past its own bound; a
            // required one is given its whole wait to reconnect in.
            deadline: if spec.required {
                until
            } else {
                until.min(ready_by)
            },
            required: spec.required,
            passed: AtomicBool::new(false),
        }
    }

    /// Whether nothing is left to wait for or to say (checked before waiting).
    pub fn passed(&self) -> bool {
        self.passed.load(Ordering::Acquire)
    }

    /// When waiting ends at the latest.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Whether `status` ends the wait before the deadline.
    pub fn is_over(&self, status: &McpStatus) -> bool {
        if self.required {
            status.live_generation.is_some() || refused_first(status)
        } else {
            status.settled()
        }
    }

    /// What an assembly does with a server in `status` once its wait is over: go on (with
    /// its generation, or without it after a warning given once), or fail (a required
    /// server with nothing published).
    pub fn outcome(&self, status: &McpStatus) -> Result<(), McpBridgeError> {
        if status.live_generation.is_some() {
            self.passed.store(true, Ordering::Release);
            return Ok(());
        }
        let waited = format!("{} ms", self.wait.as_millis());
        if self.required {
            return Err(McpBridgeError::NotReady {
                server: status.server.clone(),
                scope: status.scope.clone(),
                waited,
                error: why(status),
            });
        }
        if !self.passed.swap(true, Ordering::AcqRel) {
            log::warn!(
                "{}: {}; assembling without it",
                status.label(),
                status
                    .last_error
                    .clone()
                    .unwrap_or_else(|| format!("nothing published within {waited} of its start"))
            );
        }
        Ok(())
    }
}

/// Its first generation was refused by the provider plugin and nothing failed since: the
/// server offers nothing else until it changes, so there is nothing to wait for.
fn refused_first(status: &McpStatus) -> bool {
    status.state == McpState::Up && status.published == 0 && status.rejected > 0
}

/// Why a server has nothing in the prompt.
fn why(status: &McpStatus) -> String {
    status
        .last_error
        .clone()
        .unwrap_or_else(|| "it has not answered yet".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(state: McpState, live: Option<u64>, error: Option<&str>) -> McpStatus {
        let mut s = McpStatus::starting("alpha", Some("agent:1"), "mcp:alpha", "http", true);
        s.state = state;
        s.live_generation = live;
        s.last_error = error.map(str::to_owned);
        s
    }

    fn wait(required: bool) -> StartWait {
        let spec = McpServerSpec::new("alpha", "x")
            .start_wait(Duration::from_millis(2500))
            .required(required);
        let now = Instant::now();
        StartWait::new(&spec, now, now + Duration::from_secs(1))
    }

    #[tokio::test]
    async fn a_required_server_with_nothing_published_fails_each_assembly() {
        let w = wait(true);
        let down = status(
            McpState::Down,
            None,
            Some("mcp-client(alpha): connection refused"),
        );
        assert!(
            !w.is_over(&down),
            "a required server is waited for through its retries"
        );
        let e = w.outcome(&down).unwrap_err();
        assert_eq!(
            e.to_string(),
            "MCP server \"alpha\" (scope agent:1) is required (required = true) and published nothing within 2500 ms of its start: mcp-client(alpha): connection refused"
        );
        assert!(w.outcome(&down).is_err(), "and again, until it publishes");
        assert!(!w.passed());
        let up = status(McpState::Up, Some(1), None);
        assert!(w.is_over(&up));
        w.outcome(&up).unwrap();
        assert!(w.passed());
    }

    #[tokio::test]
    async fn a_server_that_may_be_left_out_is_waited_for_until_its_first_event() {
        let w = wait(false);
        assert!(!w.is_over(&status(McpState::Starting, None, None)));
        let down = status(McpState::Down, None, Some("boom"));
        assert!(w.is_over(&down));
        w.outcome(&down).unwrap();
        assert!(w.passed());
        // Its own bound (1 s) comes before the start wait (2.5 s).
        assert!(w.deadline() < Instant::now() + Duration::from_millis(1100));
    }
}
