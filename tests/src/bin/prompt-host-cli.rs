//! The `prompt-host` command line, built inside the test package so integration tests can
//! run the real binary through `CARGO_BIN_EXE_prompt-host-cli` (same code as `prompt-host`).

fn main() -> std::process::ExitCode {
    prompt_host_cli::main()
}
