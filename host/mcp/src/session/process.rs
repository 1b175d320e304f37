//! A stdio server's process: spawned contained (its own process group, killed with the
//! host: [`prompt_host_core::child`]), its stderr drained into a [`StderrTail`], and its end reported
//! with its exit status and what it last wrote.

use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::process::{Child, Command};

use super::super::{McpError, McpServerSpec};
use super::stderr_tail::StderrTail;
use super::EXIT_GRACE;

/// Spawns the stdio server: the process, its stderr tail and its pipes.
pub(super) fn spawn(
    spec: &McpServerSpec,
) -> Result<
    (
        Child,
        StderrTail,
        (tokio::process::ChildStdout, tokio::process::ChildStdin),
    ),
    McpError,
> {
    let mut command = Command::new(&spec.command);
    prompt_host_core::child::contain(&mut command);
    if let Some(dir) = &spec.dir {
        command.current_dir(dir);
    }
    let mut child = command
        .args(&spec.args)
        .envs(&spec.env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        // Never inherited: our stdout may be a JSON-RPC channel of its own (`serve`).
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|source| McpError::Spawn {
            server: spec.name.clone(),
            command: spec.command.clone(),
            error: source,
        })?;
    let stderr = StderrTail::capture(child.stderr.take());
    let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
        return Err(McpError::Initialize {
            server: spec.name.clone(),
            message: "the server's stdio pipes were not created".into(),
        });
    };
    Ok((child, stderr, (stdout, stdin)))
}

/// The child's exit status, if it exits within `grace`.
pub(super) async fn exited_within(child: &mut Child, grace: Duration) -> Option<ExitStatus> {
    tokio::time::timeout(grace, child.wait()).await.ok()?.ok()
}

/// Why a stdio server ended: its exit status and its stderr's end.
pub(super) async fn exited(server: &str, status: String, stderr: &StderrTail) -> McpError {
    McpError::Exited {
        server: server.to_owned(),
        status,
        stderr: stderr.finish(EXIT_GRACE).await,
    }
}
