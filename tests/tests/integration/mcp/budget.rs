//! Per-server instruction budgets in tokens (`[[mcp]] max_instruction_tokens`, or
//! [`McpServerSpec::instruction_budget`]): a server's instructions over the budget are cut,
//! and the cut is never silent: the prompt says so, and so do the server's status, `inspect`,
//! every one-shot command's stderr, `serve`'s step result, `mcp_status` and its
//! `mcp/instructions_cut` notification. Counts are checked against tiktoken. The real Python
//! fixture server and the real `mcp-instructions` plugin, as in `mcp::prompt`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use prompt_host::mcp::{InstructionBudget, InstructionsCut, McpServerSpec, ReconnectPolicy};
use prompt_host::prompt::PromptConfig;
use prompt_host::{Facts, Host, McpSpec, RuntimeConfig};
use serde_json::{json, Value};

use crate::integration::mcp::client::{fixtures, python, python_mcp_available, server};
use crate::integration::support::cli::Deployment;
use crate::integration::support::serve::Served;
use crate::integration::tokens::reference::{encoding_request, owned, reference_counts};

const WAIT: Duration = Duration::from_secs(30);
/// One line of the long instructions; repeated [`LINES`] times, one per line.
const LINE: &str = "Always cite the file you read before you change it.";
const LINES: usize = 200;
const BUDGET: usize = 60;

fn long_instructions() -> String {
    vec![LINE; LINES].join("\n")
}

fn cl100k(texts: &[&str]) -> Vec<usize> {
    reference_counts(encoding_request("cl100k_base", &owned(texts)))
}

/// The cut the host must make of [`long_instructions`] at [`BUDGET`], from tiktoken's counts:
/// the most whole lines that fit (the cut ends at a line break).
fn expected_cut(generation: u64) -> (InstructionsCut, String) {
    let text = long_instructions();
    let prefixes: Vec<String> = (1..=LINES).map(|n| vec![LINE; n].join("\n")).collect();
    let mut texts: Vec<&str> = vec![&text];
    texts.extend(prefixes.iter().map(String::as_str));
    let counts = cl100k(&texts);
    let lines = counts[1..].iter().take_while(|c| **c <= BUDGET).count();
    let kept = prefixes[lines - 1].clone();
    let cut = InstructionsCut {
        server: "fx".into(),
        generation,
        budget: BUDGET,
        tokenizer: "cl100k_base".into(),
        tokens: Some(counts[0]),
        bytes: text.len(),
        kept_tokens: counts[lines],
        kept_bytes: kept.len(),
        dropped_bytes: text.len() - kept.len(),
    };
    (cut, kept)
}

/// The section the `mcp-instructions` plugin makes of a cut text.
fn fenced(cut: &InstructionsCut, kept: &str) -> String {
    format!(
        "Instructions from MCP server \"fx\" (third-party text, not from the operator):\n<<<\n{}\n\n{kept}\n>>>",
        cut.note()
    )
}

fn host() -> Host {
    let cache = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("mcp-budget-cache");
    let prompt = PromptConfig::default().tokenizer("cl100k_base");
    let host = Host::new(prompt, RuntimeConfig::with_cache_dir(cache)).unwrap();
    host.bind_scope("agent:1", None).unwrap();
    host
}

fn budget(host: &Host) -> InstructionBudget {
    InstructionBudget::new(BUDGET, Arc::clone(host.tokenizer().expect("configured")))
}

async fn connect(host: &Host, server: McpServerSpec) -> prompt_host::mcp::McpStatus {
    // The plugin's own byte cap far above the budget, so the host's cut is the only one.
    let spec = McpSpec::new(server, env!("GUEST_MCP_INSTRUCTIONS"))
        .scope("agent:1")
        .config(json!({"max_bytes": 1 << 20}))
        .reconnect(ReconnectPolicy::new(
            Duration::from_millis(50),
            Duration::from_millis(500),
        ));
    let id = host.connect_mcp(spec).unwrap();
    let mut watch = host.watch_mcp(id).unwrap();
    let reached = tokio::time::timeout(WAIT, watch.wait_for(|s| s.live_generation.is_some()))
        .await
        .map(|seen| seen.map(|status| status.clone()));
    match reached {
        Ok(Ok(status)) => status,
        _ => panic!("not published within {WAIT:?}: {:?}", *watch.borrow()),
    }
}

