//! The `prompt-host` binary: see `prompt_host::cli`.

fn main() -> std::process::ExitCode {
    prompt_host::cli::main()
}
