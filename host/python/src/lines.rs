//! The in-process server's output: whole lines on a bounded channel, as a pipe would carry
//! them (a client that stops reading makes the server wait, and the server's own
//! `max_output_bytes` bookkeeping works as it does over stdout).

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::AsyncWrite;
use tokio::sync::mpsc;
use tokio_util::sync::PollSender;

/// Answers and notifications waiting for the client's reader, in lines.
pub const LINES_AHEAD: usize = 64;

/// An [`AsyncWrite`] that cuts what is written into lines and sends each (without its
/// newline) on a channel. The channel closed is a closed pipe: writes fail with
/// `BrokenPipe`, which stops the server as a reader that went away does.
pub struct LineWriter {
    lines: PollSender<Vec<u8>>,
    /// The line being written.
    partial: Vec<u8>,
    /// A whole line waiting for room on the channel.
    ready: Option<Vec<u8>>,
}

impl LineWriter {
    /// Send lines on `lines`.
    pub fn new(lines: mpsc::Sender<Vec<u8>>) -> Self {
        Self {
            lines: PollSender::new(lines),
            partial: Vec::new(),
            ready: None,
        }
    }

    /// Send the waiting line once there is room.
    fn poll_send_ready(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        if self.ready.is_none() {
            return Poll::Ready(Ok(()));
        }
        match self.lines.poll_reserve(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Err(_)) => Poll::Ready(Err(closed())),
            Poll::Ready(Ok(())) => {
                let line = self.ready.take().unwrap_or_default();
                self.lines.send_item(line).map_err(|_| closed())?;
                Poll::Ready(Ok(()))
            }
        }
    }
}

fn closed() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::BrokenPipe,
        "the in-process client stopped reading",
    )
}

impl AsyncWrite for LineWriter {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let me = self.get_mut();
        if me.poll_send_ready(cx)?.is_pending() {
            return Poll::Pending;
        }
        // Up to and including the first newline: one line at a time, so that a line waits
        // for room before the next one is taken.
        let (taken, complete) = match buf.iter().position(|&b| b == b'\n') {
            Some(at) => (at + 1, true),
            None => (buf.len(), false),
        };
        if complete {
            me.partial.extend_from_slice(&buf[..taken - 1]);
            me.ready = Some(std::mem::take(&mut me.partial));
            // Sent now if there is room; otherwise the next write or flush waits for it.
            let _ = me.poll_send_ready(cx)?;
        } else {
            me.partial.extend_from_slice(buf);
        }
        Poll::Ready(Ok(taken))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.get_mut().poll_send_ready(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let me = self.get_mut();
        if me.poll_send_ready(cx)?.is_pending() {
            return Poll::Pending;
        }
        me.lines.close();
        Poll::Ready(Ok(()))
    }
}
