//! The compile cache attacked from outside, through the command line: another user's
//! directory with a planted artifact that verifies under its key, directories and keys
//! others may write or read, a cache that cannot be created, and cache files replaced by
//! FIFOs. The cache is native code this host runs; whatever is wrong with it costs speed
//! (a warning, a compile in memory), never correctness, and never a hang.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::integration::support::cli::{bin, Deployment, Run};
use crate::integration::wasm::attacked_grants::mkfifo;

const PERSONA_TEXT: &str = "You are the victim's persona.";

fn victim() -> Deployment {
    Deployment::new(&format!(
        "[prompt]\ninclude_harness_identity = false\n\n[[scope]]\nname = \"agent:1\"\n\n[[plugin]]\nname = \"persona\"\nwasm = {:?}\nscope = \"agent:1\"\nconfig = {{ text = {PERSONA_TEXT:?} }}\n",
        env!("GUEST_PERSONA")
    ))
}

/// `prompt-host render` of `d` with the cache at `cache`, bounded in time.
fn render_with_cache(d: &Deployment, cache: &Path) -> Run {
    let mut command = Command::new(bin());
    command
        .args([
            "render",
            "--config",
            d.config().to_str().unwrap(),
            "--scope",
            "agent:1",
        ])
        .env("PROMPT_HOST_CACHE_DIR", cache);
    run_bounded(command)
}

fn run_bounded(mut command: Command) -> Run {
    command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = command.spawn().expect("spawn");
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let out = match rx.recv_timeout(Duration::from_secs(120)) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            // SAFETY: only signals the child started above.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
            panic!("the command hung");
        }
    };
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn files_named(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect()
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).into()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Rewrite the artifact at `from` (of another component) as the one of the wasm with
/// digest `victim`, with a header that verifies under `key`: what a user who can read the
/// key and write into the directory can do.
fn forge(from: &Path, victim: &[u8; 32], key: &[u8]) -> (String, Vec<u8>) {
    use hmac::Mac;
    // The artifact, then a trailer: magic, wasm digest, engine fingerprint, HMAC tag.
    let bytes = std::fs::read(from).unwrap();
    let (artifact, trailer) = bytes.split_at(bytes.len() - (8 + 32 + 32 + 32));
    let magic = &trailer[..8];
    let fingerprint = &trailer[40..72];
    let mut mac = <hmac::Hmac<sha2::Sha256> as Mac>::new_from_slice(key).unwrap();
    for part in [magic, &victim[..], fingerprint, artifact] {
        mac.update(part);
    }
    let tag = mac.finalize().into_bytes();
    let mut forged = artifact.to_vec();
    forged.extend_from_slice(magic);
    forged.extend_from_slice(victim);
    forged.extend_from_slice(fingerprint);
    forged.extend_from_slice(&tag);
    let name = from.file_name().unwrap().to_string_lossy();
    let suffix = name.split_once('-').unwrap().1;
    (format!("{}-{suffix}", hex(victim)), forged)
}

/// Another user (uid 4242) prepares `cache`: its key, readable, and an artifact of the
/// `declare` plugin planted under the persona plugin's digest.
#[cfg(as_root)]
fn plant_as_another_user(shared: &Path) {
    let attacker = |args: &[&str]| {
        let mut command = Command::new("setpriv");
        command
            .args(["--reuid=4242", "--regid=4242", "--clear-groups", "--"])
            .arg(bin())
            .args(args)
            .env("PROMPT_HOST_CACHE_DIR", shared);
        run_bounded(command)
    };
    // The attacker compiles a component of its own into the directory it created.
    attacker(&["check", env!("GUEST_DECLARE")]).ok();
    let key = std::fs::read(shared.join("cache-key")).unwrap();
    let from = files_named(shared, ".cwasm")
        .into_iter()
        .next()
        .expect("the attacker's artifact");
    let victim = sha256(&std::fs::read(env!("GUEST_PERSONA")).unwrap());
    let (name, forged) = forge(&from, &victim, &key);
    // Written as the attacker, so the file is theirs too.
    let planted = shared.join(&name);
    std::fs::write(&planted, forged).unwrap();
    let status = Command::new("chown")
        .arg("4242:4242")
        .arg(&planted)
        .status()
        .unwrap();
    assert!(status.success());
    chmod(&shared.join("cache-key"), 0o644);
}

#[test]
#[cfg_attr(
    not(as_root),
    ignore = "acts as another user with setpriv, which needs root: run the tests as root (.ci/run does)"
)]
fn another_users_cache_directory_is_refused_with_its_planted_code() {
    #[cfg(as_root)]
    {
        let shared_root = tempfile::tempdir().unwrap();
        chmod(shared_root.path(), 0o1777);
        let shared = shared_root.path().join("shared-cache");
        plant_as_another_user(&shared);
        let d = victim();
        let run = render_with_cache(&d, &shared);
        // The planted code would have declared the `declare` plugin's sections instead.
        assert_eq!(run.ok(), PERSONA_TEXT, "{}", run.stderr);
        assert!(
            run.stderr.contains(&format!(
                "compiled-code cache {}: not used: it belongs to uid 4242, not to this user (uid 0); running without a compiled-code cache",
                shared.display()
            )),
            "{}",
            run.stderr
        );
    }
}

