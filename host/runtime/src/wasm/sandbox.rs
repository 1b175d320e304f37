//! The sandbox every plugin runs in: a WASI context that is empty but for what the operator
//! granted, and the WASI functions wasmtime-wasi would let block the host (or follow a path
//! swapped after a check) replaced by bounded ones:
//!
//! - [`clock`]: sleeping cannot outlast a call's deadline;
//! - `random`: random bytes are bounded by the memory limit and the deadline;
//! - [`files`]: granted directories are handed out as opened at load, opened beneath
//!   without blocking, and listed one entry per call;
//! - [`grants`]: what a plugin was granted, opened when it is loaded.
//!
//! The replacements work on any store whose data implements [`SandboxState`].

pub(crate) mod clock;
pub(crate) mod files;
pub(crate) mod grants;
mod random;
mod state;

pub(crate) use state::SandboxState;

use wasmtime::component::Linker;
use wasmtime_wasi::cli::StdoutStream;
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiView};

use clock::StoreClock;
use grants::Granted;

/// The WASI context of one store: no preopens, no arguments, stdin closed (the builder's
/// default), no sockets of any kind and no name lookup, stdout and stderr captured; clocks
/// and random stay (std needs them). Of what was `granted`, the environment variables go in
/// here; the directories are handed out by [`files`].
pub(crate) fn context(
    clock: StoreClock,
    stdout: impl StdoutStream + 'static,
    stderr: impl StdoutStream + 'static,
    granted: Option<&Granted>,
) -> WasiCtx {
    let mut builder = WasiCtxBuilder::new();
    builder
        .monotonic_clock(clock)
        .stdout(stdout)
        .stderr(stderr)
        .allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false)
        .socket_addr_check(|_, _| Box::pin(async { false }));
    for (name, value) in granted.iter().flat_map(|g| &g.env) {
        builder.env(name, value);
    }
    builder.build()
}

/// Link WASI with the sandbox's replacements.
pub(crate) fn add_to_linker<T: SandboxState + WasiView>(
    linker: &mut Linker<T>,
) -> wasmtime::Result<()> {
    wasmtime_wasi::p2::add_to_linker_sync(linker)?;
    clock::add_capped_sleep(linker)?;
    random::add_bounded_random(linker)?;
    files::add_guarded_files(linker)?;
    Ok(())
}
