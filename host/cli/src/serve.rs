//! `prompt-host serve`: JSON-RPC 2.0 over stdio (see `prompt_host_serve` and docs/protocol.md).

mod stdout;

use std::io::Read;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncBufRead, AsyncRead, AsyncWrite, BufReader, ReadBuf};
use tokio::sync::mpsc;

use prompt_host::host::Host;
use prompt_host::RuntimeConfig;
use prompt_host_serve::{Notifier, Server};

pub use prompt_host_serve::{
    ServeLimits, DEFAULT_MAX_INFLIGHT, DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_MAX_REQUEST_BYTES,
    DEFAULT_MAX_SESSIONS, DEFAULT_SESSION_CACHE_BYTES,
};

/// Serve requests from stdin until it closes (or stdout does).
pub async fn run(config: Option<&Path>, limits: ServeLimits) -> anyhow::Result<()> {
    let runtime = super::commands::runtime_config();
    let (stdout, writing) = stdout::thread_stdout()?;
    let served = serve_with(
        config,
        runtime,
        limits,
        BufReader::new(thread_stdin()?),
        stdout,
    )
    .await;
    // Everything answered is written before the process ends (`stdout` is dropped by now,
    // so the thread finishes what it holds and stops).
    let _ = tokio::task::spawn_blocking(move || writing.join()).await;
    served
}

/// What `prompt-host serve` does, over any input and output: [`build_server`], then serve
/// requests from `input` until it closes (or `output` does). An in-process host (the Python
/// package's) runs exactly this over channels.
pub async fn serve_with<R, W>(
    config: Option<&Path>,
    runtime: RuntimeConfig,
    limits: ServeLimits,
    input: R,
    output: W,
) -> anyhow::Result<()>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let server = build_server(config, runtime, limits)?;
    server.serve(input, output).await?;
    Ok(())
}

/// The server `prompt-host serve` runs: the host built from `config` (else an empty default
/// one) with `runtime`, whose plugin lines become notifications for a subscribed client and
/// still reach `runtime.log_sink`. Call it inside a tokio runtime (MCP servers start on it).
pub fn build_server(
    config: Option<&Path>,
    mut runtime: RuntimeConfig,
    limits: ServeLimits,
) -> anyhow::Result<Arc<Server>> {
    let notifier = Notifier::new();
    runtime.log_sink = Some(notifier.sink(runtime.log_sink.take()));
    super::store_flag::set_from_env().map_err(one_line)?;
    let host = match config {
        Some(path) => super::commands::load_host_with(path, runtime).map_err(one_line)?,
        None => {
            let host = Host::new(prompt_host::prompt::PromptConfig::default(), runtime)?
                .with_session_store(super::store_flag::flag().cloned());
            host.record_prompt_in_spans(super::telemetry::capture_content());
            host
        }
    };
    Ok(Server::with_limits(host, notifier, limits))
}

/// A host.toml that cannot be loaded, on one line: `serve`'s stderr is read by programs
/// (the clients keep its last lines and put them in the error they raise, a supervisor logs
/// a line per event), so the snippet the other commands print below a parse error is left
/// out; its place (`line 4, column 1`) is in the line.
fn one_line(error: anyhow::Error) -> anyhow::Error {
    match error.downcast_ref::<prompt_host::config::ConfigFileError>() {
        Some(config) => anyhow::Error::msg(config.one_line()),
        None => error,
    }
}

/// How much one read of stdin takes at most.
const CHUNK_BYTES: usize = 64 << 10;

/// Chunks read ahead of the server: a client that writes faster than requests are parsed
/// waits on its pipe instead of filling memory.
const CHUNKS_AHEAD: usize = 4;

/// Standard input, read on a plain thread of its own. Tokio's `stdin` reads on the runtime's
/// blocking pool, and a read blocked there cannot be cancelled: when the server stops
/// because its output closed, shutting the runtime down would wait for that read until the
/// client sends one more line or closes stdin. A plain thread is not waited for; the process
/// ends with it blocked.
fn thread_stdin() -> std::io::Result<ChunkReader> {
    let (tx, chunks) = mpsc::channel(CHUNKS_AHEAD);
    std::thread::Builder::new()
        .name("serve-stdin".into())
        .spawn(move || {
            let mut stdin = std::io::stdin().lock();
            let mut buffer = vec![0u8; CHUNK_BYTES];
            loop {
                let read = match stdin.read(&mut buffer) {
                    Ok(0) => return,
                    Ok(n) => Ok(buffer[..n].to_vec()),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => Err(e),
                };
                let failed = read.is_err();
                // The server stopped reading: nobody wants the rest.
                if tx.blocking_send(read).is_err() || failed {
                    return;
                }
            }
        })?;
    Ok(ChunkReader::new(chunks))
}

/// The server's input as chunks of bytes arriving on a channel (from the stdin thread, or
/// from an in-process client); the channel closing is the end of input. A bounded channel
/// makes a writer that runs ahead of the server wait, as a full pipe does.
pub struct ChunkReader {
    chunks: mpsc::Receiver<std::io::Result<Vec<u8>>>,
    /// The chunk being handed out, and how much of it was.
    chunk: Vec<u8>,
    taken: usize,
}

impl ChunkReader {
    /// Read what arrives on `chunks`.
    pub fn new(chunks: mpsc::Receiver<std::io::Result<Vec<u8>>>) -> Self {
        Self {
            chunks,
            chunk: Vec::new(),
            taken: 0,
        }
    }
}

impl AsyncRead for ChunkReader {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        loop {
            if self.taken < self.chunk.len() {
                let n = buf.remaining().min(self.chunk.len() - self.taken);
                let start = self.taken;
                buf.put_slice(&self.chunk[start..start + n]);
                self.taken += n;
                return Poll::Ready(Ok(()));
            }
            match self.chunks.poll_recv(cx) {
                Poll::Ready(Some(Ok(chunk))) => {
                    self.chunk = chunk;
                    self.taken = 0;
                }
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Err(e)),
                // The thread ended: end of input (nothing put in `buf`).
                Poll::Ready(None) => return Poll::Ready(Ok(())),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}
