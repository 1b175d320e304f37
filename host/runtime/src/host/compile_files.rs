//! Fetching or compiling a deployment's distinct plugin files side by side.
//!
//! With a warm cache, most of [`Host::from_config`] is getting each distinct component's
//! compiled code: mapping the cache file and copying the code into executable memory. The
//! files are independent of each other, so when a deployment has two or more, that work is
//! spread over the machine's cores before the plugins are instantiated one by one in
//! configuration order (instantiation and `init` stay in order: a plugin's declarations must
//! land in the registry in the order host.toml gives).
//!
//! [`Host::from_config`]: super::Host::from_config

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use super::{Host, HostError};
use crate::config::PluginConfig;
use crate::wasm::PluginCode;

/// The code of each distinct file, as compiled for the first plugin that uses it (the errors
/// carry that plugin's name).
pub(super) type CodeByFile<'a> = HashMap<&'a Path, Result<PluginCode, HostError>>;

/// Compile (or fetch from the cache) every distinct file `plugins` use, on up to as many
/// threads as the machine has cores.
pub(super) fn compile_files<'a>(host: &Host, plugins: &'a [PluginConfig]) -> CodeByFile<'a> {
    let mut first_use: Vec<(usize, &'a Path)> = Vec::new();
    let mut seen: HashSet<&'a Path> = HashSet::new();
    for (index, plugin) in plugins.iter().enumerate() {
        if seen.insert(plugin.wasm.as_path()) {
            first_use.push((index, plugin.wasm.as_path()));
        }
    }
    // An `oci://` plugin's component is pinned to the digest its lock and the registry
    // agreed on: the bytes compiled are hashed and checked first.
    let compile = |&(index, path): &(usize, &'a Path)| {
        let plugin = &plugins[index];
        let code = host
            .runtime
            .compile(&plugin.name, path, plugin.oci_component.as_deref())
            .map_err(HostError::Wasm);
        (path, code)
    };
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(first_use.len());
    if workers <= 1 {
        return first_use.iter().map(compile).collect();
    }
    let next = AtomicUsize::new(0);
    let done = Mutex::new(CodeByFile::with_capacity(first_use.len()));
    // The caller's subscriber and span go with each worker, so that each compile's span is
    // where a compile on the caller's thread would be.
    let dispatch = tracing::dispatcher::get_default(Clone::clone);
    let parent = tracing::Span::current();
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                tracing::dispatcher::with_default(&dispatch, || {
                    let _entered = parent.enter();
                    while let Some(file) = first_use.get(next.fetch_add(1, Ordering::Relaxed)) {
                        let (path, entry) = compile(file);
                        done.lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner)
                            .insert(path, entry);
                    }
                })
            });
        }
    });
    done.into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
