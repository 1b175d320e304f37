//! Child processes and written files, attacked from outside: `dev` stopped during a build
//! and fed a build that prints without end, `dev` on a host.toml named without a directory,
//! `serve` killed with an MCP server that ignores the end of its input, and `new` racing a
//! symbolic link planted in the project it writes.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use crate::integration::support::cli::bin;
use crate::integration::support::serve::memory_of;

/// Whether process `pid` is gone (or a zombie nobody reaped yet: it runs no code).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

fn wait_gone(pid: u32, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if gone(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    gone(pid)
}

/// The pids of the processes whose command line contains `needle`.
fn processes_with(needle: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if text.contains(needle) && !gone(pid) {
            found.push(pid);
        }
    }
    found
}

fn lines_of(child: &mut Child) -> Receiver<String> {
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

fn wait_for(lines: &Receiver<String>, needle: &str) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut seen = Vec::new();
    while Instant::now() < deadline {
        match lines.recv_timeout(Duration::from_millis(200)) {
            Ok(line) => {
                let found = line.contains(needle);
                seen.push(line);
                if found {
                    return seen;
                }
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(_) => break,
        }
    }
    panic!("never saw {needle:?}; output:\n{}", seen.join("\n"));
}

/// A plugin project `dev` can rebuild: `build.sh` under `dev.build`, sources in `src/`.
fn project(dir: &Path, build: &str) -> PathBuf {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::create_dir_all(dir.join("dist")).unwrap();
    std::fs::write(dir.join("src/plugin.txt"), "one").unwrap();
    std::fs::copy(env!("GUEST_PERSONA"), dir.join("dist/plugin.wasm")).unwrap();
    let config = dir.join("host.toml");
    std::fs::write(
        &config,
        format!(
            "[prompt]\ninclude_harness_identity = false\n\n[[scope]]\nname = \"agent:1\"\n\n\
             [[plugin]]\nname = \"p\"\nwasm = \"dist/plugin.wasm\"\nscope = \"agent:1\"\n\
             config = {{ text = \"Built.\" }}\n[plugin.dev]\nbuild = {build:?}\nwatch = [\"src\"]\n"
        ),
    )
    .unwrap();
    config
}

fn dev(dir: &Path, config: &str, extra: &[&str]) -> Child {
    Command::new(bin())
        .args([
            "dev",
            "--config",
            config,
            "--scope",
            "agent:1",
            "--interval-ms",
            "50",
        ])
        .args(extra)
        .current_dir(dir)
        .env("PROMPT_HOST_CACHE_DIR", dir.join("cache"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn touch_source(dir: &Path, text: &str) {
    // A later modification time, even on a coarse clock.
    std::thread::sleep(Duration::from_millis(20));
    std::fs::write(dir.join("src/plugin.txt"), text).unwrap();
}

#[test]
fn dev_stopped_during_a_build_stops_the_build_too() {
    let root = tempfile::tempdir().unwrap();
    let marker = format!("sleep 31{}", std::process::id() % 1000);
    project(root.path(), &format!("{marker}; true"));
    let mut child = dev(root.path(), "host.toml", &[]);
    let lines = lines_of(&mut child);
    wait_for(&lines, "== end of prompt");
    touch_source(root.path(), "two");
    wait_for(&lines, "== building plugin \"p\"");
    let deadline = Instant::now() + Duration::from_secs(30);
    while processes_with(&marker).is_empty() {
        assert!(Instant::now() < deadline, "the build never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: signals only the child started above.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let seen = wait_for(
        &lines,
        "== stopped (SIGTERM) during the build of plugin \"p\"",
    );
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}: {}", seen.join("\n"));
    let deadline = Instant::now() + Duration::from_secs(10);
    while !processes_with(&marker).is_empty() {
        assert!(
            Instant::now() < deadline,
            "the build outlived dev: {:?}",
            processes_with(&marker)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_build_printing_without_end_keeps_dev_small() {
    let root = tempfile::tempdir().unwrap();
    // 300 MB of output, then a failure.
    project(
        root.path(),
        "yes 'a line of build output' | head -c 300000000; echo ending-$((1 + 1)); exit 3",
    );
    let mut child = dev(root.path(), "host.toml", &[]);
    let lines = lines_of(&mut child);
    wait_for(&lines, "== end of prompt");
    touch_source(root.path(), "two");
    // What the build printed last (the command's text says `$((1 + 1))`).
    let seen = wait_for(&lines, "ending-2");
    let text = seen.join("\n");
    assert!(
        text.contains("== build failed for plugin \"p\"; the running plugin stays loaded"),
        "{text}"
    );
    assert!(text.contains("exited with exit status: 3"), "{text}");
    let peak = memory_of(child.id(), "VmHWM");
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        peak < 200 << 20,
        "dev peaked at {peak} bytes for 300 MB of build output"
    );
}

#[test]
fn dev_rebuilds_with_a_config_named_without_a_directory() {
    let root = tempfile::tempdir().unwrap();
    // The build changes the component (a fresh copy: a new modification time).
    let build = format!("cp {:?} dist/plugin.wasm", env!("GUEST_PERSONA"));
    project(root.path(), &build);
    let mut child = dev(root.path(), "host.toml", &["--max-rounds", "1"]);
    let lines = lines_of(&mut child);
    wait_for(&lines, "== end of prompt");
    touch_source(root.path(), "two");
    let seen = wait_for(&lines, "== stopping after 1 round(s)");
    let text = seen.join("\n");
    assert!(text.contains("== reloaded plugin \"p\""), "{text}");
    assert!(!text.contains("cannot run"), "{text}");
    assert!(child.wait().unwrap().success());
}

#[test]
fn serve_killed_takes_its_mcp_server_with_it() {
    let root = tempfile::tempdir().unwrap();
    let pid_file = root.path().join("server.pid");
    // An "MCP server" that ignores the end of its input and SIGTERM.
    let script = root.path().join("stubborn.py");
    std::fs::write(
        &script,
        "import os, signal, sys, time\n\
         signal.signal(signal.SIGTERM, signal.SIG_IGN)\n\
         open(sys.argv[1], 'w').write(str(os.getpid()))\n\
         while True:\n    time.sleep(1)\n",
    )
    .unwrap();
    let config = root.path().join("host.toml");
    std::fs::write(
        &config,
        format!(
            "[host]\nmcp_provider = {provider:?}\n\n[[mcp]]\nname = \"stubborn\"\ncommand = {python:?}\n\
             args = [{script:?}, {pid:?}]\ntimeout_ms = 60000\n",
            provider = env!("GUEST_MCP_INSTRUCTIONS"),
            python = crate::integration::mcp::client::python(),
            script = script,
            pid = pid_file,
        ),
    )
    .unwrap();
    let mut serve = Command::new(bin())
        .args(["serve", "--config", config.to_str().unwrap()])
        .env("PROMPT_HOST_CACHE_DIR", root.path().join("cache"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let server_pid = loop {
        if let Ok(text) = std::fs::read_to_string(&pid_file) {
            if let Ok(pid) = text.trim().parse::<u32>() {
                break pid;
            }
        }
        assert!(Instant::now() < deadline, "the MCP server never started");
        std::thread::sleep(Duration::from_millis(50));
    };
    serve.kill().unwrap();
    serve.wait().unwrap();
    assert!(
        wait_gone(server_pid, Duration::from_secs(10)),
        "the MCP server {server_pid} outlived the SIGKILLed serve"
    );
}

#[test]
fn new_never_writes_through_a_symlink_planted_while_it_writes() {
    let root = tempfile::tempdir().unwrap();
    let outside = root.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    let mut planted = 0;
    for round in 0..20 {
        let dir = root.path().join(format!("project-{round}"));
        let watcher_dir = dir.clone();
        let target = outside.clone();
        // Plant `vendor` as a link out as soon as the project's first file appears.
        let watcher = std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(20);
            while Instant::now() < deadline {
                if watcher_dir.join("Cargo.toml").exists() {
                    return std::os::unix::fs::symlink(&target, watcher_dir.join("vendor")).is_ok();
                }
                std::hint::spin_loop();
            }
            false
        });
        let out = Command::new(bin())
            .args(["new", "plugin", "--dir", dir.to_str().unwrap()])
            .output()
            .unwrap();
        planted += usize::from(watcher.join().unwrap());
        let escaped: Vec<_> = walk(&outside);
        assert!(
            escaped.is_empty(),
            "round {round}: written outside the project: {escaped:?} (stdout {}, stderr {})",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    eprintln!("{planted} of 20 links planted in time, 0 files written through them");
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path.clone());
            }
            found.push(path);
        }
    }
    found
}