#[test]
fn a_cache_others_may_write_or_a_key_others_may_read_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let cache = root.path().join("cache");
    let d = victim();
    assert_eq!(render_with_cache(&d, &cache).ok(), PERSONA_TEXT);
    chmod(&cache, 0o777);
    let run = render_with_cache(&d, &cache);
    assert_eq!(run.ok(), PERSONA_TEXT);
    assert!(
        run.stderr.contains(&format!(
            "compiled-code cache {}: not used: it is writable by other users (mode 0777); running without a compiled-code cache",
            cache.display()
        )),
        "{}",
        run.stderr
    );
    chmod(&cache, 0o700);
    chmod(&cache.join("cache-key"), 0o644);
    let run = render_with_cache(&d, &cache);
    assert_eq!(run.ok(), PERSONA_TEXT);
    assert!(
        run.stderr.contains(&format!(
            "compiled-code cache {}: key {}: it is readable or writable by other users (mode 0644); not used; running without a compiled-code cache",
            cache.display(),
            cache.join("cache-key").display()
        )),
        "{}",
        run.stderr
    );
}

#[test]
fn a_cache_that_cannot_be_created_is_warned_about_and_the_host_runs() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("file"), "not a directory").unwrap();
    let cache = root.path().join("file").join("cache");
    let d = victim();
    let run = render_with_cache(&d, &cache);
    assert_eq!(run.ok(), PERSONA_TEXT);
    assert!(
        run.stderr.contains(&format!(
            "compiled-code cache {}: cannot create it: ",
            cache.display()
        )) && run.stderr.contains("running without a compiled-code cache"),
        "{}",
        run.stderr
    );
}

#[test]
#[cfg_attr(
    not(as_root),
    ignore = "needs a directory this user cannot write to, i.e. another user (setpriv), which needs root"
)]
fn a_cache_on_a_directory_the_user_cannot_write_is_warned_about() {
    #[cfg(as_root)]
    {
        let root = tempfile::tempdir().unwrap();
        chmod(root.path(), 0o755);
        let cache = root.path().join("cache");
        let d = victim();
        chmod(d.dir.path(), 0o755);
        let mut command = Command::new("setpriv");
        command
            .args(["--reuid=4242", "--regid=4242", "--clear-groups", "--"])
            .arg(bin())
            .args([
                "render",
                "--config",
                d.config().to_str().unwrap(),
                "--scope",
                "agent:1",
            ])
            .env("PROMPT_HOST_CACHE_DIR", &cache);
        let run = run_bounded(command);
        assert_eq!(run.ok(), PERSONA_TEXT);
        assert!(
            run.stderr.contains("cannot create it: Permission denied"),
            "{}",
            run.stderr
        );
    }
}

#[test]
fn cache_files_replaced_by_fifos_never_hang_a_command() {
    let root = tempfile::tempdir().unwrap();
    let cache = root.path().join("cache");
    let d = victim();
    assert_eq!(render_with_cache(&d, &cache).ok(), PERSONA_TEXT);
    // Let the component file settle, so its identity is recorded on the next start.
    std::thread::sleep(Duration::from_millis(2100));
    assert_eq!(render_with_cache(&d, &cache).ok(), PERSONA_TEXT);
    let records: Vec<PathBuf> = files_named(&cache, ".id");
    assert!(!records.is_empty(), "identity records written");
    for record in &records {
        std::fs::remove_file(record).unwrap();
        mkfifo(record);
    }
    let run = render_with_cache(&d, &cache);
    assert_eq!(run.ok(), PERSONA_TEXT, "{}", run.stderr);
    // The key itself a FIFO: the cache is not used, and nothing blocks.
    std::fs::remove_file(cache.join("cache-key")).unwrap();
    mkfifo(&cache.join("cache-key"));
    let run = render_with_cache(&d, &cache);
    assert_eq!(run.ok(), PERSONA_TEXT);
    assert!(
        run.stderr.contains(
            "is a FIFO, not a regular file; not used; running without a compiled-code cache"
        ),
        "{}",
        run.stderr
    );
}

#[test]
fn the_default_cache_is_this_users_own_even_without_home() {
    let tmp = tempfile::tempdir().unwrap();
    let d = victim();
    let mut command = Command::new(bin());
    command
        .args([
            "render",
            "--config",
            d.config().to_str().unwrap(),
            "--scope",
            "agent:1",
        ])
        .env_remove("HOME")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("PROMPT_HOST_CACHE_DIR")
        .env("TMPDIR", tmp.path());
    let run = run_bounded(command);
    assert_eq!(run.ok(), PERSONA_TEXT);
    assert!(!run.stderr.contains("warning"), "{}", run.stderr);
    // Nothing in the shared temp directory, where another user could have been first.
    let shared: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().flatten().collect();
    assert!(shared.is_empty(), "{shared:?}");
}

#[test]
fn a_cache_write_that_fills_the_disk_leaves_no_temporary_file() {
    // A tmpfs of 256 KiB as the cache: the key (32 bytes) fits, the compiled code (over a
    // megabyte) does not, and its write fails with ENOSPC part way.
    let test = concat!(
        module_path!(),
        "::a_cache_write_that_fills_the_disk_leaves_no_temporary_file"
    );
    let Some(disk) = crate::integration::sessions::attacked::Tmpfs::mount(test, "256k") else {
        return;
    };
    let d = victim();
    let cache = disk.path().join("cache");
    let run = render_with_cache(&d, &cache);
    // The plugin runs, compiled in memory; the cache's failure is a warning.
    assert_eq!(run.ok(), PERSONA_TEXT);
    assert!(
        run.stderr.contains("cannot write the compiled-code cache")
            && run.stderr.contains("No space left on device"),
        "{}",
        run.stderr
    );
    let mut left = Vec::new();
    let mut dirs = vec![cache.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.to_string_lossy().ends_with(".tmp") {
                left.push(path);
            }
        }
    }
    assert!(left.is_empty(), "temporary files left behind: {left:?}");
    assert!(files_named(&cache, ".cwasm").is_empty());
    // The next run finds the disk as full as before, not fuller: it compiles again and
    // succeeds the same way.
    assert_eq!(render_with_cache(&d, &cache).ok(), PERSONA_TEXT);
}
