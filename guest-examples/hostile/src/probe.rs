//! Probes of what the sandbox lets through. Each reports what it saw as text, so a test can
//! assert that every attempt failed (and see why).

use std::io::Read;
use std::net::{TcpStream, ToSocketAddrs, UdpSocket};

fn outcome<T>(what: &str, result: std::io::Result<T>, ok: impl FnOnce(T) -> String) -> String {
    match result {
        Ok(v) => format!("{what}: ok: {}", ok(v)),
        Err(e) => format!("{what}: error: {e}"),
    }
}

/// Files: the host preopens no directory, so every path should fail.
pub fn fs() -> String {
    [
        outcome(
            "read /etc/passwd",
            std::fs::read_to_string("/etc/passwd"),
            |s| format!("{} bytes", s.len()),
        ),
        outcome("list /", std::fs::read_dir("/"), |d| {
            format!("{} entries", d.count())
        }),
        outcome("list .", std::fs::read_dir("."), |d| {
            format!("{} entries", d.count())
        }),
        outcome(
            "create /tmp/hostile",
            std::fs::write("/tmp/hostile", "x"),
            |()| "written".into(),
        ),
    ]
    .join("\n")
}

/// Environment, arguments and working directory, as JSON: a test asserts they are empty.
pub fn env() -> String {
    let env: Vec<(String, String)> = std::env::vars().collect();
    let args: Vec<String> = std::env::args().collect();
    let cwd = std::env::current_dir()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    prompt_plugin::serde_json::json!({"env": env, "args": args, "cwd": cwd}).to_string()
}

/// Network: the host links no socket capability, so connects, binds and lookups should fail.
pub fn net() -> String {
    [
        outcome(
            "tcp connect 127.0.0.1:1",
            TcpStream::connect("127.0.0.1:1"),
            |_| "connected".into(),
        ),
        outcome("udp bind 0.0.0.0:0", UdpSocket::bind("0.0.0.0:0"), |_| {
            "bound".into()
        }),
        outcome(
            "resolve localhost:80",
            ("localhost", 80).to_socket_addrs(),
            |a| format!("{} addresses", a.count()),
        ),
    ]
    .join("\n")
}

/// Standard input: closed, so a read returns nothing (or fails).
pub fn stdin() -> String {
    let mut text = String::new();
    outcome(
        "read stdin",
        std::io::stdin().read_to_string(&mut text),
        |n| format!("{n} bytes"),
    )
}

/// Read a whole file (as a careless plugin would): its size, or a failure naming the path.
pub fn read_file(path: &str) -> Result<String, prompt_plugin::Error> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(format!("read {path}: {} bytes", bytes.len())),
        Err(e) => Err(prompt_plugin::Error::failed(format!(
            "cannot read {path}: {e}"
        ))),
    }
}

/// The start of a file's text (what was read, for a test to look at), or why not.
pub fn read_head(path: &str) -> String {
    match std::fs::read(path) {
        Ok(bytes) => {
            let head = String::from_utf8_lossy(&bytes[..bytes.len().min(64)]).into_owned();
            format!("read {path}: {head}")
        }
        Err(e) => format!("cannot read {path}: {e}"),
    }
}

/// Count a directory's entries (as a careless plugin would list one): the count, or a
/// failure naming the path.
pub fn list_dir(path: &str) -> Result<String, prompt_plugin::Error> {
    let entries = std::fs::read_dir(path)
        .map_err(|e| prompt_plugin::Error::failed(format!("cannot list {path}: {e}")))?;
    let mut count = 0usize;
    for entry in entries {
        entry.map_err(|e| prompt_plugin::Error::failed(format!("cannot list {path}: {e}")))?;
        count += 1;
    }
    Ok(format!("listed {path}: {count} entries"))
}

/// Try to change the filesystem at `path`: create and write it, rename it, delete it, make a
/// directory there. One line per attempt, as `outcome` reports it.
pub fn write_file(path: &str) -> String {
    let moved = format!("{path}.moved");
    [
        outcome("create", std::fs::write(path, "x"), |()| "written".into()),
        outcome("rename", std::fs::rename(path, &moved), |()| {
            "renamed".into()
        }),
        outcome("delete", std::fs::remove_file(path), |()| "deleted".into()),
        outcome("mkdir", std::fs::create_dir(&moved), |()| "created".into()),
    ]
    .join("\n")
}
