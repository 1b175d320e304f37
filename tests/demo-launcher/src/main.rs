//! `cargo demo` (an alias in `.cargo/config.toml`): check that this toolchain can build the
//! example plugins, then run the demo (`cargo run -p prompt-host-tests --features demo --bin
//! demo`), passing its arguments on.
//!
//! Why a program of its own: the demo's build script, which builds the plugins for
//! `wasm32-wasip2`, is a leaf of a 400-crate build and cargo runs it last, so without the
//! target a fresh machine compiled for 17 minutes before being told. Here the check comes
//! first, from a package with no dependencies.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// The target the example plugins are built for.
const TARGET: &str = "wasm32-wasip2";

fn main() -> ExitCode {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    if let Err(message) = check_target(&rustc_beside(&cargo, std::env::var_os("RUSTC"))) {
        eprintln!("error: {message}");
        return ExitCode::FAILURE;
    }
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.toml");
    let mut demo = Command::new(&cargo);
    demo.arg("run").arg("--manifest-path").arg(&manifest).args([
        "-p",
        "prompt-host-tests",
        "--features",
        "demo",
        "--bin",
        "demo",
    ]);
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    if !args.is_empty() {
        demo.arg("--").args(args);
    }
    // What `cargo run` set for this program describes this package, not the demo's build.
    for (key, _) in std::env::vars_os() {
        let Some(key) = key.to_str() else { continue };
        if key.starts_with("CARGO_PKG_")
            || matches!(
                key,
                "CARGO_MANIFEST_DIR"
                    | "CARGO_MANIFEST_PATH"
                    | "CARGO_CRATE_NAME"
                    | "CARGO_BIN_NAME"
                    | "CARGO_PRIMARY_PACKAGE"
            )
        {
            demo.env_remove(key);
        }
    }
    run(demo)
}

/// The `rustc` the demo's build uses: `RUSTC`, else the one beside `cargo` (a rustup
/// toolchain's or a distribution's), else `rustc` on `PATH`.
fn rustc_beside(cargo: &OsString, rustc_var: Option<OsString>) -> OsString {
    if let Some(rustc) = rustc_var {
        return rustc;
    }
    let beside = Path::new(cargo).with_file_name("rustc");
    if beside.is_file() {
        beside.into_os_string()
    } else {
        "rustc".into()
    }
}

/// `Ok` when `rustc`'s sysroot holds the standard library for `TARGET`; else what to run.
fn check_target(rustc: &OsString) -> Result<(), String> {
    let out = Command::new(rustc)
        .args(["--print", "sysroot"])
        .output()
        .map_err(|e| format!("cannot run {}: {e}", Path::new(rustc).display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} --print sysroot failed: {}",
            Path::new(rustc).display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let sysroot = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    if sysroot
        .join("lib/rustlib")
        .join(TARGET)
        .join("lib")
        .is_dir()
    {
        return Ok(());
    }
    Err(format!(
        "the {TARGET} target is not installed for the toolchain at {}: the demo's plugins are \
         built for it. Install it with\n\n    rustup target add {TARGET}\n\n(rustup installs it \
         with the toolchain rust-toolchain.toml names, unless RUSTUP_AUTO_INSTALL=0 or the \
         toolchain was installed without it), then run `cargo demo` again.",
        sysroot.display()
    ))
}

/// Run the demo in this process's place, so a signal reaches it as it would reach cargo.
#[cfg(unix)]
fn run(mut demo: Command) -> ExitCode {
    use std::os::unix::process::CommandExt;
    let e = demo.exec();
    eprintln!("error: cannot run cargo: {e}");
    ExitCode::FAILURE
}

#[cfg(not(unix))]
fn run(mut demo: Command) -> ExitCode {
    match demo.status() {
        Ok(status) if status.success() => ExitCode::SUCCESS,
        Ok(status) => ExitCode::from(status.code().unwrap_or(1).clamp(1, 255) as u8),
        Err(e) => {
            eprintln!("error: cannot run cargo: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A stand-in `rustc` that prints `sysroot` for `--print sysroot`.
    fn fake_rustc(dir: &Path, sysroot: &Path) -> OsString {
        let path = dir.join("rustc");
        std::fs::write(&path, format!("#!/bin/sh\necho '{}'\n", sysroot.display())).expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        path.into_os_string()
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("demo-launcher-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("mkdir");
        dir
    }

    #[test]
    fn a_toolchain_without_the_target_is_told_the_one_command_that_adds_it() {
        let dir = scratch("without");
        let sysroot = dir.join("sysroot");
        std::fs::create_dir_all(sysroot.join("lib/rustlib/x86_64-unknown-linux-gnu/lib"))
            .expect("mkdir");
        let rustc = fake_rustc(&dir, &sysroot);
        assert_eq!(
            check_target(&rustc),
            Err(format!(
                "the wasm32-wasip2 target is not installed for the toolchain at {}: the demo's \
                 plugins are built for it. Install it with\n\n    rustup target add \
                 wasm32-wasip2\n\n(rustup installs it with the toolchain rust-toolchain.toml \
                 names, unless RUSTUP_AUTO_INSTALL=0 or the toolchain was installed without \
                 it), then run `cargo demo` again.",
                sysroot.display()
            ))
        );
        std::fs::create_dir_all(sysroot.join("lib/rustlib/wasm32-wasip2/lib")).expect("mkdir");
        assert_eq!(check_target(&rustc), Ok(()));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_rustc_that_cannot_run_is_named() {
        let missing: OsString = "/nonexistent/rustc".into();
        let e = check_target(&missing).unwrap_err();
        assert!(e.starts_with("cannot run /nonexistent/rustc: "), "{e}");
    }

    #[test]
    fn the_rustc_beside_cargo_is_the_one_checked() {
        let dir = scratch("beside");
        let rustc = fake_rustc(&dir, Path::new("/"));
        let cargo: OsString = dir.join("cargo").into_os_string();
        assert_eq!(rustc_beside(&cargo, None), rustc);
        assert_eq!(
            rustc_beside(&cargo, Some("/opt/rustc".into())),
            OsString::from("/opt/rustc")
        );
        assert_eq!(
            rustc_beside(&OsString::from("/nonexistent/cargo"), None),
            OsString::from("rustc")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
