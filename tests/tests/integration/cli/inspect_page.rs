//! `inspect --html`: the page opened in a real browser (Debian's Chromium, headless, driven by
//! playwright-core from `tests/fixtures/browser`), its DOM read back and checked against
//! `inspect --json`; hostile plugin text that must stay text; a session's timeline naming the
//! plugin whose change broke the cache prefix; `dev --ui`'s live page drawn again after a
//! rebuild, and its server refusing a foreign `Host`; and the terminal's answers (totals by
//! category, a prompt over its budget still shown).
//!
//! Screenshots are kept in `target/test-artefacts/`.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::integration::support::cli::Deployment;
use crate::integration::support::hostile_matrix::toml_inline;

/// The browser fixtures (`scripts/test --setup` installs them).
fn browser_fixtures() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/browser");
    assert!(
        dir.join("node_modules/playwright-core").is_dir(),
        "the page tests need playwright-core; run `scripts/test --setup` (or `npm ci --prefix tests/fixtures/browser`)"
    );
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    assert!(
        Path::new(&chromium).exists(),
        "the page tests need Chromium at {chromium} (Debian: apt-get install chromium; or set CHROMIUM); `scripts/test --setup` installs it"
    );
    dir
}

/// Where screenshots are kept.
pub(crate) fn artefact(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/test-artefacts");
    std::fs::create_dir_all(&dir).expect("artefacts dir");
    dir.join(name)
}

