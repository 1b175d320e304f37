//! The plugin against real `.git` trees (natively, where `std::fs` is the host's): written by
//! hand for each layout, and cross-checked against the `git` command when it is installed.

use std::fs;
use std::path::Path;
use std::process::Command;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use prompt_plugin::{config, serde_json, serde_json::json, Error};
use tempfile::TempDir;

use crate::{read, GitContext};

const SHA: &str = "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d";
const OTHER: &str = "9f8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c";
const HOST_ROOT: &str = "/home/dev/repo";

fn plugin(root: &Path, extra: serde_json::Value) -> Result<GitContext, Error> {
    let mut cfg = json!({
        "root": root.to_str().expect("temporary paths are UTF-8"),
        "host_root": HOST_ROOT,
    });
    if let (Some(cfg), Some(extra)) = (cfg.as_object_mut(), extra.as_object()) {
        cfg.extend(extra.clone());
    }
    GitContext::from_config(config::parse(cfg)?)
}

fn text_with(root: &Path, extra: serde_json::Value) -> Result<String, String> {
    plugin(root, extra)
        .and_then(|p| p.text())
        .map_err(|e| e.message().to_owned())
}

fn text(root: &Path) -> Result<String, String> {
    text_with(root, json!({}))
}

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).expect("create dirs");
    }
    fs::write(path, text).expect("write file");
}

fn tree() -> TempDir {
    tempfile::tempdir().expect("temporary directory")
}

#[test]
fn a_branch_with_a_loose_ref() {
    let dir = tree();
    write(dir.path(), ".git/HEAD", "ref: refs/heads/main\n");
    write(dir.path(), ".git/refs/heads/main", &format!("{SHA}\n"));
    assert_eq!(
        text(dir.path()).as_deref(),
        Ok("Git: branch main at 1a2b3c4 (detached: no)")
    );
    let long = text_with(dir.path(), json!({ "abbrev": 12 }));
    assert_eq!(
        long.as_deref(),
        Ok("Git: branch main at 1a2b3c4d5e6f (detached: no)")
    );
}

#[test]
fn a_detached_head() {
    let dir = tree();
    write(dir.path(), ".git/HEAD", &format!("{SHA}\n"));
    assert_eq!(
        text(dir.path()).as_deref(),
        Ok("Git: detached HEAD at 1a2b3c4 (detached: yes)")
    );
}

#[test]
fn a_branch_found_only_in_packed_refs() {
    let dir = tree();
    write(dir.path(), ".git/HEAD", "ref: refs/heads/feat/x\n");
    fs::create_dir_all(dir.path().join(".git/refs/heads/feat/x/deeper")).expect("mkdir");
    let packed = format!(
        "# pack-refs with: peeled fully-peeled sorted \n\
         {OTHER} refs/heads/feat/xy\n\
         {SHA} refs/heads/feat/x\n\
         {OTHER} refs/tags/v1\n^{SHA}\n"
    );
    write(dir.path(), ".git/packed-refs", &packed);
    assert_eq!(
        text(dir.path()).as_deref(),
        Ok("Git: branch feat/x at 1a2b3c4 (detached: no)")
    );
}

#[test]
fn an_unborn_branch_has_no_commits_yet() {
    let dir = tree();
    write(dir.path(), ".git/HEAD", "ref: refs/heads/trunk\n");
    fs::create_dir_all(dir.path().join(".git/refs/heads")).expect("mkdir");
    assert_eq!(
        text(dir.path()).as_deref(),
        Ok("Git: branch trunk, no commits yet (detached: no)")
    );
}

#[test]
fn a_symbolic_ref_is_followed() {
    let dir = tree();
    write(dir.path(), ".git/HEAD", "ref: refs/heads/alias\n");
    write(
        dir.path(),
        ".git/refs/heads/alias",
        "ref: refs/heads/main\n",
    );
    write(dir.path(), ".git/refs/heads/main", SHA);
    assert_eq!(
        text(dir.path()).as_deref(),
        Ok("Git: branch alias at 1a2b3c4 (detached: no)")
    );
    write(
        dir.path(),
        ".git/refs/heads/main",
        "ref: refs/heads/alias\n",
    );
    assert!(text(dir.path()).is_err_and(|m| m.contains("symbolic refs")));
}

#[test]
fn a_git_file_pointing_at_a_relative_gitdir() {
    let dir = tree();
    write(dir.path(), ".git", "gitdir: ./.bare\n");
    write(dir.path(), ".bare/HEAD", "ref: refs/heads/main\n");
    write(dir.path(), ".bare/refs/heads/main", SHA);
    assert_eq!(
        text(dir.path()).as_deref(),
        Ok("Git: branch main at 1a2b3c4 (detached: no)")
    );
}

