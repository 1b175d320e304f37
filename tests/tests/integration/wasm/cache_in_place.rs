//! Compiled code from the disk cache runs from the cache file's own pages (Linux), survives
//! the cache's writers replacing the file, and is copied where the file cannot be mapped
//! executable (a cache directory on a `noexec` mount), through the library and the command
//! line.

use std::path::Path;

use serde_json::json;

use crate::integration::support::wasm::*;

/// The lines of this process's memory map that map `file_name`.
fn mappings_of(file_name: &str) -> Vec<String> {
    std::fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .filter(|line| line.contains(file_name))
        .map(str::to_string)
        .collect()
}

/// The text of section `s` assembled for `scope`.
fn dynamic_text(reg: &prompt_host::prompt::Registry, scope: &str) -> String {
    let assembly = assemble(reg, Some(scope));
    let section = assembly.sections.iter().find(|s| s.name == "s");
    section.expect("section s").text.clone()
}

fn cwasm_files(cache: &Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(cache)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .collect()
}

#[cfg(target_os = "linux")]
#[test]
fn cached_code_runs_from_the_cache_file_and_outlives_its_replacement() {
    let dir = tempfile::tempdir().unwrap();
    let config =
        json!({"sections": [{"name": "s", "order": 1, "text": {"dynamic": "dyn for ${scope}"}}]});
    // The first runtime compiles and stores the code.
    let first = runtime(dir.path());
    first.compile("p", &declare(), None).unwrap();
    assert_eq!(first.stats().compiles, 1);
    drop(first);
    let [artifact] = cwasm_files(dir.path()).try_into().unwrap();
    let name = artifact.file_name().unwrap().to_string_lossy().into_owned();
    assert!(mappings_of(&name).is_empty(), "{:?}", mappings_of(&name));

    // Another runtime (another process) runs it from the file: an executable mapping of it.
    let warm = runtime(dir.path());
    let reg = registry();
    let plugin = warm
        .load(&reg, &spec("p", None, config), &declare())
        .unwrap();
    let s = warm.stats();
    assert_eq!(
        (s.compiles, s.disk_hits, s.disk_in_place),
        (0, 1, 1),
        "{s:?}"
    );
    let mapped = mappings_of(&name);
    assert!(
        mapped.iter().any(|line| {
            let perms = line.split_whitespace().nth(1).unwrap_or("");
            perms.starts_with("r-x")
        }),
        "no executable mapping of {name}: {mapped:?}"
    );
    assert_eq!(dynamic_text(&reg, "agent:1"), "dyn for agent:1");

    // The cache's writers replace a file by rename: the code running from the old one is
    // left as it was.
    std::fs::remove_file(&artifact).unwrap();
    let third = runtime(dir.path());
    third.compile("p", &declare(), None).unwrap();
    assert_eq!(third.stats().compiles, 1);
    assert!(artifact.exists());
    assert!(
        mappings_of(&name).iter().any(|l| l.ends_with("(deleted)")),
        "{:?}",
        mappings_of(&name)
    );
    for scope in ["agent:2", "agent:3"] {
        assert_eq!(dynamic_text(&reg, scope), format!("dyn for {scope}"));
    }
    drop((plugin, warm));
    assert!(
        mappings_of(&name).is_empty(),
        "the mapping goes with the code: {:?}",
        mappings_of(&name)
    );
}

/// A cache directory on a `noexec` mount (as `/tmp` often is): the code cannot run from the
/// file, so it is copied, and the file is neither refused nor recompiled. Through the command
/// line, in a mount namespace of its own.
#[cfg_attr(
    not(as_root),
    ignore = "needs root, to mount a noexec file system in a mount namespace of its own"
)]
#[test]
fn a_cache_on_a_noexec_mount_is_used_by_copying_the_code() {
    use crate::integration::support::cli::{bin, Deployment};
    let d = Deployment::new(&format!(
        "[prompt]\ninclude_harness_identity = false\n\n[[scope]]\nname = \"agent:1\"\n\n[[plugin]]\nname = \"persona\"\nwasm = {:?}\nscope = \"agent:1\"\nconfig = {{ text = \"Persona from a noexec cache.\" }}\n",
        env!("GUEST_PERSONA")
    ));
    let cache = tempfile::tempdir().unwrap();
    let render = format!(
        "{:?} render --config {:?} --scope agent:1 --log-level info",
        bin(),
        d.config()
    );
    // Compile and store, note the file's inode, load it again, note the inode again.
    let script = format!(
        "set -e; mount -t tmpfs -o noexec,mode=0700,size=64m tmpfs {cache:?}; \
         grep -q ' {cache} tmpfs .*noexec' /proc/self/mounts; \
         {render}; ls -i {cache:?}/*.cwasm; {render}; ls -i {cache:?}/*.cwasm",
        cache = cache.path().display()
    );
    let out = std::process::Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", &script])
        .env("PROMPT_HOST_CACHE_DIR", cache.path())
        .output()
        .expect("unshare");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    let renders: Vec<&&str> = lines
        .iter()
        .filter(|l| l.contains("Persona from a noexec cache."))
        .collect();
    assert_eq!(renders.len(), 2, "{stdout}");
    let inodes: Vec<&str> = lines
        .iter()
        .filter(|l| l.ends_with(".cwasm"))
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(inodes.len(), 2, "{stdout}");
    assert_eq!(
        inodes[0], inodes[1],
        "the file was replaced: {stdout}\n{stderr}"
    );
    assert!(
        stderr.contains("compiled code loaded from disk cache") && stderr.contains("(copied)"),
        "{stderr}"
    );
    assert!(!stderr.contains("unusable"), "{stderr}");
}
