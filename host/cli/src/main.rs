//! The `prompt-host` binary: see [`prompt_host_cli`].

/// A step is allocation-bound: with mimalloc it takes about half the time it takes with
/// glibc's malloc (docs/benchmarks.md §7). The library leaves the choice to its embedder.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    prompt_host_cli::main()
}
