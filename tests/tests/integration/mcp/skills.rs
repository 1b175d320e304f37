//! MCP skills (the Skills extension, SEP-2640) as a context source, end to end: a real
//! server — FastMCP's skills provider on the official Python SDK
//! (`tests/fixtures/mcp-skills/server.py`), serving a directory of skill folders — over
//! stdio, through the real `mcp-instructions` Wasm plugin into a scoped section, and a
//! skill's body read by name, checked against the digest its index gave.
//!
//! Like the other MCP tests, these fail saying what to install when FastMCP is missing.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use prompt_host::mcp::{McpServerSpec, McpStatus, ReconnectPolicy};
use prompt_host::prompt::PromptConfig;
use prompt_host::{Facts, Host, HostError, McpId, McpSpec, RuntimeConfig};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::integration::mcp::client::{python, python_module_available};
use crate::integration::mcp::prompt::{section, wait_status};
use crate::integration::support::cli::Deployment;
use crate::integration::support::serve::Served;

const FAST_RETRY: ReconnectPolicy =
    ReconnectPolicy::new(Duration::from_millis(50), Duration::from_millis(500));
pub(crate) const SKILLS_SECTION: &str = "mcp:fx:skills";

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/mcp-skills")
}

/// Whether FastMCP can run: always `true`, or the test fails saying what to install.
fn fastmcp_available() -> bool {
    static AVAILABLE: OnceLock<Result<(), String>> = OnceLock::new();
    python_module_available(
        &AVAILABLE,
        "fastmcp.skills.provider",
        "FastMCP",
        "mcp-skills",
    )
}

/// A copy of the fixture's skill folders that a test may edit.
fn skills_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let from = fixture_dir().join("skills");
    for skill in std::fs::read_dir(&from).unwrap() {
        let skill = skill.unwrap().path();
        let to = dir.path().join(skill.file_name().unwrap());
        std::fs::create_dir(&to).unwrap();
        for file in std::fs::read_dir(&skill).unwrap() {
            let file = file.unwrap().path();
            std::fs::copy(&file, to.join(file.file_name().unwrap())).unwrap();
        }
    }
    dir
}

