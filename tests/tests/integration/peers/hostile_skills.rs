//! MCP skills against a hostile server: what its `skills/list` and `resources/read` say is
//! checked before it counts. A listing of skills that climb out of their folder, list too
//! many files or bytes, or repeat a name keeps only the sound ones; a listing of 5,000 is
//! cut at 1,000; a listing that never stops paginating fails the connection naming the
//! server; a body that is larger, smaller, of another digest, of another name, huge, or
//! never sent is refused naming the server and the skill, within the server's timeout. And
//! `notifications/resources/list_changed` on the server's event stream brings a re-read.

use std::sync::Arc;
use std::time::{Duration, Instant};

use prompt_host::mcp::{RemoteServer, MAX_SKILLS};
use serde_json::{json, Value};

use crate::integration::mcp::client::serial;
use crate::integration::mcp::prompt::wait_status;
use crate::integration::peers::hostile_mcp::{connect, host, spec, TIMEOUT};
use crate::integration::support::hostile_peer::{
    shows_no_raw_control, Answer, Peer, Reply, Request,
};

/// The body of the sound skill `good`.
const GOOD: &str = "---\nname: good\ndescription: Sound.\n---\nDo the right thing.\n";

fn digest(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    let hex: String = Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256:{hex}")
}

/// A skill entry whose SKILL.md is `md`.
fn entry(name: &str, md: &str) -> Value {
    let uri = format!("skill://{name}/SKILL.md");
    json!({
        "uri": uri,
        "frontmatter": {"name": name, "description": format!("The {name} skill.")},
        "resources": [{"uri": uri, "digest": digest(md.as_bytes()), "size": md.len()}],
    })
}

/// How the scripted server answers `skills/list` (with the cursor asked) and
/// `resources/read` (with the URI asked).
struct Script {
    list: ListAnswer,
    read: ReadAnswer,
}

/// The `skills/list` result for the cursor asked.
type ListAnswer = Box<dyn Fn(Option<&str>) -> Value + Send + Sync>;
/// The answer to a `resources/read` of request id and URI.
type ReadAnswer = Box<dyn Fn(&Value, &str) -> Answer + Send + Sync>;

/// A minimal MCP server over Streamable HTTP that declares the skills extension and
/// answers as `script` says.
fn skills_server(script: Script) -> Peer {
    let script = Arc::new(script);
    Peer::http(move |request: &Request| {
        let Ok(message) = serde_json::from_slice::<Value>(&request.body) else {
            return Reply::new(400).into();
        };
        let Some(id) = message.get("id").cloned() else {
            return Reply::new(202).into();
        };
        let result = match message["method"].as_str() {
            Some("initialize") => json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {
                    "tools": {},
                    "resources": {},
                    "extensions": {"io.modelcontextprotocol/skills": {}},
                },
                "serverInfo": {"name": "hostile", "version": "1"},
            }),
            Some("tools/list") => json!({"tools": []}),
            Some("skills/list") => (script.list)(message["params"]["cursor"].as_str()),
            Some("resources/read") => {
                let uri = message["params"]["uri"].as_str().unwrap_or_default();
                return (script.read)(&id, uri);
            }
            _ => json!({}),
        };
        Reply::new(200)
            .json(&json!({"jsonrpc": "2.0", "id": id, "result": result}))
            .into()
    })
}

/// A `resources/read` answer to request `id`: `text` at `uri`.
fn read_answer(id: &Value, uri: &str, text: &str) -> Answer {
    Reply::new(200)
        .json(&json!({"jsonrpc": "2.0", "id": id, "result": {
            "contents": [{"uri": uri, "mimeType": "text/markdown", "text": text}]
        }}))
        .into()
}

/// A host with the scripted server in `agent:1`, once its first generation is published.
async fn published(script: Script) -> (prompt_host::Host, prompt_host::McpId, Peer) {
    let server = skills_server(script);
    let host = host();
    let id = connect(&host, spec(RemoteServer::new(server.url("/mcp"))));
    wait_status(&host, id, "first generation", |s| s.published >= 1).await;
    (host, id, server)
}

