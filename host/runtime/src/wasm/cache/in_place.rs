//! A cached component's code run from the cache file's own pages, instead of a copy.
//!
//! `Component::deserialize` copies the code into fresh executable memory: a zeroed page, a
//! page fault and a copy per 4 KiB, for megabytes of code, in every process that loads it.
//! On Linux the component is made from the file itself instead (wasmtime maps it private
//! and read-only and makes its code executable), so the code is the page cache's pages,
//! shared by every process that runs it and faulted in only as it runs; wasmtime then takes
//! new instances' initial memory from the file's pages too (copy-on-write). Making the
//! reference deployment's two components took 0.44–0.56 ms this way against 1.04–1.30 ms
//! copied, in fresh processes (docs/benchmarks.md §3).
//!
//! The file is the one whose identity or HMAC was checked: it is reopened through the
//! checked descriptor (`/proc/self/fd/N` names the open file, not a path), so a file renamed
//! or replaced since is not what is mapped.
//!
//! Why running code (and taking initial memory) from the file adds nothing an attacker
//! could use: the file is this user's, in a directory only this user may write (both
//! checked when the cache is opened), and the cache's writers replace files by rename, never
//! in place, which leaves a mapped file as it was. Only a program of the same user writing
//! into the file in place could change the code or truncate the file (a `SIGBUS` when a
//! lost page is touched). Such a program can already read the cache's key and write an
//! artifact that verifies, or signal the host.
//!
//! Where the file cannot be mapped executable (a cache directory on a `noexec` mount, no
//! `/proc`, another system), the component is made from a copy, as before.

use std::fs::File;

use wasmtime::component::Component;

/// Where a cached component's code runs from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Placement {
    /// The cache file's own pages.
    InPlace,
    /// A copy in memory of the host's.
    Copied,
}

/// The component serialized in the checked cache file `file` (whose artifact is `code`, the
/// file's bytes before its trailer), its code run from the file where it can be, and where
/// it runs from.
///
/// # Safety
///
/// `code` must be output of `Component::serialize` on an engine compatible with `engine`,
/// written by this host, and `file` the open cache file it was read from:
/// `DiskCache::load` checked both.
pub(crate) unsafe fn component(
    engine: &wasmtime::Engine,
    file: &File,
    code: &[u8],
) -> wasmtime::Result<(Component, Placement)> {
    match in_place(engine, file) {
        Some(Ok(component)) => return Ok((component, Placement::InPlace)),
        Some(Err(e)) => {
            log::debug!("compiled-code cache: code not run from the file ({e:#}); copied")
        }
        None => {}
    }
    // SAFETY: as the caller promises (see above).
    unsafe { Component::deserialize(engine, code) }.map(|component| (component, Placement::Copied))
}

/// The component made from the checked file itself; `None` where that is not done.
#[cfg(target_os = "linux")]
fn in_place(engine: &wasmtime::Engine, file: &File) -> Option<wasmtime::Result<Component>> {
    use std::os::fd::AsRawFd;
    let path = format!("/proc/self/fd/{}", file.as_raw_fd());
    // SAFETY: the file is the artifact checked by `DiskCache::load` (the same open file, see
    // the module docs; wasmtime's reader ignores the trailer after the code), and nothing of
    // this host's writes into a cache file in place for as long as the code runs from it.
    Some(unsafe { Component::deserialize_file(engine, path) })
}

/// The component made from the checked file itself; `None` where that is not done.
#[cfg(not(target_os = "linux"))]
fn in_place(_engine: &wasmtime::Engine, _file: &File) -> Option<wasmtime::Result<Component>> {
    None
}