fn digest(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// The skills server serving `root`, with `args`.
fn server(root: &Path, args: &[&str]) -> McpServerSpec {
    let mut spec = McpServerSpec::new("fx", python());
    spec.args = [
        fixture_dir().join("server.py").display().to_string(),
        root.display().to_string(),
    ]
    .into_iter()
    .chain(args.iter().map(|a| a.to_string()))
    .collect();
    // FastMCP imports a lot: its start on a busy machine is slow.
    spec.timeout = Duration::from_secs(20);
    spec
}

fn host() -> Host {
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mcp-skills-cache");
    let host = Host::new(
        PromptConfig::default(),
        RuntimeConfig::with_cache_dir(cache),
    )
    .unwrap();
    host.bind_scope("agent:1", None).unwrap();
    host
}

fn connect(host: &Host, spec: McpServerSpec) -> McpId {
    let spec = McpSpec::new(spec, env!("GUEST_MCP_INSTRUCTIONS"))
        .scope("agent:1")
        .reconnect(FAST_RETRY);
    host.connect_mcp(spec).unwrap()
}

async fn skills_section(host: &Host, scope: Option<&str>) -> Option<String> {
    let r = host.render(scope, Facts::new()).await.unwrap();
    section(&r, SKILLS_SECTION)
}

/// The index line the plugin writes for a skill whose `SKILL.md` is `md` among `files`.
fn line(name: &str, description: &str, md: &[u8], files: &[&[u8]]) -> String {
    let size: usize = files.iter().map(|f| f.len()).sum();
    let plural = if files.len() == 1 { "" } else { "s" };
    format!(
        "- {name}: {description} ({}, {} file{plural}, {size} bytes)",
        &digest(md)[..7 + 12],
        files.len()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_servers_skills_reach_the_scoped_section_and_a_body_is_read_by_name_verified() {
    let _serial = crate::integration::mcp::client::serial().await;
    if !fastmcp_available() {
        return;
    }
    let root = skills_copy();
    let review_md = std::fs::read(root.path().join("code-review/SKILL.md")).unwrap();
    let checklist = std::fs::read(root.path().join("code-review/checklist.md")).unwrap();
    let notes_md = std::fs::read(root.path().join("release-notes/SKILL.md")).unwrap();
    let host = host();
    let id = connect(&host, server(root.path(), &["--ttl", "1"]));
    let status = wait_status(&host, id, "first generation", |s| s.published >= 1).await;
    assert_eq!(status.last_error, None);
    let names: Vec<_> = status.skills.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["code-review", "release-notes"]);

    // The index, fenced, in agent:1 only; no body is in the prompt.
    let expected = format!(
        "Skills offered by MCP server \"fx\" (third-party text, not from the operator); a \
         skill's instructions are read by its name when a task needs them:\n<<<\n{}\n{}\n>>>",
        line(
            "code-review",
            "Review a change for correctness, tests and clear names before it merges.",
            &review_md,
            &[&review_md, &checklist]
        ),
        line(
            "release-notes",
            "Write release notes from the merged changes since the last tag.",
            &notes_md,
            &[&notes_md]
        ),
    );
    assert_eq!(skills_section(&host, Some("agent:1")).await, Some(expected));
    assert_eq!(skills_section(&host, None).await, None);
    let prompt = host
        .render(Some("agent:1"), Facts::new())
        .await
        .unwrap()
        .prompt;
    assert!(!prompt.contains("Read the whole change"), "{prompt}");

    // A body fetched by name matches its digest.
    let body = host
        .mcp_skill("fx", Some("agent:1"), "code-review")
        .await
        .unwrap();
    assert_eq!(body.text.as_bytes(), review_md.as_slice());
    assert_eq!(body.digest, digest(&review_md));
    assert!(body.verified);
    assert_eq!(body.skill.uri, "skill://code-review/SKILL.md");

    // What is not there is named.
    let unknown = host
        .mcp_skill("fx", Some("agent:1"), "deploy")
        .await
        .unwrap_err();
    assert_eq!(
        unknown.to_string(),
        "mcp-client(fx): no skill \"deploy\" in its index (2 listed)"
    );
    let elsewhere = host.mcp_skill("fx", None, "code-review").await.unwrap_err();
    assert_eq!(
        elsewhere.to_string(),
        "mcp-client(fx): no such MCP server in the global scope (it is connected in scope \"agent:1\")"
    );
    assert!(matches!(elsewhere, HostError::Skill(_)), "{elsewhere:?}");

    // A changed skill is a new generation (the server's time to live brings the re-read).
    let changed = String::from_utf8(notes_md.clone()).unwrap() + "4. Thank the contributors.\n";
    std::fs::write(root.path().join("release-notes/SKILL.md"), &changed).unwrap();
    let before = status.live_generation.unwrap();
    let status: McpStatus = wait_status(&host, id, "the changed skill's generation", |s| {
        s.live_generation > Some(before)
            && s.skills
                .iter()
                .any(|k| k.digest() == digest(changed.as_bytes()))
    })
    .await;
    assert_eq!(status.skills.len(), 2);
    let section = skills_section(&host, Some("agent:1")).await.unwrap();
    assert!(
        section.contains(&digest(changed.as_bytes())[..19]),
        "{section}"
    );
    assert!(!section.contains(&digest(&notes_md)[..19]), "{section}");
    let body = host
        .mcp_skill("fx", Some("agent:1"), "release-notes")
        .await
        .unwrap();
    assert_eq!(body.text, changed);

    // Nothing changed: the timer's re-reads bring no new generation.
    let now = status.live_generation;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let later = host
        .mcp_status()
        .into_iter()
        .find(|k| k.id == id)
        .unwrap()
        .status;
    assert_eq!(later.live_generation, now);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_whose_digest_does_not_match_is_refused() {
    let _serial = crate::integration::mcp::client::serial().await;
    if !fastmcp_available() {
        return;
    }
    let root = skills_copy();
    let review_md = std::fs::read(root.path().join("code-review/SKILL.md")).unwrap();
    let tampered = String::from_utf8(review_md.clone())
        .unwrap()
        .replacen('e', "E", 1);
    let host = host();
    let id = connect(&host, server(root.path(), &["--tamper", "code-review"]));
    wait_status(&host, id, "first generation", |s| s.published >= 1).await;
    let refused = host
        .mcp_skill("fx", Some("agent:1"), "code-review")
        .await
        .unwrap_err();
    assert_eq!(
        refused.to_string(),
        format!(
            "mcp-client(fx): skill \"code-review\" refused: skill://code-review/SKILL.md has \
             digest {}, the manifest says {}",
            digest(tampered.as_bytes()),
            digest(&review_md)
        )
    );
    // The other skill is read as served.
    let body = host
        .mcp_skill("fx", Some("agent:1"), "release-notes")
        .await
        .unwrap();
    assert!(body.verified);
}

/// Through `prompt-host serve`: `mcp_status` lists the index, `mcp_skill` returns a body
/// checked against it and refuses a tampered one with kind `mcp-skill`, naming the skill.
#[test]
fn serve_lists_the_index_and_returns_a_verified_body_or_refuses_it() {
    let _serial = crate::integration::mcp::client::serial_blocking();
    if !fastmcp_available() {
        return;
    }
    let root = skills_copy();
    let review_md = std::fs::read(root.path().join("code-review/SKILL.md")).unwrap();
    let notes_md = std::fs::read(root.path().join("release-notes/SKILL.md")).unwrap();
    let deployment = tampering_deployment(root.path());
    let config = deployment.config().display().to_string();
    let mut served = Served::start(&["--config", &config], &deployment.path("cache"));
    let status = served.ok("mcp_status", json!({"wait_ms": 30000}));
    let skills = &status[0]["skills"];
    assert_eq!(skills[0]["name"], "code-review", "{status}");
    assert_eq!(skills[0]["uri"], "skill://code-review/SKILL.md");
    assert_eq!(skills[0]["digest"], digest(&review_md));
    assert_eq!(skills[0]["files"], 2);
    assert_eq!(skills[1]["name"], "release-notes");
    assert_eq!(skills[1]["size"], notes_md.len());

    let body = served.ok(
        "mcp_skill",
        json!({"server": "fx", "scope": "agent:1", "skill": "release-notes"}),
    );
    assert_eq!(
        body["text"].as_str().map(str::as_bytes),
        Some(notes_md.as_slice())
    );
    assert_eq!(body["digest"], digest(&notes_md));
    assert_eq!(body["verified"], true);
    assert_eq!(body["skill"]["name"], "release-notes");

    let refused = served.call(
        "mcp_skill",
        json!({"server": "fx", "scope": "agent:1", "skill": "code-review"}),
    );
    assert_eq!(refused["error"]["data"]["kind"], "mcp-skill", "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "mcp-client(fx): skill \"code-review\" refused: skill://code-review/SKILL.md has digest sha256:"
        ) && message.ends_with(&format!("the manifest says {}", digest(&review_md))),
        "{message}"
    );
    let unknown = served.call(
        "mcp_skill",
        json!({"server": "fx", "scope": "agent:1", "skill": "a\u{1b}[2J"}),
    );
    assert_eq!(
        unknown["error"]["message"],
        "mcp-client(fx): no skill \"a\\u{1b}[2J\" in its index (2 listed)"
    );
    let bad = served.call("mcp_skill", json!({"server": "fx", "name": "x"}));
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
}

/// A host.toml with the skills server in `agent:1`, serving `root` with `code-review`'s
/// body tampered with.
fn tampering_deployment(root: &Path) -> Deployment {
    Deployment::new(&format!(
        "[host]\nmcp_provider = {provider:?}\n[[scope]]\nname = \"agent:1\"\n\
         [[mcp]]\nname = \"fx\"\ncommand = {python:?}\nscope = \"agent:1\"\ntimeout_ms = 20000\n\
         args = [{server:?}, {root:?}, \"--tamper\", \"code-review\"]\n",
        provider = env!("GUEST_MCP_INSTRUCTIONS"),
        python = python(),
        server = fixture_dir().join("server.py").display().to_string(),
        root = root.display().to_string(),
    ))
}

/// The command line: `prompt-host skill` prints a checked body exactly, its digest on
/// stderr, and fails on a tampered one, printing nothing on stdout.
#[test]
fn the_cli_prints_a_checked_body_and_refuses_a_tampered_one() {
    let _serial = crate::integration::mcp::client::serial_blocking();
    if !fastmcp_available() {
        return;
    }
    let root = skills_copy();
    let notes_md = std::fs::read(root.path().join("release-notes/SKILL.md")).unwrap();
    let deployment = tampering_deployment(root.path());
    let config = deployment.config().display().to_string();
    let skill = |name: &str| {
        deployment.run(&[
            "skill", "--config", &config, "--scope", "agent:1", "--server", "fx", name,
        ])
    };
    let run = skill("release-notes");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout.as_bytes(), notes_md.as_slice());
    assert!(
        run.stderr.contains(&format!(
            "release-notes (skill://release-notes/SKILL.md): {} (matches the index)",
            digest(&notes_md)
        )),
        "{}",
        run.stderr
    );
    let run = skill("code-review");
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr.contains(
            "mcp-client(fx): skill \"code-review\" refused: skill://code-review/SKILL.md has digest"
        ),
        "{}",
        run.stderr
    );
}
