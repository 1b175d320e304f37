//! The `prompt-host` binary: see [`prompt_host_cli`].

fn main() -> std::process::ExitCode {
    prompt_host_cli::main()
}
