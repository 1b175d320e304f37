//! Builds the guest plugins in `guest-examples/` (a separate cargo workspace) for
//! `wasm32-wasip2` once, and tells the tests where each component is:
//!
//! * `GUEST_<CRATE_NAME_UPPER_SNAKE>` compile-time env vars (e.g. `GUEST_DECLARE`), read
//!   with `env!`;
//! * `$OUT_DIR/guests.rs`, which defines `GUESTS: &[(&str, &str)]` (crate name, path) and
//!   one `&str` const per guest, for `include!`.
//!
//! The guests build into `<repo>/target/guests` (and `guest-examples-v2/`, the examples
//! rebuilt against contract 0.2.0, into `<repo>/target/guests-v2`), target dirs of their own,
//! so the inner cargo never waits on the lock the outer build holds.

use std::env;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "wasm32-wasip2";

fn main() {
    let manifest_dir =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let repo = manifest_dir
        .parent()
        .expect("tests/ lives inside the repository")
        .to_path_buf();
    let guests = repo.join("guest-examples");
    let target_dir = repo.join("target").join("guests");

    // The examples rebuilt against contract 0.2.0 (same sources), in a workspace of their own.
    let guests_v2 = repo.join("guest-examples-v2");

    // A directory makes cargo rescan every file under it.
    println!("cargo:rerun-if-changed={}", repo.join("wit").display());
    println!("cargo:rerun-if-changed={}", guests.display());
    println!("cargo:rerun-if-changed={}", guests_v2.display());

    // Tests that act as another user (`setpriv`) need root; elsewhere they are ignored, and
    // the test summary says so.
    println!("cargo::rustc-check-cfg=cfg(as_root)");
    if running_as_root() {
        println!("cargo:rustc-cfg=as_root");
    }

    ensure_target_installed();
    let mut wasm = build_guests(&guests, &target_dir);
    wasm.extend(build_guests(
        &guests_v2,
        &repo.join("target").join("guests-v2"),
    ));
    emit(&wasm);
}

/// Whether this build (and so, normally, the tests it builds) runs as root.
fn running_as_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| out.status.success() && out.stdout.trim_ascii() == b"0")
}

/// The guests need the `wasm32-wasip2` standard library. `rust-toolchain.toml` names the
/// target, so rustup installs it with the toolchain; a build without it (another toolchain,
/// a distribution's Rust) stops here with what to do, instead of installing anything.
fn ensure_target_installed() {
    let rustc = env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let sysroot = Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map(|out| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()));
    let installed = sysroot
        .as_deref()
        .is_some_and(|root| root.join("lib/rustlib").join(TARGET).join("lib").is_dir());
    if !installed {
        panic!(
            "the {TARGET} target is not installed for this toolchain ({}): the tests load \
             guest plugins built for it. rustup installs it with the toolchain \
             rust-toolchain.toml names; otherwise run `rustup target add {TARGET}`",
            sysroot.map_or_else(
                || "rustc not found".to_string(),
                |p| p.display().to_string()
            )
        );
    }
}

/// Environment the outer cargo sets for this build script that would leak into, or break,
/// the inner build: flags meant for the host target, wrappers such as clippy-driver, and the
/// per-package variables. User settings for the registry and network are kept.
fn scrub(cmd: &mut Command) {
    const KEEP_CARGO: &[&str] = &[
        "CARGO_HOME",
        "CARGO_MAKEFLAGS",
        "CARGO_NET_",
        "CARGO_HTTP_",
        "CARGO_REGISTRIES_",
        "CARGO_REGISTRY_",
        "CARGO_TERM_",
    ];
    const DROP: &[&str] = &[
        "RUSTFLAGS",
        "RUSTDOCFLAGS",
        "RUSTC",
        "RUSTDOC",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "RUSTC_LINKER",
        "CLIPPY_ARGS",
        "CLIPPY_CONF_DIR",
        "TARGET",
        "HOST",
        "OUT_DIR",
        "OPT_LEVEL",
        "PROFILE",
        "DEBUG",
        "NUM_JOBS",
    ];
    for (key, _) in env::vars_os() {
        let Some(key) = key.to_str() else { continue };
        let cargo_var = key.starts_with("CARGO_") && !KEEP_CARGO.iter().any(|k| key.starts_with(k));
        if cargo_var || DROP.contains(&key) {
            cmd.env_remove(key);
        }
    }
}

/// Build the guest workspace and return (crate name, absolute .wasm path) for every cdylib,
/// read from cargo's JSON artifact messages so stale files in the target dir never count.
fn build_guests(guests: &Path, target_dir: &Path) -> Vec<(String, PathBuf)> {
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    scrub(&mut cmd);
    cmd.args([
        "build",
        "--release",
        "--target",
        TARGET,
        "--message-format=json-render-diagnostics",
        "--manifest-path",
    ])
    .arg(guests.join("Cargo.toml"))
    .env("CARGO_TARGET_DIR", target_dir);
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("could not run cargo to build the guest plugins: {e}"));
    if !out.status.success() {
        panic!(
            "building the guest plugins failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let mut wasm: Vec<(String, PathBuf)> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains("\"reason\":\"compiler-artifact\""))
        .flat_map(json_string_list_after("\"filenames\":["))
        .filter(|f| f.ends_with(".wasm"))
        .map(|f| {
            let path = PathBuf::from(f);
            let stem = path
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or_default()
                .to_owned();
            (stem, path)
        })
        .collect();
    wasm.sort();
    wasm.dedup();
    if wasm.is_empty() {
        panic!("building the guest plugins produced no .wasm files");
    }
    wasm
}

/// The JSON string array that follows `key` in one cargo message. Cargo's messages are
/// machine-written JSON, so a tiny scanner avoids a build dependency.
fn json_string_list_after(key: &'static str) -> impl Fn(&str) -> Vec<String> {
    move |line| {
        let Some(start) = line.find(key) else {
            return Vec::new();
        };
        let mut items = Vec::new();
        let mut chars = line[start + key.len()..].chars();
        loop {
            match chars.next() {
                Some('"') => {
                    let mut s = String::new();
                    while let Some(c) = chars.next() {
                        match c {
                            '"' => break,
                            '\\' => match chars.next() {
                                Some('n') => s.push('\n'),
                                Some('t') => s.push('\t'),
                                Some(other) => s.push(other),
                                None => break,
                            },
                            c => s.push(c),
                        }
                    }
                    items.push(s);
                }
                Some(']') | None => return items,
                Some(_) => {}
            }
        }
    }
}

/// `GUEST_<NAME>` env vars and `$OUT_DIR/guests.rs`.
fn emit(wasm: &[(String, PathBuf)]) {
    let mut src = String::from(
        "// Generated by tests/build.rs: the guest plugins built from guest-examples/.\n\n\
         /// Every guest component: (crate name with `_` for `-`, absolute path of its .wasm).\n\
         pub const GUESTS: &[(&str, &str)] = &[\n",
    );
    for (name, path) in wasm {
        let _ = writeln!(src, "    ({name:?}, {:?}),", path.display().to_string());
    }
    src.push_str("];\n");
    for (name, path) in wasm {
        let var = format!("GUEST_{}", name.to_uppercase().replace('-', "_"));
        println!("cargo:rustc-env={var}={}", path.display());
        let _ = write!(
            src,
            "\n/// Path of the `{name}` guest component.\n#[allow(dead_code)]\npub const {var}: &str = {:?};\n",
            path.display().to_string()
        );
    }
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out_dir.join("guests.rs"), src).expect("write guests.rs into OUT_DIR");
}