/// Open `url` in the browser and return what it saw (see `page.mjs`).
pub(crate) fn open_in_browser(url: &str, screenshot: &Path, extra: &[&str]) -> Value {
    let dir = browser_fixtures();
    let output = Command::new("node")
        .arg(dir.join("page.mjs"))
        .arg(url)
        .arg(screenshot)
        .args(extra)
        .output()
        .expect("run node");
    assert!(
        output.status.success(),
        "the browser failed: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(line.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

/// Nothing ran that the page did not bring, and nothing left it.
pub(crate) fn assert_contained(seen: &Value) {
    let seen = &seen["seen"];
    assert_eq!(seen["dialogs"], json!([]), "a dialog opened: {seen}");
    assert_eq!(
        seen["requests"],
        json!([]),
        "a request left the page: {seen}"
    );
    assert_eq!(seen["errors"], json!([]), "a script error: {seen}");
    let console = seen["console"].as_array().expect("console");
    assert!(
        console
            .iter()
            .all(|m| !m.as_str().unwrap_or("").contains("Content Security Policy")),
        "a CSP violation (something tried to run or load): {console:?}"
    );
}

fn reference_deployment() -> Deployment {
    let dir = tempfile::tempdir().expect("tempdir");
    let toml = prompt_host_tests::reference::Reference::new().host_toml(
        Path::new(env!("GUEST_DECLARE")),
        Path::new(env!("GUEST_REDACTOR")),
        &dir.path().join("cache"),
    );
    Deployment::new(&toml)
}

#[test]
fn the_reference_report_shows_every_section_with_its_plugin_and_tokens() {
    let d = reference_deployment();
    let config = d.config();
    let config = config.to_str().unwrap();
    let base = [
        &[
            "inspect",
            "--config",
            config,
            "--scope",
            "agent:0",
            "--tokenizer",
            "o200k_base",
        ][..],
        &super::outputs_unchanged::FACTS[..],
    ]
    .concat();
    let expected = d.run(&[&base[..], &["--json"]].concat()).json();
    let page = d.path("report.html");
    let written = d.run(&[&base[..], &["--html", page.to_str().unwrap()]].concat());
    written.ok();
    let bytes = std::fs::metadata(&page).expect("the page").len();
    assert!(bytes < 300 * 1024, "the reference report is {bytes} bytes");

    let url = format!("file://{}", page.display());
    let seen = open_in_browser(&url, &artefact("inspect-reference.png"), &[]);
    assert_contained(&seen);
    let shown = &seen["shown"];
    assert_eq!(shown["scope"], "agent:0");
    let sections = expected["sections"].as_array().expect("sections");
    assert!(sections.len() >= 10, "{expected}");
    let drawn = shown["sections"].as_array().expect("drawn sections");
    assert_eq!(drawn.len(), sections.len(), "{shown}");
    for (want, got) in sections.iter().zip(drawn) {
        assert_eq!(got["name"], want["name"]);
        assert_eq!(got["plugin"], want["plugin"], "{}", want["name"]);
        assert_eq!(got["layer"], want["layer"], "{}", want["name"]);
        assert_eq!(got["tokens"], want["tokens"], "{}", want["name"]);
        assert_eq!(got["bytes"], want["bytes"], "{}", want["name"]);
        assert_eq!(got["text"], want["text"], "{}", want["name"]);
    }
    let tools: Vec<&Value> = expected["tools"].as_array().unwrap().iter().collect();
    let drawn_tools = shown["tools"].as_array().expect("tools");
    assert_eq!(drawn_tools.len(), tools.len());
    for (want, got) in tools.iter().zip(drawn_tools) {
        assert_eq!(got["name"], want["name"]);
        assert_eq!(got["provider"], want["provider"]);
    }
    // The redactor rewrites what it redacts: its own changes, on the page as in the JSON.
    let changed: Vec<&Value> = expected["listener_changes"]
        .as_array()
        .expect("listener changes")
        .iter()
        .filter(|c| {
            ["added", "removed", "rewritten"]
                .iter()
                .any(|k| !c[*k].as_array().unwrap().is_empty())
        })
        .collect();
    assert!(
        changed
            .iter()
            .any(|c| !c["rewritten"].as_array().unwrap().is_empty()),
        "{}",
        expected["listener_changes"]
    );
    let drawn_listeners = shown["listeners"].as_array().expect("listeners");
    assert_eq!(drawn_listeners.len(), changed.len(), "{shown}");
    for (want, got) in changed.iter().zip(drawn_listeners) {
        assert_eq!(got["plugin"], want["plugin"]);
        let rewritten: Vec<&str> = want["rewritten"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_str().unwrap())
            .collect();
        assert_eq!(got["rewrote"], rewritten.join("\n"));
    }
    let categories = shown["categories"].as_array().expect("categories");
    assert_eq!(categories.len(), 5, "{shown}");
    assert_eq!(categories[0]["name"], "system prompt");
    // Measured, not asserted: how long the browser took to draw it.
    eprintln!(
        "inspect --html: the reference report, {bytes} bytes, drawn in {} ms",
        seen["drawnMs"]
    );
}

/// A megabyte of text, with markup in it.
fn big(markup: &str) -> String {
    let mut text = String::from(markup);
    while text.len() < 1 << 20 {
        text.push_str("<b>bold?</b> ");
    }
    text
}

#[test]
fn hostile_plugin_text_stays_text_and_nothing_runs_or_leaves_the_page() {
    let markup = [
        "</script><script>alert('script')</script>",
        "<img src=x onerror=\"alert('img')\">",
        "<a href=\"javascript:alert('href')\">click</a>",
        "<iframe src=\"https://example.com/\"></iframe>",
        "\u{2028}</SCRIPT >';alert('quote');//",
    ];
    let sections: Vec<Value> = markup
        .iter()
        .enumerate()
        .map(|(i, m)| json!({"name": format!("{m}{i}"), "order": i, "text": m}))
        .chain(std::iter::once(
            json!({"name": "huge", "order": 99, "text": big("<script>alert('big')</script>")}),
        ))
        .collect();
    let config = json!({
        "sections": sections,
        "contexts": [{"name": "</script><img src=x onerror=alert(1)>", "order": 1, "text": "<img src=x onerror=alert('ctx')>"}],
        "tools": [{"schemas": [
            {"name": "evil_tool", "description": big("<img src=x onerror=alert('tool')>"), "parameters": {"type": "object"}}
        ]}],
    });
    let d = Deployment::new(&format!(
        "[prompt]\nmax_prompt_bytes = 4194304\n\n[[plugin]]\nname = \"</script><img src=x onerror=alert('plugin')>\"\nwasm = {}\nlimits = {{ max_output_bytes = 8388608 }}\nconfig = {}\n",
        Value::from(env!("GUEST_DECLARE")),
        toml_inline(&config)
    ));
    let config = d.config();
    let page = d.path("hostile.html");
    d.run(&[
        "inspect",
        "--config",
        config.to_str().unwrap(),
        "--tokenizer",
        "o200k_base",
        "--html",
        page.to_str().unwrap(),
    ])
    .ok();
    let html = std::fs::read_to_string(&page).expect("page");
    // Two scripts, the data block and the page's own, and no text reached them as markup.
    assert_eq!(html.matches("<script").count(), 2, "{}", &html[..2000]);
    assert_eq!(html.matches("</script>").count(), 2);
    assert!(!html.contains("<img"));
    assert!(html.contains("Content-Security-Policy"));

    let url = format!("file://{}", page.display());
    let seen = open_in_browser(&url, &artefact("inspect-hostile.png"), &[]);
    assert_contained(&seen);
    let shown = &seen["shown"];
    assert_eq!(shown["injected"], 0, "{shown}");
    assert_eq!(shown["scripts"], 2, "{shown}");
    let plugin = "</script><img src=x onerror=alert('plugin')>";
    let drawn: Vec<&Value> = shown["sections"]
        .as_array()
        .expect("sections")
        .iter()
        .filter(|s| s["plugin"] == plugin)
        .collect();
    assert_eq!(drawn.len(), markup.len() + 1, "{shown}");
    for (i, m) in markup.iter().enumerate() {
        let name = format!("{m}{i}");
        let section = drawn
            .iter()
            .find(|s| s["name"] == name.as_str())
            .unwrap_or_else(|| panic!("{name}: {shown}"));
        assert_eq!(section["text"], *m, "the markup is shown as the text it is");
    }
    let huge = drawn.iter().find(|s| s["name"] == "huge").expect("huge");
    assert_eq!(huge["text"], big("<script>alert('big')</script>"));
    assert_eq!(shown["tools"][0]["name"], "evil_tool");
    eprintln!(
        "inspect --html: the hostile report drawn in {} ms",
        seen["drawnMs"]
    );
}

/// A deployment whose `persona` plugin's section follows the fact `mood`.
fn persona_deployment() -> Deployment {
    let persona = json!({"sections": [{"name": "persona", "order": 20, "text": {"dynamic": "You are ${fact:mood} today."}}]});
    let rules = json!({
        "sections": [{"name": "identity", "order": 10, "text": "You are a careful assistant."}],
        "tools": [{"schemas": [{"name": "read_file", "description": "Read a file.", "parameters": {"type": "object"}}]}],
    });
    Deployment::new(&format!(
        "[[plugin]]\nname = \"rules\"\nwasm = {d}\nconfig = {r}\n\n[[plugin]]\nname = \"persona\"\nwasm = {d}\nconfig = {p}\n",
        d = Value::from(env!("GUEST_DECLARE")),
        r = toml_inline(&rules),
        p = toml_inline(&persona),
    ))
}

#[test]
fn the_session_view_names_the_plugin_that_broke_the_cache_prefix_at_its_step() {
    let d = persona_deployment();
    let config = d.config();
    let config = config.to_str().unwrap();
    let log = d.path("chat.jsonl");
    let log = log.to_str().unwrap();
    for step in 0..20 {
        let mood = if step < 12 {
            "mood=calm"
        } else {
            "mood=grumpy"
        };
        let user = format!("Question {step}.");
        d.run(&[
            "step",
            "--config",
            config,
            "--session",
            log,
            "--fact",
            mood,
            "--user",
            &user,
        ])
        .ok();
        let reply = json!({
            "choices": [{"message": {"role": "assistant", "content": format!("Answer {step}.")}}],
            "usage": {"prompt_tokens": 100 + step, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 90}},
        });
        d.run(&["assistant", "--session", log, "--reply", &reply.to_string()])
            .ok();
    }
    let inspect = |extra: &[&str]| {
        let mut args = vec![
            "inspect",
            "--config",
            config,
            "--fact",
            "mood=grumpy",
            "--session",
            log,
        ];
        args.extend_from_slice(extra);
        d.run(&args)
    };
    let report = inspect(&["--json"]).json();
    let steps = report["timeline"]["steps"].as_array().expect("steps");
    assert_eq!(steps.len(), 20, "{report}");
    for step in &steps[1..] {
        let n = step["step"].as_u64().unwrap();
        if n == 12 {
            assert_eq!(step["prefix"]["kept"], false, "{step}");
            assert_eq!(step["prefix"]["section"], "persona", "{step}");
            assert_eq!(step["prefix"]["plugin"], "persona", "{step}");
            assert_eq!(step["branch"], "normalise", "{step}");
            assert_eq!(step["commits"][0]["op"], "replace", "{step}");
        } else {
            assert_eq!(step["prefix"]["kept"], true, "step {n}: {step}");
            assert_eq!(step["branch"], "unchanged", "{step}");
        }
    }
    assert_eq!(steps[0]["branch"], "first");
    // In the terminal: the newest request's messages are a category, and the tools are
    // counted as the log's route sends them.
    let text = inspect(&["--tokenizer", "o200k_base"]);
    let out = text.ok();
    assert!(
        out.contains("tool schemas ") && out.contains(" (as chat-completions sends them)"),
        "{out}"
    );
    let messages = out
        .lines()
        .find(|l| l.starts_with("messages "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        messages["messages".len()..]
            .trim()
            .parse::<usize>()
            .unwrap()
            > 0,
        "{messages}"
    );
    assert_eq!(steps[12]["usage"]["input_tokens"], 112);

    let page = d.path("session.html");
    inspect(&["--html", page.to_str().unwrap()]).ok();
    let seen = open_in_browser(
        &format!("file://{}", page.display()),
        &artefact("inspect-session.png"),
        &[],
    );
    assert_contained(&seen);
    let drawn = seen["shown"]["steps"].as_array().expect("steps");
    assert_eq!(drawn.len(), 20);
    let broke: Vec<&Value> = drawn.iter().filter(|s| !s["plugin"].is_null()).collect();
    assert_eq!(broke.len(), 1, "{drawn:?}");
    assert_eq!(broke[0]["step"], 12);
    assert_eq!(broke[0]["plugin"], "persona");
    assert_eq!(broke[0]["changed"], "persona");
}

#[test]
fn the_terminal_shows_totals_by_category_and_a_prompt_over_its_budget() {
    let d = persona_deployment();
    let config = d.config();
    let config = config.to_str().unwrap();
    let run = d.run(&[
        "inspect",
        "--config",
        config,
        "--fact",
        "mood=calm",
        "--tokenizer",
        "o200k_base",
        "--context-window",
        "1000",
    ]);
    let out = run.ok();
    assert!(
        out.contains("CATEGORY                TOKENS   SHARE   (of a 1000-token context window)"),
        "{out}"
    );
    for category in [
        "system prompt",
        "MCP instructions",
        "tools",
        "MCP tools",
        "runtime context",
        "total",
        "free",
    ] {
        assert!(
            out.lines().any(|l| l.starts_with(category)),
            "{category}: {out}"
        );
    }
    // Over budget: every table still shown, the overrun marked, and the step's error.
    let tight = std::fs::read_to_string(config).unwrap();
    std::fs::write(
        config,
        format!("[prompt]\ntokenizer = \"o200k_base\"\nmax_prompt_tokens = 5\n\n{tight}"),
    )
    .unwrap();
    let run = d.run(&["inspect", "--config", config, "--fact", "mood=calm"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stdout.contains("SECTION "), "{}", run.stdout);
    assert!(run.stdout.contains("\npersona "), "{}", run.stdout);
    let over = run
        .stdout
        .lines()
        .find(|l| l.starts_with("OVER BUDGET: "))
        .unwrap_or_else(|| panic!("{}", run.stdout));
    assert!(over.contains("max_prompt_tokens"), "{over}");
    assert!(run.stderr.contains("max_prompt_tokens"), "{}", run.stderr);
}

/// `request` sent to `addr` as is; the status line of the answer.
fn status_of(addr: &str, request: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    // The server may close before it has read everything (a refused head).
    let _ = stream.write_all(request.as_bytes());
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    answer.lines().next().unwrap_or_default().to_string()
}

#[test]
fn dev_ui_draws_the_page_again_after_a_rebuild_and_refuses_a_foreign_host() {
    use super::dev_loop::{lines_of, source, until, Probe};
    use std::process::Stdio;
    let dir = tempfile::tempdir().unwrap();
    let probe = Probe::built(dir.path(), "devui-probe", "Version one.");
    let mut dev = Command::new(crate::integration::support::cli::bin())
        .args([
            "dev",
            "--config",
            dir.path().join("host.toml").to_str().unwrap(),
        ])
        .args(["--interval-ms", "200", "--ui"])
        .env("PROMPT_HOST_CACHE_DIR", dir.path().join("cache"))
        .env("CARGO_TARGET_DIR", &probe.target_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let rx = lines_of(&mut dev);
    let started = until(&rx, "== ui: ");
    let url = started
        .last()
        .unwrap()
        .trim_start_matches("== ui: ")
        .to_string();
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    assert!(addr.starts_with("127.0.0.1:"), "{url}");

    // Only the page, only for its own address.
    let ask = |line: &str, host: &str| {
        status_of(
            &addr,
            &format!("{line}\r\nHost: {host}\r\nConnection: close\r\n\r\n"),
        )
    };
    assert_eq!(
        ask("GET / HTTP/1.1", "evil.example"),
        "HTTP/1.1 421 Misdirected Request"
    );
    let port = addr.rsplit(':').next().unwrap();
    assert_eq!(
        ask("GET / HTTP/1.1", &format!("rebound.example:{port}")),
        "HTTP/1.1 421 Misdirected Request"
    );
    assert_eq!(ask("GET / HTTP/1.1", &addr), "HTTP/1.1 200 OK");
    assert_eq!(
        ask("GET /etc/passwd HTTP/1.1", &addr),
        "HTTP/1.1 404 Not Found"
    );
    assert_eq!(
        ask("POST / HTTP/1.1", &addr),
        "HTTP/1.1 405 Method Not Allowed"
    );
    // 10,000 headers are refused unread; a head that never ends is cut (5 s), not kept.
    let flood = format!(
        "GET / HTTP/1.1\r\nHost: {addr}\r\n{}\r\n",
        "X-Filler: x\r\n".repeat(10_000)
    );
    assert_eq!(
        status_of(&addr, &flood),
        "HTTP/1.1 431 Request Header Fields Too Large"
    );
    let started = std::time::Instant::now();
    assert_eq!(
        status_of(&addr, "GET / HTTP/1.1\r\nHost: "),
        "",
        "closed unanswered"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(29),
        "{:?}",
        started.elapsed()
    );

    // The page, open in the browser, draws the rebuilt plugin's text without being reloaded.
    let browser_dir = browser_fixtures();
    let mut browser = Command::new("node")
        .arg(browser_dir.join("page.mjs"))
        .arg(&url)
        .arg(artefact("dev-ui.png"))
        .args(["--until-changed", "240000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let from_browser = lines_of(&mut browser);
    until(&from_browser, "{\"loaded\"");
    std::fs::write(probe.project.join("src/lib.rs"), source("Version two.")).unwrap();
    until(&rx, "== cache prefix");
    let last = until(&from_browser, "{\"drawnMs\"");
    assert!(browser.wait().unwrap().success());
    let seen: Value = serde_json::from_str(last.last().unwrap()).unwrap();
    assert_contained(&seen);
    assert_eq!(
        seen["seen"]["navigations"], 1,
        "the page was reloaded: {seen}"
    );
    let shown = &seen["shown"];
    assert_eq!(shown["ready"], "2", "{shown}");
    let probe = shown["sections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "devloop:text")
        .unwrap_or_else(|| panic!("{shown}"));
    assert_eq!(probe["text"], "Version two.", "{shown}");
    assert_eq!(
        shown["changes"],
        json!([{"change": "changed", "section": "devloop:text"}]),
        "{shown}"
    );
    // SAFETY: a signal to the child this test started, not yet waited for.
    unsafe {
        libc::kill(dev.id() as libc::pid_t, libc::SIGTERM);
    }
    until(&rx, "== stopped (");
    assert!(dev.wait().unwrap().success());
}

/// `inspect --html PATH` of the persona deployment at `config`.
fn html_args<'a>(config: &'a str, path: &'a str) -> [&'a str; 7] {
    [
        "inspect",
        "--config",
        config,
        "--fact",
        "mood=calm",
        "--html",
        path,
    ]
}

#[test]
fn the_report_is_written_over_a_report_only_and_never_into_a_fifo_device_or_foreign_file() {
    let d = persona_deployment();
    let config = d.config();
    let config = config.to_str().unwrap();
    let html = |path: &str| d.run(&html_args(config, path));
    // A new file, then the same file again: a report may replace a report.
    let report = d.path("report.html");
    let report = report.to_str().unwrap();
    html(report).ok();
    html(report).ok();
    assert!(std::fs::read_to_string(report)
        .unwrap()
        .starts_with("<!doctype html><!-- prompt-host inspect report -->\n"));
    // A file the host did not write, directly or through a symbolic link: left as it was.
    let foreign = d.path("notes.html");
    std::fs::write(&foreign, "my notes").unwrap();
    let link = d.path("link.html");
    std::os::unix::fs::symlink(&foreign, &link).unwrap();
    for path in [&foreign, &link] {
        let run = html(path.to_str().unwrap());
        run.fails(1, &[&format!(
            "cannot write the report to {}: the file exists and is not a report prompt-host wrote; it was left as it is (name a new file)",
            path.display()
        )]);
    }
    assert_eq!(std::fs::read_to_string(&foreign).unwrap(), "my notes");
    // A FIFO (no reader: opening it to write would block), a device, a directory.
    let fifo = d.path("fifo");
    let name = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path the test owns.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
    for path in [
        fifo.to_str().unwrap(),
        "/dev/full",
        d.dir.path().to_str().unwrap(),
    ] {
        let run = d
            .run_timed(
                &html_args(config, path),
                std::time::Duration::from_secs(120),
            )
            .unwrap_or_else(|| panic!("inspect --html {path} hung"));
        assert_eq!(run.code, 1, "{path}: {}", run.stderr);
        assert!(
            run.stderr
                .contains(&format!("cannot write the report to {path}: ")),
            "{path}: {}",
            run.stderr
        );
    }
}
