//! A deployment's files fetched, and its plugins' `init` run ahead of their turns, side by
//! side on the machine's cores.
//!
//! With a warm cache, [`Host::from_config`] is two kinds of work: getting each distinct
//! component's compiled code (mapping the cache file, copying the code into executable
//! memory) and, for each plugin, instantiating it and running its `init`. A file does not
//! depend on another file, and a plugin's `init` does not depend on another plugin's until
//! its declarations reach the registry. So up to as many threads as there are cores (the
//! caller's among them; one pool for both kinds, since a thread's first call into Wasm sets
//! it up at some cost) take, in turn, the next file nobody has taken, else the first plugin
//! whose file is there, each run keeping its declarations and output (`wasm/ahead.rs`).
//! `from_config` then takes the plugins in host.toml's order, committing each run or, when
//! one cannot stand, loading that plugin the usual way in its turn.
//!
//! [`Host::from_config`]: super::Host::from_config

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use super::{Host, HostError};
use crate::config::PluginConfig;
use crate::policy::PluginSpec;
use crate::wasm::{Ahead, PluginCode};

/// The code of each distinct file, as compiled for the first plugin that uses it (the errors
/// carry that plugin's name).
pub(super) type CodeByFile<'a> = HashMap<&'a Path, Result<PluginCode, HostError>>;

/// What the threads share.
struct Board<'a> {
    /// Each distinct file with the index of its first plugin, in first-use order.
    files: Vec<(usize, &'a Path)>,
    /// Files taken so far (they are taken in order).
    files_taken: usize,
    code: CodeByFile<'a>,
    /// Per plugin: taken by a thread (or left: its file has no code).
    plugin_taken: Vec<bool>,
    ahead: Vec<Option<Ahead>>,
}

/// What to do next.
enum Job<'a> {
    File(usize, &'a Path),
    Plugin(usize),
    Wait,
    Done,
}

impl<'a> Board<'a> {
    fn next_job(&mut self, plugins: &'a [PluginConfig], run_ahead: bool) -> Job<'a> {
        if let Some(&(index, path)) = self.files.get(self.files_taken) {
            self.files_taken += 1;
            return Job::File(index, path);
        }
        if !run_ahead {
            return Job::Done;
        }
        let mut waiting = false;
        for (index, plugin) in plugins.iter().enumerate() {
            if self.plugin_taken[index] {
                continue;
            }
            match self.code.get(plugin.wasm.as_path()) {
                Some(Ok(_)) => {
                    self.plugin_taken[index] = true;
                    return Job::Plugin(index);
                }
                // Loaded in its turn, where its error is told.
                Some(Err(_)) => self.plugin_taken[index] = true,
                None => waiting = true,
            }
        }
        if waiting {
            Job::Wait
        } else {
            Job::Done
        }
    }
}

/// Every distinct file's code, and `init` run ahead for each plugin whose file has code (by
/// index in `plugins`; `None` where it was not run or cannot stand). On one core nothing
/// runs ahead: there is nothing to run beside.
pub(super) fn fetch_and_run_ahead<'a>(
    host: &Host,
    plugins: &'a [PluginConfig],
    specs: &[PluginSpec],
) -> (CodeByFile<'a>, Vec<Option<Ahead>>) {
    let mut files: Vec<(usize, &'a Path)> = Vec::new();
    for (index, plugin) in plugins.iter().enumerate() {
        if !files.iter().any(|(_, path)| *path == plugin.wasm.as_path()) {
            files.push((index, plugin.wasm.as_path()));
        }
    }
    let cores = crate::blocking::cores();
    let run_ahead = cores > 1 && plugins.len() > 1;
    let threads = cores.min(if run_ahead {
        plugins.len()
    } else {
        files.len()
    });
    let board = Mutex::new(Board {
        files,
        files_taken: 0,
        code: CodeByFile::new(),
        plugin_taken: vec![false; plugins.len()],
        ahead: plugins.iter().map(|_| None).collect(),
    });
    let changed = Condvar::new();
    let lock = || board.lock().unwrap_or_else(PoisonError::into_inner);
    // An `oci://` plugin's component is pinned to the digest its lock and the registry
    // agreed on: the bytes compiled are hashed and checked first.
    let fetch = |index: usize, path: &Path| {
        let plugin = &plugins[index];
        host.runtime
            .compile(&plugin.name, path, plugin.oci_component.as_deref())
            .map_err(HostError::Wasm)
    };
    let run = |index: usize, code: &PluginCode| -> Option<Ahead> {
        let spec = &specs[index];
        host.check_scope(spec.scope.as_deref()).ok()?;
        host.runtime.load_ahead(spec, code)
    };
    let work = || {
        let mut held: MutexGuard<'_, Board<'a>> = lock();
        loop {
            match held.next_job(plugins, run_ahead) {
                Job::File(index, path) => {
                    drop(held);
                    // A thread waiting for this file must not wait forever if fetching it
                    // panics: the file gets an error, and the panic goes on.
                    let fetched = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        fetch(index, path)
                    }));
                    held = lock();
                    match fetched {
                        Ok(code) => {
                            held.code.insert(path, code);
                            changed.notify_all();
                        }
                        Err(panic) => {
                            let error = crate::wasm::WasmError::runtime(
                                "fetching a component's compiled code panicked",
                            );
                            held.code.insert(path, Err(HostError::Wasm(error)));
                            changed.notify_all();
                            drop(held);
                            std::panic::resume_unwind(panic);
                        }
                    }
                }
                Job::Plugin(index) => {
                    let code = match held.code.get(plugins[index].wasm.as_path()) {
                        Some(Ok(code)) => code.clone(),
                        _ => continue,
                    };
                    drop(held);
                    let ahead = run(index, &code);
                    held = lock();
                    held.ahead[index] = ahead;
                }
                Job::Wait => {
                    held = changed.wait(held).unwrap_or_else(PoisonError::into_inner);
                }
                Job::Done => break,
            }
        }
    };
    if threads <= 1 {
        work();
    } else {
        // The caller's subscriber and span go with each thread, so that each compile's and
        // load's span is where one on the caller's thread would be.
        let dispatch = tracing::dispatcher::get_default(Clone::clone);
        let parent = tracing::Span::current();
        std::thread::scope(|scope| {
            for _ in 1..threads {
                scope.spawn(|| {
                    tracing::dispatcher::with_default(&dispatch, || {
                        let _entered = parent.enter();
                        work();
                    })
                });
            }
            // Where a plugin call may block, as on any other path into a plugin.
            crate::blocking::run_blocking(work);
        });
    }
    let board = board.into_inner().unwrap_or_else(PoisonError::into_inner);
    (board.code, board.ahead)
}
