//! Standard output written on a plain thread of its own.
//!
//! Tokio's `stdout` hands every write to the runtime's blocking pool. A burst of answers on
//! a busy machine started a pool thread for many of them: 10,000 pipelined answers grew the
//! server by 20 threads. Here one thread writes everything, from a pipe in memory of
//! [`PIPE_BYTES`] (a client that reads slower than the server answers holds the server back
//! once it is full, as a full pipe does).
//!
//! A flush completes when the thread has written every byte before it to stdout, or fails
//! when stdout has closed: the server learns from its first answer after the client went
//! away that nobody reads, as it did from Tokio's `stdout`, and stops.

use std::io::Write;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};

use tokio::io::{AsyncReadExt, AsyncWrite, DuplexStream};

/// The pipe in memory between the server and the thread.
const PIPE_BYTES: usize = 64 << 10;

/// What the thread tells the writer.
#[derive(Default)]
struct Progress {
    /// Bytes written to stdout so far.
    written: AtomicU64,
    /// Stdout closed (or failed): nothing more is written.
    failed: AtomicBool,
    /// The flush waiting for `written` to reach what was sent.
    flushing: Mutex<Option<Waker>>,
}

impl Progress {
    fn wake(&self) {
        let waker = self
            .flushing
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

/// The server's side: bytes written here are written to stdout by the thread.
pub struct ThreadStdout {
    pipe: DuplexStream,
    progress: Arc<Progress>,
    /// Bytes handed to the pipe so far.
    sent: u64,
}

/// Start the thread. Join the handle once the [`ThreadStdout`] is dropped: the thread
/// finishes writing what it holds, then stops.
pub fn thread_stdout() -> std::io::Result<(ThreadStdout, std::thread::JoinHandle<()>)> {
    let (pipe, mut reader) = tokio::io::duplex(PIPE_BYTES);
    let progress = Arc::new(Progress::default());
    let told = Arc::clone(&progress);
    let runtime = tokio::runtime::Handle::current();
    let writing = std::thread::Builder::new()
        .name("serve-stdout".into())
        .spawn(move || {
            let mut stdout = std::io::stdout().lock();
            let mut buffer = vec![0u8; PIPE_BYTES];
            loop {
                // Reading the pipe needs none of the runtime's drivers: its waker wakes this
                // thread.
                let Ok(n @ 1..) = runtime.block_on(reader.read(&mut buffer)) else {
                    return;
                };
                if stdout
                    .write_all(&buffer[..n])
                    .and_then(|()| stdout.flush())
                    .is_err()
                {
                    told.failed.store(true, Ordering::Release);
                    told.wake();
                    return;
                }
                told.written.fetch_add(n as u64, Ordering::Release);
                told.wake();
            }
        })?;
    Ok((
        ThreadStdout {
            pipe,
            progress,
            sent: 0,
        },
        writing,
    ))
}

fn closed() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::BrokenPipe, "stdout is closed")
}

impl AsyncWrite for ThreadStdout {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        if self.progress.failed.load(Ordering::Acquire) {
            return Poll::Ready(Err(closed()));
        }
        let written = Pin::new(&mut self.pipe).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = written {
            self.sent += n as u64;
        }
        written
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let progress = &self.progress;
        let done = || {
            if progress.failed.load(Ordering::Acquire) {
                Some(Err(closed()))
            } else if progress.written.load(Ordering::Acquire) >= self.sent {
                Some(Ok(()))
            } else {
                None
            }
        };
        if let Some(result) = done() {
            return Poll::Ready(result);
        }
        *progress
            .flushing
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(cx.waker().clone());
        // Checked again: the thread may have written everything before the waker was left.
        match done() {
            Some(result) => Poll::Ready(result),
            None => Poll::Pending,
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.as_mut().poll_flush(cx) {
            Poll::Ready(Ok(())) => Pin::new(&mut self.pipe).poll_shutdown(cx),
            other => other,
        }
    }
}