fn status(host: &prompt_host::Host, id: prompt_host::McpId) -> prompt_host::mcp::McpStatus {
    crate::integration::peers::hostile_mcp::status(host, id)
}

fn no_read() -> ReadAnswer {
    Box::new(|_, _| Reply::new(500).into())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skills_that_break_the_extension_s_rules_are_left_out_and_a_huge_index_is_cut() {
    let _serial = serial().await;
    let many: Vec<Value> = (0..=512)
        .map(|i| json!({"uri": format!("skill://wide/f{i}.md"), "digest": digest(b"x"), "size": 1}))
        .chain(std::iter::once(
            json!({"uri": "skill://wide/SKILL.md", "digest": digest(b"x"), "size": 1}),
        ))
        .collect();
    let mut oversized = entry("vast", GOOD);
    oversized["resources"][0]["size"] = json!(17u64 << 20);
    let mut sloppy = entry("sloppy", GOOD);
    sloppy["resources"][0]["digest"] = json!("md5:abc");
    let mut leaky = entry("leaky", GOOD);
    leaky["resources"]
        .as_array_mut()
        .unwrap()
        .push(json!({"uri": "skill://leaky/../good/secret", "digest": digest(b"y"), "size": 1}));
    let listing = json!({"skills": [
        entry("good", GOOD),
        {"uri": "skill://../../etc/SKILL.md", "frontmatter": {"name": "etc", "description": "x"}, "resources": []},
        {"uri": "skill://wide/SKILL.md", "frontmatter": {"name": "wide", "description": "x"}, "resources": many},
        oversized,
        sloppy,
        leaky,
        {"uri": "skill://misnamed/SKILL.md", "frontmatter": {"name": "other", "description": "x"}, "resources": "dynamic"},
        entry("good", "---\nname: good\n---\nAgain.\n"),
    ]});
    let (host, id, _server) = published(Script {
        list: Box::new(move |_| listing.clone()),
        read: no_read(),
    })
    .await;
    let kept: Vec<String> = status(&host, id)
        .skills
        .iter()
        .map(|s| s.name.clone())
        .collect();
    assert_eq!(kept, ["good"]);

    // 5,000 sound skills: the index keeps 1,000, the plugin's section its cap by whole lines.
    let huge: Vec<Value> = (0..5000).map(|i| entry(&format!("s{i}"), GOOD)).collect();
    let listing = json!({"skills": huge});
    let (host, id, _server) = published(Script {
        list: Box::new(move |_| listing.clone()),
        read: no_read(),
    })
    .await;
    assert_eq!(status(&host, id).skills.len(), MAX_SKILLS);
    let r = host
        .render(Some("agent:1"), prompt_host::Facts::new())
        .await
        .unwrap();
    let section = crate::integration::mcp::prompt::section(&r, "mcp:fx:skills").unwrap();
    assert!(section.len() < 5000, "{} bytes", section.len());
    assert!(
        section.contains("more skills left out by prompt-host]"),
        "{section}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skills_list_that_never_stops_paginating_fails_naming_the_server() {
    let _serial = serial().await;
    let server = skills_server(Script {
        list: Box::new(
            |cursor| json!({"skills": [], "nextCursor": format!("{}x", cursor.unwrap_or(""))}),
        ),
        read: no_read(),
    });
    let host = host();
    let started = Instant::now();
    let id = connect(&host, spec(RemoteServer::new(server.url("/mcp"))));
    let down = wait_status(&host, id, "a failure", |s| s.failures >= 1).await;
    assert_eq!(
        down.last_error.as_deref(),
        Some("mcp-client(fx): skills/list failed: still paginating after 1000 pages")
    );
    assert_eq!(down.live_generation, None);
    eprintln!(
        "hostile skills: 1000 pages refused after {:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_is_not_what_the_index_promised_is_refused_within_the_timeout() {
    let _serial = serial().await;
    let forged = GOOD.replace("right", "wrong");
    let renamed = "---\nname: other\ndescription: x\n---\nbody\n";
    let mut short = entry("short", GOOD);
    short["resources"][0]["size"] = json!(GOOD.len() + 10);
    // A URI whose folder is a terminal escape: the skill is sound, its URI only text.
    let mut escaped = entry("ok", GOOD);
    let uri = "skill://\u{1b}[2J/ok/SKILL.md";
    escaped["uri"] = json!(uri);
    escaped["resources"][0]["uri"] = json!(uri);
    let listing = json!({"skills": [
        entry("good", GOOD),
        short,
        entry("forged", &GOOD.replace("good", "forged")),
        entry("renamed", renamed),
        entry("huge", GOOD),
        entry("silent", GOOD),
        entry("endless", GOOD),
        entry("trickled", GOOD),
        escaped,
    ]});
    let forged_for_read = forged.replace("good", "forged").replace("wrong", "wronG");
    let served = forged_for_read.clone();
    let (host, _id, server) = published(Script {
        list: Box::new(move |_| listing.clone()),
        read: Box::new(move |id, uri| match uri {
            "skill://good/SKILL.md" => read_answer(id, uri, GOOD),
            "skill://short/SKILL.md" => read_answer(id, uri, GOOD),
            "skill://forged/SKILL.md" => read_answer(id, uri, &served),
            "skill://renamed/SKILL.md" => read_answer(id, uri, renamed),
            escaped if escaped.contains('\u{1b}') => read_answer(id, escaped, "x"),
            "skill://huge/SKILL.md" => Reply::new(200)
                .header("content-type", "application/json")
                .sized(1 << 30, true)
                .into(),
            "skill://endless/SKILL.md" => Reply::new(200)
                .header("content-type", "application/json")
                .endless()
                .into(),
            // One byte every 100 ms: each read is quick, the whole answer never comes.
            "skill://trickled/SKILL.md" => Reply::new(200)
                .header("content-type", "application/json")
                .trickle(vec![b' '; 600], Duration::from_millis(100))
                .into(),
            _ => Answer::Hang,
        }),
    })
    .await;
    let body = host.mcp_skill("fx", Some("agent:1"), "good").await.unwrap();
    assert_eq!((body.text.as_str(), body.verified), (GOOD, true));
    let cases = [
        ("short", format!(
            "mcp-client(fx): skill \"short\" refused: skill://short/SKILL.md is {} bytes, the manifest says {}",
            GOOD.len(), GOOD.len() + 10
        )),
        ("forged", format!(
            "mcp-client(fx): skill \"forged\" refused: skill://forged/SKILL.md has digest {}, the manifest says {}",
            digest(forged_for_read.as_bytes()),
            digest(GOOD.replace("good", "forged").as_bytes())
        )),
        (
            "ok",
            format!(
                "mcp-client(fx): skill \"ok\" refused: skill://\\u{{1b}}[2J/ok/SKILL.md is 1 \
                 bytes, the manifest says {}",
                GOOD.len()
            ),
        ),
        ("renamed", "mcp-client(fx): skill \"renamed\" refused: its frontmatter names \"other\"".to_owned()),
        (
            "huge",
            "mcp-client(fx): resources/read of skill://huge/SKILL.md failed: Transport send \
             error: HTTP response body exceeded the maximum size of 4194304 bytes"
                .to_owned(),
        ),
        ("silent", format!(
            "mcp-client(fx): no answer to resources/read of skill://silent/SKILL.md within {} ms",
            TIMEOUT.as_millis()
        )),
        (
            "endless",
            "mcp-client(fx): resources/read of skill://endless/SKILL.md failed: Transport send \
             error: HTTP response body exceeded the maximum size of 4194304 bytes"
                .to_owned(),
        ),
        ("trickled", format!(
            "mcp-client(fx): no answer to resources/read of skill://trickled/SKILL.md within {} ms",
            TIMEOUT.as_millis()
        )),
    ];
    for (skill, expected) in cases {
        let started = Instant::now();
        let error = host
            .mcp_skill("fx", Some("agent:1"), skill)
            .await
            .unwrap_err()
            .to_string();
        eprintln!("hostile skills: {skill}: {error} ({:?})", started.elapsed());
        assert!(error.starts_with(&expected), "{skill}: {error}");
        assert!(shows_no_raw_control(&error), "{skill}: {error:?}");
        // The timeout (1.5 s) on a loaded machine.
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "{skill}: {:?}",
            started.elapsed()
        );
    }
    assert!(
        server.body_bytes_sent() < 40 << 20,
        "{} bytes sent",
        server.body_bytes_sent()
    );
}

/// `notifications/resources/list_changed` (a skill's files are resources) brings a re-read:
/// the server sends it on its event stream, and the index it lists next is a new generation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resource_list_change_re_reads_the_skills_index() {
    let _serial = serial().await;
    let lists = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = lists.clone();
    let server = Peer::http(move |request: &Request| {
        if request.method == "GET" {
            // The event stream the client opens for what the server says on its own.
            return Reply::new(200)
                .header("content-type", "text/event-stream")
                .body(
                    "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/resources/list_changed\"}\n\n",
                )
                .into();
        }
        let Ok(message) = serde_json::from_slice::<Value>(&request.body) else {
            return Reply::new(400).into();
        };
        let Some(id) = message.get("id").cloned() else {
            return Reply::new(202).into();
        };
        let result = match message["method"].as_str() {
            Some("initialize") => json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}, "resources": {"listChanged": true},
                    "extensions": {"io.modelcontextprotocol/skills": {}}},
                "serverInfo": {"name": "changing", "version": "1"},
            }),
            Some("tools/list") => json!({"tools": []}),
            Some("skills/list") => {
                let n = counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let body = format!("---\nname: good\ndescription: x\n---\nVersion {n}.\n");
                json!({"skills": [entry("good", &body)]})
            }
            _ => json!({}),
        };
        Reply::new(200)
            .header("mcp-session-id", "s-1")
            .json(&json!({"jsonrpc": "2.0", "id": id, "result": result}))
            .into()
    });
    let host = host();
    let id = connect(&host, spec(RemoteServer::new(server.url("/mcp"))));
    let status = wait_status(&host, id, "a re-read after the change", |s| {
        s.published >= 2
    })
    .await;
    assert!(lists.load(std::sync::atomic::Ordering::SeqCst) >= 2);
    assert_eq!(status.failures, 0, "{status:?}");
}

