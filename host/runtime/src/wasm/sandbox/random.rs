//! Random bytes cannot outlast a call's deadline.
//!
//! `wasi:random/random.get-random-bytes(len)` and `wasi:random/insecure
//! .get-insecure-random-bytes(len)` do their work in the host, where epoch interruption
//! cannot reach: wasmtime-wasi's versions produce one byte at a time and accept up to
//! 64 MiB, so one call held its thread for ~130 ms against a 50 ms deadline, and the whole
//! buffer was allocated in the host before the guest's memory limit could refuse it.
//!
//! These replacements refuse a length larger than the plugin's memory limit (it could never
//! be lowered into the guest), fill the buffer from the operating system's generator in
//! chunks, and check the running call's deadline and signal between chunks, so a call ends
//! within its deadline (or its cancellation) plus one chunk (well under one epoch tick).

use wasmtime::component::Linker;
use wasmtime::StoreContextMut;

use super::state::SandboxState;

/// Bytes filled between two deadline checks (~0.5 ms of `getrandom`).
const CHUNK: usize = 128 << 10;

/// Fill `len` random bytes for the running call, or fail it: over the memory limit (a
/// `limit` error) or past the deadline (a `timeout`).
fn random_bytes<T: SandboxState>(
    mut store: StoreContextMut<'_, T>,
    len: u64,
    import: &str,
) -> wasmtime::Result<(Vec<u8>,)> {
    let state = store.data_mut();
    let cap = state.memory_limit();
    let len = match usize::try_from(len) {
        Ok(len) if len <= cap => len,
        _ => {
            return Err(state.refuse(format!(
            "{import} of {len} bytes refused: more than the plugin's memory limit of {cap} bytes"
        )))
        }
    };
    let mut bytes = vec![0u8; len];
    for chunk in bytes.chunks_mut(CHUNK) {
        if state.must_stop() {
            return Err(wasmtime::Error::msg(format!(
                "{import} of {len} bytes stopped before it finished"
            )));
        }
        getrandom::fill(chunk)
            .map_err(|e| wasmtime::Error::msg(format!("{import}: no random bytes: {e}")))?;
    }
    Ok((bytes,))
}

/// Replace `get-random-bytes` and `get-insecure-random-bytes` (see the module docs).
pub(crate) fn add_bounded_random<T: SandboxState>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    linker.instance("wasi:random/random@0.2.12")?.func_wrap(
        "get-random-bytes",
        |store: StoreContextMut<'_, T>, (len,): (u64,)| {
            random_bytes(store, len, "get-random-bytes")
        },
    )?;
    linker.instance("wasi:random/insecure@0.2.12")?.func_wrap(
        "get-insecure-random-bytes",
        |store: StoreContextMut<'_, T>, (len,): (u64,)| {
            random_bytes(store, len, "get-insecure-random-bytes")
        },
    )?;
    linker.allow_shadowing(false);
    Ok(())
}
