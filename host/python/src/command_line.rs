//! The `prompt-host` command line, run in the Python process by the package's console
//! script (`prompt_host._cli`).

use pyo3::prelude::*;

/// Run the command line with `args` (the first is the program's name) and return its exit
/// status. The GIL is released meanwhile: the command may run for as long as `serve` or
/// `dev` does, and the console script has nothing else to do.
#[pyfunction]
pub fn run_command_line(py: Python<'_>, args: Vec<std::ffi::OsString>) -> u8 {
    py.detach(move || prompt_host_cli::run_command_line(args))
}