/// rmcp's checks of a listing (NFKC over names, percent-decoding of the URI) and the host's
/// cut of descriptions, fed entries as large as one answer can hold: a 900 KiB folder name
/// of one character, and a 400 KiB description of escapes and forged lines. The entry is left
/// out (its name is not a skill name) or kept with its description cut to 4 KiB; either
/// way the connection stays up, answers quickly, and nothing it logs is raw.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listing_at_the_answer_s_size_limit_is_checked_without_failing_the_connection() {
    let _serial = serial().await;
    // Written three times (URI, name, file), so the answer stays under its 4 MiB bound.
    let long_name = "a".repeat(900 << 10);
    let mut named = entry("good", GOOD);
    named["uri"] = json!(format!("skill://{long_name}/SKILL.md"));
    named["frontmatter"]["name"] = json!(long_name);
    named["resources"][0]["uri"] = named["uri"].clone();
    let mut loud = entry("loud", GOOD);
    loud["frontmatter"]["description"] =
        json!("\u{1b}[2J\u{202e}\rerror: forged\n".repeat(1 << 14));
    let listing = json!({"skills": [named, loud]});
    let started = Instant::now();
    let (host, id, _server) = published(Script {
        list: Box::new(move |_| listing.clone()),
        read: no_read(),
    })
    .await;
    let skills = status(&host, id).skills;
    let names: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["loud"]);
    assert!(skills[0].description.len() <= prompt_host::mcp::MAX_DESCRIPTION_BYTES);
    assert_eq!(status(&host, id).failures, 0);
    eprintln!(
        "hostile skills: a listing at the size limit published in {:?}",
        started.elapsed()
    );
}