#[test]
fn a_linked_worktree_with_an_absolute_gitdir_and_a_commondir() {
    let dir = tree();
    // The main checkout at the root; a linked worktree at wt/feature whose `.git` file names
    // its git directory by host path, which holds HEAD and points back at the shared one.
    write(dir.path(), ".git/HEAD", "ref: refs/heads/main\n");
    write(dir.path(), ".git/refs/heads/main", OTHER);
    write(dir.path(), ".git/refs/heads/feature", SHA);
    write(
        dir.path(),
        "wt/feature/.git",
        "gitdir: /home/dev/repo/.git/worktrees/feature\n",
    );
    write(
        dir.path(),
        ".git/worktrees/feature/HEAD",
        "ref: refs/heads/feature\n",
    );
    write(dir.path(), ".git/worktrees/feature/commondir", "../..\n");
    assert_eq!(
        text_with(dir.path(), json!({ "worktree": "wt/feature" })).as_deref(),
        Ok("Git: branch feature at 1a2b3c4 (detached: no)")
    );
    assert_eq!(
        text(dir.path()).as_deref(),
        Ok("Git: branch main at 9f8e7d6 (detached: no)")
    );
}

#[test]
fn a_git_file_pointing_outside_the_root_is_refused() {
    let dir = tree();
    write(dir.path(), ".git", "gitdir: ../elsewhere/.git\n");
    assert!(text(dir.path()).is_err_and(|m| m.contains("outside the granted directory")));
    write(
        dir.path(),
        ".git",
        "gitdir: /home/dev/other/.git/worktrees/x\n",
    );
    assert!(text(dir.path()).is_err_and(|m| m.contains("/home/dev/other/.git/worktrees/x")));
    write(dir.path(), ".git", "not a gitdir line\n");
    assert!(text(dir.path()).is_err_and(|m| m.contains("gitdir: <path>")));
}

#[test]
fn a_missing_repository_fails_naming_the_path_or_is_empty() {
    let dir = tree();
    let Err(e) = plugin(dir.path(), json!({})).and_then(|p| p.text()) else {
        panic!("a missing repository must fail");
    };
    assert!(matches!(e, Error::Failed(_)));
    let dot_git = dir.path().join(".git");
    assert!(
        e.message().contains(&*dot_git.to_string_lossy()),
        "{}",
        e.message()
    );
    assert_eq!(
        text_with(dir.path(), json!({ "missing": "empty" })).as_deref(),
        Ok("")
    );
}

#[test]
fn an_ungranted_root_fails_even_when_missing_is_empty() {
    let dir = tree();
    let root = dir.path().join("not-granted");
    let result = text_with(&root, json!({ "missing": "empty" }));
    assert!(result.is_err_and(
        |m| m.contains("no directory is granted") && m.contains(&*root.to_string_lossy())
    ));
}

#[cfg(unix)]
#[test]
fn a_fifo_is_refused_without_blocking() {
    let dir = tree();
    fs::create_dir_all(dir.path().join(".git")).expect("mkdir");
    let made = Command::new("mkfifo")
        .arg(dir.path().join(".git/HEAD"))
        .status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo failed");
    let root = dir.path().to_path_buf();
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(text(&root));
    });
    match rx.recv_timeout(Duration::from_secs(20)) {
        Ok(result) => assert!(
            result.is_err_and(|m| m.contains("not a regular file")),
            "a FIFO HEAD must be refused"
        ),
        Err(_) => panic!("the plugin blocked on a FIFO"),
    }
}

#[test]
fn oversized_files_are_refused_after_a_bounded_read() {
    let dir = tree();
    // A sparse 64 GiB HEAD: an unbounded read would take minutes and all memory.
    fs::create_dir_all(dir.path().join(".git")).expect("mkdir");
    let head = fs::File::create(dir.path().join(".git/HEAD")).expect("create");
    head.set_len(64 << 30).expect("sparse file");
    assert!(text(dir.path()).is_err_and(|m| m.contains("larger than 4096 bytes")));

    // packed-refs: a ref within the first MiB is found, one after it is an error.
    write(dir.path(), ".git/HEAD", "ref: refs/heads/main\n");
    let padding = format!("{OTHER} refs/tags/pad\n").repeat(read::PACKED_REFS_BYTES / 50);
    write(
        dir.path(),
        ".git/packed-refs",
        &format!("{SHA} refs/heads/main\n{padding}"),
    );
    assert_eq!(
        text(dir.path()).as_deref(),
        Ok("Git: branch main at 1a2b3c4 (detached: no)")
    );
    write(
        dir.path(),
        ".git/packed-refs",
        &format!("{padding}{SHA} refs/heads/main\n"),
    );
    assert!(text(dir.path()).is_err_and(|m| m.contains("larger than 1048576 bytes")));
}