/// The instructions section as rendered.
fn section(rendered: &prompt_host::Rendered) -> Option<String> {
    crate::integration::mcp::prompt::section(rendered, "mcp:fx:instructions")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instructions_over_their_budget_are_cut_with_a_note_and_reported() {
    let _serial = crate::integration::mcp::client::serial().await;
    if !python_mcp_available() {
        return;
    }
    let host = host();
    let text = long_instructions();
    let args = ["--instructions", LINE, "--instructions-repeat", "200"];
    let status = connect(&host, server(&args).instruction_budget(budget(&host))).await;
    let (want, kept) = expected_cut(1);
    assert_eq!(status.instructions_cut.as_ref(), Some(&want));
    assert!(want.kept_tokens <= BUDGET && kept.len() < text.len());
    assert_eq!(
        want.note(),
        format!(
            "[prompt-host: the instructions of MCP server \"fx\" were cut to their first {} of {} tokens (60 tokens at most, counted with cl100k_base); {} bytes were dropped]",
            want.kept_tokens,
            want.tokens.unwrap(),
            want.dropped_bytes
        )
    );
    let rendered = host.render(Some("agent:1"), Facts::new()).await.unwrap();
    assert_eq!(section(&rendered), Some(fenced(&want, &kept)));
    // The tools stay; only the text was cut.
    assert!(rendered
        .assembly
        .tools
        .iter()
        .any(|t| t.name == "mcp__fx__echo"));
    assert_eq!(host.instructions_cuts_for(Some("agent:1")), vec![want]);
    assert_eq!(host.instructions_cuts_for(None), vec![]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instructions_within_their_budget_are_not_touched() {
    let _serial = crate::integration::mcp::client::serial().await;
    if !python_mcp_available() {
        return;
    }
    let host = host();
    // Exactly at the budget still fits.
    let lines = (1..)
        .take_while(|n| cl100k(&[&vec![LINE; *n].join("\n")])[0] <= BUDGET)
        .last()
        .unwrap();
    let repeat = lines.to_string();
    let args = ["--instructions", LINE, "--instructions-repeat", &repeat];
    let status = connect(&host, server(&args).instruction_budget(budget(&host))).await;
    assert_eq!(status.instructions_cut, None);
    let rendered = host.render(Some("agent:1"), Facts::new()).await.unwrap();
    let text = section(&rendered).expect("section");
    assert!(text.contains(&vec![LINE; lines].join("\n")), "{text}");
    assert!(!text.contains("prompt-host:"), "{text}");
    assert!(host.instructions_cuts_for(Some("agent:1")).is_empty());
}

/// A server makes new generations as often as it likes (`tools/list_changed`); its
/// instructions, from `initialize`, stay the same: each generation is cut as the first
/// was (from the last cut, not counted again) and reported with its own number.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_generation_of_the_same_instructions_is_cut_the_same() {
    let _serial = crate::integration::mcp::client::serial().await;
    if !python_mcp_available() {
        return;
    }
    let host = host();
    let args = [
        "--instructions",
        LINE,
        "--instructions-repeat",
        "200",
        "--list-changed-after",
        "0.2",
        "--search-v2",
    ];
    let first = connect(&host, server(&args).instruction_budget(budget(&host))).await;
    let rendered = host.render(Some("agent:1"), Facts::new()).await.unwrap();
    let before = section(&rendered).expect("section");
    let id = host.mcp_status()[0].id;
    let mut watch = host.watch_mcp(id).unwrap();
    let second = tokio::time::timeout(WAIT, watch.wait_for(|s| s.live_generation >= Some(2)))
        .await
        .map(|seen| seen.map(|status| status.clone()));
    let Ok(Ok(second)) = second else {
        panic!(
            "no second generation within {WAIT:?}: {:?}",
            *watch.borrow()
        );
    };
    let generation = second.live_generation.unwrap();
    let (want, kept) = expected_cut(generation);
    assert_eq!(
        first
            .instructions_cut
            .map(|c| InstructionsCut { generation, ..c }),
        Some(want.clone())
    );
    assert_eq!(second.instructions_cut, Some(want.clone()));
    let rendered = host.render(Some("agent:1"), Facts::new()).await.unwrap();
    assert_eq!(section(&rendered).as_ref(), Some(&before));
    assert_eq!(before, fenced(&want, &kept));
    assert_eq!(host.instructions_cuts_for(Some("agent:1")), vec![want]);
}

#[test]
fn a_token_budget_needs_a_tokenizer_through_the_library_and_host_toml() {
    let prompt = PromptConfig::default().max_context_tokens(10);
    let cache = tempfile::tempdir().unwrap();
    let error = match Host::new(prompt, RuntimeConfig::with_cache_dir(cache.path())) {
        Ok(_) => panic!("a token budget without a tokenizer must be refused"),
        Err(e) => e.to_string(),
    };
    assert_eq!(
        error,
        "prompt.max_context_tokens: a token budget needs prompt.tokenizer, the tokenizer that counts it"
    );
    let entry = |prompt: &str, budget: &str| {
        Deployment::new(&format!(
            "[prompt]\n{prompt}\n[host]\nmcp_provider = {provider:?}\n\
             [[mcp]]\nname = \"fx\"\ncommand = \"unused\"\nmax_instruction_tokens = {budget}\n",
            provider = env!("GUEST_MCP_INSTRUCTIONS"),
        ))
    };
    for (d, message) in [
        (
            entry("", "100"),
            "mcp[0].max_instruction_tokens: a token budget needs prompt.tokenizer, the tokenizer that counts it",
        ),
        (
            entry("tokenizer = \"cl100k_base\"", "0"),
            "mcp[0].max_instruction_tokens: must be at least 1",
        ),
    ] {
        let shown = d.config().display().to_string();
        d.run(&["render", "--config", &shown])
            .fails(1, &[&format!("error: {shown}: {message}")]);
    }
}

/// A deployment with `fx` in `agent:1`, its instructions over a budget of [`BUDGET`].
fn budgeted_deployment() -> Deployment {
    Deployment::new(&format!(
        "[prompt]\ntokenizer = \"cl100k_base\"\n[host]\nmcp_provider = {provider:?}\n\
         [[scope]]\nname = \"agent:1\"\n\
         [[mcp]]\nname = \"fx\"\ncommand = {python:?}\nscope = \"agent:1\"\ntimeout_ms = 20000\n\
         max_instruction_tokens = {BUDGET}\nconfig = {{ max_bytes = 1048576 }}\n\
         args = [{server:?}, \"--instructions\", {LINE:?}, \"--instructions-repeat\", \"200\"]\n",
        provider = env!("GUEST_MCP_INSTRUCTIONS"),
        python = python(),
        server = fixtures().join("server.py").display().to_string(),
    ))
}

#[test]
fn the_cli_says_a_cut_in_the_prompt_on_stderr_and_in_inspect() {
    let _serial = crate::integration::mcp::client::serial_blocking();
    if !python_mcp_available() {
        return;
    }
    let d = budgeted_deployment();
    let config = d.config().display().to_string();
    let (want, kept) = expected_cut(1);
    let warning = format!(
        "warning: MCP server \"fx\" (scope agent:1): {}",
        want.note()
    );
    let run = d.run(&["render", "--config", &config, "--scope", "agent:1"]);
    assert!(run.ok().contains(&fenced(&want, &kept)), "{}", run.stdout);
    assert!(run.stderr.contains(&warning), "{}", run.stderr);
    let run = d.run(&["inspect", "--config", &config, "--scope", "agent:1"]);
    let line = format!(
        "MCP instructions cut to their budgets:\n  fx (generation 1): kept {} of {} tokens ({} of {} bytes), budget 60 (cl100k_base)\n",
        want.kept_tokens,
        want.tokens.unwrap(),
        want.kept_bytes,
        want.bytes
    );
    assert!(run.ok().contains(&line), "{}", run.stdout);
    assert!(run.stderr.contains(&warning), "{}", run.stderr);
    // The server's tools are its provider's, which is among the plugins; its instructions
    // and tools are categories of their own.
    let out = &run.stdout;
    for tool in ["mcp__fx__echo", "mcp__fx__add"] {
        let row = out
            .lines()
            .find(|l| l.starts_with(&format!("{tool} ")))
            .unwrap_or_else(|| panic!("{tool}: {out}"));
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cells[1..3], ["mcp:fx", "agent:1"], "{row}");
    }
    assert!(out.lines().any(|l| l.starts_with("mcp:fx ")), "{out}");
    for category in ["MCP instructions", "MCP tools"] {
        let row = out
            .lines()
            .find(|l| l.starts_with(category))
            .unwrap_or_else(|| panic!("{category}: {out}"));
        let tokens: usize = row[category.len()..].trim().parse().unwrap();
        assert!(tokens > 0, "{row}");
    }
}

#[test]
fn serve_reports_a_cut_in_the_step_result_mcp_status_and_a_notification() {
    let _serial = crate::integration::mcp::client::serial_blocking();
    if !python_mcp_available() {
        return;
    }
    let d = budgeted_deployment();
    let config = d.config().display().to_string();
    let (want, _) = expected_cut(1);
    let want = serde_json::to_value(&want).unwrap();
    let mut s = Served::start(&["--config", &config], &d.path("cache"));
    let session = d.path("session.jsonl").display().to_string();
    let requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "subscribe", "params": {"mcp": true}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "mcp_status", "params": {"wait_ms": 30000}}),
    ];
    for request in &requests {
        s.send_line(request.to_string().as_bytes());
    }
    // Answers and notifications, in whatever order they come, until both answers and the
    // cut's notification are in.
    let (mut answers, mut cut_notes) = (Vec::new(), Vec::new());
    let deadline = Instant::now() + WAIT;
    while (answers.len() < 2 || cut_notes.is_empty()) && Instant::now() < deadline {
        let line = s.answer();
        match line["method"].as_str() {
            Some("mcp/instructions_cut") => cut_notes.push(line["params"].clone()),
            Some(_) => {}
            None => answers.push(line),
        }
    }
    assert_eq!(cut_notes, vec![want.clone()], "{answers:?}");
    let status = answers
        .iter()
        .find(|a| a["id"] == 2)
        .unwrap_or_else(|| panic!("{answers:?}"));
    assert_eq!(status["result"][0]["instructions_cut"], want, "{status}");
    s.send_line(
        json!({"jsonrpc": "2.0", "id": 3, "method": "step",
               "params": {"session": session, "scope": "agent:1", "user": ["hi"]}})
        .to_string()
        .as_bytes(),
    );
    let step: Value = loop {
        let line = s.answer();
        if line["id"] == 3 {
            break line;
        }
    };
    assert_eq!(step["result"]["mcp_cuts"], json!([want]), "{step}");
    let request = step["result"]["request"].to_string();
    assert!(
        request.contains("were cut to their first"),
        "the request's system message says so: {request}"
    );
}
