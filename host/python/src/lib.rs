//! `prompt_host._native`: the native part of the prompt-host Python package.
//!
//! - [`InProcessServer`]: `prompt-host serve` running inside the Python process, on threads
//!   of its own. The package's `InProcessHost` speaks the same JSON-RPC lines to it as
//!   `PromptHost` speaks to a server process, so both have the same methods, results, errors
//!   and cancellation; only the pipe and the process are gone. Every blocking call releases
//!   the GIL.
//! - [`run_command_line`]: the `prompt-host` command line, which the package installs as a
//!   console script, so a wheel is all an installation needs.
//! - `set_bundled_plugins`: where the package's own plugins are, found by name.
//!
//! An in-process host's own warnings go to Python's `logging` (logger `prompt_host`).

use pyo3::prelude::*;

/// Rust's allocations in this module (not Python's objects) come from mimalloc: a step is
/// allocation-bound, and glibc's malloc takes twice as long (docs/benchmarks.md §7).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod call;
mod command_line;
mod host_log;
mod lines;
mod server;
mod step_request;

pub use command_line::run_command_line;
pub use server::InProcessServer;
pub use step_request::StepRequest;

/// Set the directory of the plugins the package ships (`prompt_host/plugins`), searched by
/// name after `PROMPT_HOST_PLUGIN_PATH`; the package calls it when it loads this module.
#[pyfunction]
fn set_bundled_plugins(dir: std::path::PathBuf) {
    prompt_host::plugin_path::set_bundled_dir(dir);
}

/// The module: `InProcessServer`, `StepRequest`, `run_command_line`, `set_bundled_plugins`,
/// `__version__`.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<InProcessServer>()?;
    m.add_class::<StepRequest>()?;
    m.add_function(wrap_pyfunction!(run_command_line, m)?)?;
    m.add_function(wrap_pyfunction!(set_bundled_plugins, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // Whether `PROMPT_HOST_INJECT_PANIC` is honoured (a debug build): the tests of the
    // request-level boundary need it, and say so when it is not.
    m.add("FAULT_INJECTION", cfg!(debug_assertions))?;
    Ok(())
}