#[test]
fn braces_in_a_branch_name_are_neutralised() {
    let dir = tree();
    write(dir.path(), ".git/HEAD", "ref: refs/heads/feat{{model}}\n");
    write(dir.path(), ".git/refs/heads/feat{{model}}", SHA);
    assert_eq!(
        text(dir.path()).as_deref(),
        Ok("Git: branch feat{ {model} } at 1a2b3c4 (detached: no)")
    );
}

#[test]
fn unrecognised_contents_are_errors_naming_the_file() {
    let dir = tree();
    write(dir.path(), ".git/HEAD", "garbage\n");
    assert!(text(dir.path()).is_err_and(|m| m.contains("HEAD") && m.contains("neither")));
    write(
        dir.path(),
        ".git/HEAD",
        "ref: refs/heads/../../../../etc/passwd\n",
    );
    assert!(text(dir.path()).is_err_and(|m| m.contains("invalid ref name")));
    write(dir.path(), ".git/HEAD", "ref: refs/heads/main\n");
    write(dir.path(), ".git/refs/heads/main", "1a2b3c4\n");
    assert!(text(dir.path()).is_err_and(|m| m.contains("refs/heads/main")));
    write(dir.path(), ".git/HEAD", "ref: refs/heads/.invalid\n");
    fs::create_dir_all(dir.path().join(".git/reftable")).expect("mkdir");
    assert!(text(dir.path()).is_err_and(|m| m.contains("reftable")));
}

#[test]
fn config_mistakes_are_invalid_input() {
    let dir = tree();
    for (extra, needle) in [
        (json!({ "rooot": "/repo" }), "unknown field"),
        (json!({ "missing": "ignore" }), "unknown variant"),
        (json!({ "abbrev": 2 }), "abbrev"),
        (json!({ "root": "repo" }), "root"),
        (json!({ "host_root": "repo" }), "host_root"),
        (json!({ "worktree": "../x" }), "worktree"),
    ] {
        let Err(e) = plugin(dir.path(), extra.clone()) else {
            panic!("{extra} must be refused");
        };
        assert!(matches!(e, Error::InvalidInput(_)), "{extra}");
        assert!(e.message().contains(needle), "{extra}: {}", e.message());
    }
}

/// `git` with a fixed identity and no user or system configuration.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args([
            "-c",
            "init.defaultBranch=main",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

#[test]
fn agrees_with_git_when_it_is_installed() {
    let dir = tree();
    if git(dir.path(), &["init", "-q"]).is_none() {
        eprintln!("git is not installed: cross-check skipped");
        return;
    }
    // git writes real paths into a worktree's `.git` file: use the real path as the root.
    let real = fs::canonicalize(dir.path()).expect("canonical path");
    let host_root = real.to_str().expect("UTF-8");
    let run = |extra: serde_json::Value| {
        let mut cfg = json!({ "root": host_root });
        if let (Some(cfg), Some(extra)) = (cfg.as_object_mut(), extra.as_object()) {
            cfg.extend(extra.clone());
        }
        let plugin =
            GitContext::from_config(config::parse(cfg).map_err(|e| e.message().to_owned())?);
        plugin
            .and_then(|p| p.text())
            .map_err(|e| e.message().to_owned())
    };
    assert_eq!(
        run(json!({})).as_deref(),
        Ok("Git: branch main, no commits yet (detached: no)")
    );
    git(dir.path(), &["commit", "-q", "--allow-empty", "-m", "one"]).expect("commit");
    let head = git(dir.path(), &["rev-parse", "HEAD"]).expect("rev-parse");
    let expected = format!("Git: branch main at {} (detached: no)", &head[..7]);
    assert_eq!(run(json!({})).as_deref(), Ok(expected.as_str()));
    git(dir.path(), &["pack-refs", "--all"]).expect("pack-refs");
    assert_eq!(run(json!({})).as_deref(), Ok(expected.as_str()));
    // A linked worktree inside the root: its `.git` file holds an absolute path.
    git(
        dir.path(),
        &["worktree", "add", "-q", "-b", "feature", "wt/feature"],
    )
    .expect("worktree");
    let feature = json!({ "worktree": "wt/feature" });
    let expected = format!("Git: branch feature at {} (detached: no)", &head[..7]);
    assert_eq!(run(feature).as_deref(), Ok(expected.as_str()));
    git(dir.path(), &["checkout", "-q", "--detach"]).expect("detach");
    let expected = format!("Git: detached HEAD at {} (detached: yes)", &head[..7]);
    assert_eq!(run(json!({})).as_deref(), Ok(expected.as_str()));
}
