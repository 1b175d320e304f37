//! A stdio server's stderr: drained so the server never blocks on a full pipe, its last
//! bytes kept for the error that says why it ended.
//!
//! What a server writes there is a peer's text: it reaches `mcp_status`'s `last_error`, the
//! command line's warnings and `serve`'s notifications. It is shown escaped (ESC, CR, bidi
//! controls and line breaks as escapes, so it cannot clear a screen or forge a line) and
//! capped at [`prompt_host_peer::MAX_SHOWN_BYTES`] — its end, where a crash says why.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::process::ChildStderr;
use tokio::task::JoinHandle;

use prompt_host_peer::{shown_bytes, MAX_SHOWN_BYTES};

/// What was kept of a stream: its last bytes and how many came before them.
#[derive(Debug, Default)]
struct Kept {
    tail: Vec<u8>,
    dropped: u64,
}

impl Kept {
    fn push(&mut self, bytes: &[u8]) {
        self.tail.extend_from_slice(bytes);
        let excess = self.tail.len().saturating_sub(MAX_SHOWN_BYTES);
        self.tail.drain(..excess);
        self.dropped += excess as u64;
    }

    /// The tail as a message shows it: escaped, with how much came before it.
    fn shown(&self) -> String {
        let text = shown_bytes(&self.tail);
        if self.dropped == 0 || text.is_empty() {
            text
        } else {
            format!("({} earlier bytes) … {text}", self.dropped)
        }
    }
}

/// Drains the server's stderr so it never blocks on a full pipe, keeping the last bytes.
pub(super) struct StderrTail {
    kept: Arc<Mutex<Kept>>,
    task: Option<JoinHandle<()>>,
}

impl StderrTail {
    pub(super) fn capture(stderr: Option<ChildStderr>) -> StderrTail {
        let kept = Arc::new(Mutex::new(Kept::default()));
        let task = stderr.map(|mut pipe| {
            let kept = Arc::clone(&kept);
            tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                while let Ok(n @ 1..) = pipe.read(&mut buf).await {
                    let Ok(mut kept) = kept.lock() else { return };
                    kept.push(&buf[..n]);
                }
            })
        });
        StderrTail { kept, task }
    }

    /// The tail so far, as a message shows it, after giving the drain a moment to reach
    /// the end of the pipe.
    pub(super) async fn finish(&self, grace: Duration) -> String {
        if let Some(task) = &self.task {
            let deadline = tokio::time::Instant::now() + grace;
            while !task.is_finished() && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
        match self.kept.lock() {
            Ok(kept) => kept.shown(),
            Err(_) => String::new(),
        }
    }
}

impl Drop for StderrTail {
    fn drop(&mut self) {
        // A grandchild holding the pipe open must not keep this task alive.
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_is_the_end_escaped_with_what_came_before_counted() {
        let mut kept = Kept::default();
        kept.push(b"Traceback\n\x1b[2J\rerror: forged\xe2\x80\xae\n");
        assert_eq!(
            kept.shown(),
            "Traceback\\n\\u{1b}[2J\\rerror: forged\\u{202e}"
        );
        let mut kept = Kept::default();
        for _ in 0..20_000 {
            kept.push(b"0123456789");
        }
        kept.push(b"the end");
        let shown = kept.shown();
        assert!(shown.starts_with("(199495 earlier bytes) … "), "{shown}");
        assert!(shown.ends_with("3456789the end"), "{shown}");
        assert_eq!(kept.tail.len(), MAX_SHOWN_BYTES);
    }
}
