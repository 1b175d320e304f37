//! A plugin's section of a million blanks, and an MCP tool described by a million spaces,
//! counted through every entry point with `[prompt] tokenizer` set: the binary (`render`,
//! `step`, `inspect`, `render --json --tokens`, `assemble --tokens`), `serve` (`render` and
//! `step`) and the library in a multi-thread and a current-thread Tokio runtime. tiktoken
//! itself panics on these texts (and so did every one of these, or never answered); the
//! counts are its definition, counted by pieces (count.py).

use serde_json::{json, Value};

use super::long_runs::reference;
use crate::integration::mcp::client::python;
use crate::integration::mcp::client::{fixtures, python_mcp_available, serial_blocking};
use crate::integration::support::cli::Deployment;
use crate::integration::support::serve::Served;

/// The defect's section, per encoding: o200k_base panicked on a million spaces alone (a
/// section at the end of the prompt), cl100k_base on a million tabs before a word.
const CASES: [(&str, &str, &str); 2] = [("o200k_base", " ", ""), ("cl100k_base", "\t", "end")];

const RULES: &str = "I am Ada.";

/// A section of `unit` × 1,000,000 (then `tail`), from the `declare` plugin's dynamic
/// entry, after a rule; `[prompt]` counts with `tokenizer` against `max_prompt_tokens`
/// (under the prompt's bytes, so every rendering is counted).
fn deployment(tokenizer: &str, unit: &str, tail: &str, budget: usize) -> (Deployment, String) {
    let blank = format!("{}{tail}", unit.repeat(1_000_000));
    let d = Deployment::new(&format!(
        "[prompt]\ninclude_harness_identity = false\ntokenizer = \"{tokenizer}\"\n\
         max_prompt_tokens = {budget}\n\n[[plugin]]\nname = \"blank\"\nwasm = \"{{DECLARE}}\"\n\
         config = {{ sections = [{{ name = \"rules\", order = 100, text = \"{RULES}\" }}, \
         {{ name = \"blank\", order = 200, text = {{ dynamic = \"{blank}\" }} }}] }}\n"
    ));
    (d, blank)
}

/// What the prompt, the blank section and the rule count, by tiktoken's definition; and
/// that tiktoken itself cannot count the blank section.
struct Want {
    prompt: String,
    blank: String,
    counts: [usize; 3],
}

fn want(tokenizer: &str, blank: String) -> Want {
    let prompt = format!("{RULES}\n\n{blank}");
    let texts = vec![prompt.clone(), blank.clone(), RULES.to_owned()];
    let by_tiktoken = reference(Some(tokenizer), "tiktoken", vec![blank.clone()]);
    let counts = reference(Some(tokenizer), "pieces", texts).join().unwrap();
    assert_eq!(
        by_tiktoken.join().unwrap(),
        [None],
        "tiktoken gives up here"
    );
    let counts: Vec<usize> = counts.into_iter().map(Option::unwrap).collect();
    Want {
        prompt,
        blank,
        counts: [counts[0], counts[1], counts[2]],
    }
}

impl Want {
    /// `"tokens"` of render and step (less a step's `tools_as`).
    fn report(&self, tokenizer: &str) -> Value {
        let [prompt, blank, rules] = self.counts;
        json!({
            "tokenizer": tokenizer, "prompt": prompt, "sections_sum": blank + rules,
            "sections": [
                {"name": "rules", "bytes": RULES.len(), "tokens": rules},
                {"name": "blank", "bytes": self.blank.len(), "tokens": blank},
            ],
            "context": 0, "contexts": [], "tools": [],
        })
    }
}

#[test]
fn a_section_of_a_million_blanks_is_counted_by_render_step_and_inspect() {
    for (tokenizer, unit, tail) in CASES {
        let (tight, blank) = deployment(tokenizer, unit, tail, 1_000);
        let w = want(tokenizer, blank);
        let [prompt, blank, rules] = w.counts;
        // Over a budget: the error names the exact counts.
        let config = tight.config().display().to_string();
        tight.run(&["render", "--config", &config]).fails(
            1,
            &[&format!(
                "error: rendering for scope \"global\" failed: the rendered system prompt has \
                 {prompt} tokens ({tokenizer}), over max_prompt_tokens = 1000; the largest: \
                 section \"blank\" {blank} tokens from plugin \"blank\" (global), section \
                 \"rules\" {rules} tokens from plugin \"blank\" (global)\n"
            )],
        );
        // Within it: rendered, stepped and inspected.
        let (d, _) = deployment(tokenizer, unit, tail, 100_000);
        let config = d.config().display().to_string();
        assert_eq!(d.run(&["render", "--config", &config]).ok(), w.prompt);
        let log = d.path("session.jsonl").display().to_string();
        let request = d
            .run(&["step", "--config", &config, "--session", &log])
            .json();
        assert_eq!(
            request["messages"],
            json!([{"role": "system", "content": w.prompt}])
        );
        let rendered = d
            .run(&["render", "--json", "--tokens", "--config", &config])
            .json();
        assert_eq!(rendered["tokens"], w.report(tokenizer), "{tokenizer}");
        let inspected = d.run(&["inspect", "--config", &config]);
        let line = format!(
            "tokens ({tokenizer}): prompt {prompt}, sections counted alone {}, runtime context 0, tool schemas 0\n",
            blank + rules
        );
        assert!(inspected.ok().contains(&line), "{}", inspected.stdout);
    }
}

#[test]
fn serve_answers_render_and_step_of_a_section_of_a_million_blanks() {
    for (tokenizer, unit, tail) in CASES {
        let (d, blank) = deployment(tokenizer, unit, tail, 100_000);
        let w = want(tokenizer, blank);
        let config = d.config().display().to_string();
        let mut s = Served::start(&["--config", &config], &d.path("cache"));
        let rendered = s.ok("render", json!({"tokens": true}));
        assert_eq!(rendered["prompt"], w.prompt.as_str());
        assert_eq!(rendered["tokens"], w.report(tokenizer));
        let log = d.path("session.jsonl");
        let step = s.ok(
            "step",
            json!({"session": log, "user": ["hi"], "tokens": true}),
        );
        let mut tokens = step["tokens"].clone();
        tokens.as_object_mut().unwrap().remove("tools_as");
        assert_eq!(tokens, w.report(tokenizer), "{tokenizer}");
        // The server goes on.
        assert!(s.ok("describe", json!({}))["protocol"].is_string());
    }
}

#[test]
fn the_library_counts_a_section_of_a_million_blanks_in_either_runtime() {
    let (tokenizer, unit, tail) = CASES[0];
    let (d, blank) = deployment(tokenizer, unit, tail, 100_000);
    let w = want(tokenizer, blank);
    let config = prompt_host::config::HostConfig::load(&d.config()).unwrap();
    let multi = tokio::runtime::Runtime::new().unwrap();
    let current = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for runtime in [multi, current] {
        runtime.block_on(async {
            let mut options = prompt_host::wasm::RuntimeConfig::default();
            options.cache_dir = Some(d.path("cache"));
            let host = prompt_host::Host::from_config(&config, options).unwrap();
            // Counted against the budget as it renders.
            let rendered = host.render(None, prompt_host::Facts::new()).await.unwrap();
            assert_eq!(rendered.prompt, w.prompt);
            let tokenizer = host.tokenizer().expect("[prompt] tokenizer").clone();
            let report = host.token_report(&rendered, None, &tokenizer).unwrap();
            assert_eq!(
                serde_json::to_value(report).unwrap(),
                w.report(tokenizer.name())
            );
            assert_eq!(tokenizer.count_afresh(&w.blank).unwrap(), w.counts[1]);
        });
    }
}

#[test]
fn an_mcp_tool_described_by_a_million_spaces_is_counted_by_inspect_and_assemble() {
    let _serial = serial_blocking();
    if !python_mcp_available() {
        return;
    }
    let d = Deployment::new(&format!(
        "[prompt]\ntokenizer = \"o200k_base\"\n[host]\nmcp_provider = {provider:?}\n\
         [[scope]]\nname = \"agent:1\"\n\
         [[mcp]]\nname = \"fx\"\ncommand = {python:?}\nscope = \"agent:1\"\ntimeout_ms = 20000\n\
         args = [{server:?}, \"--blank-description\", \"1000000\"]\n",
        provider = env!("GUEST_MCP_INSTRUCTIONS"),
        python = python(),
        server = fixtures().join("server.py").display().to_string(),
    ));
    let config = d.config().display().to_string();
    let assembled = d
        .run(&[
            "assemble", "--tokens", "--config", &config, "--scope", "agent:1",
        ])
        .json();
    // Each tool as the report counts it: its name, description and parameters, compact.
    let tools = assembled["tools"].as_array().unwrap();
    let texts: Vec<String> = tools
        .iter()
        .map(|t| json!({"name": t["name"], "description": t["description"], "parameters": t["parameters"]}).to_string())
        .collect();
    let blank = tools
        .iter()
        .position(|t| t["name"] == "mcp__fx__blank")
        .unwrap();
    assert_eq!(
        tools[blank]["description"].as_str().unwrap().len(),
        1_000_000
    );
    let by_tiktoken = reference(Some("o200k_base"), "tiktoken", vec![texts[blank].clone()]);
    let want = reference(Some("o200k_base"), "pieces", texts.clone())
        .join()
        .unwrap();
    assert_eq!(
        by_tiktoken.join().unwrap(),
        [None],
        "tiktoken gives up here"
    );
    let counted: Vec<Option<usize>> = assembled["tokens"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["tokens"].as_u64().map(|n| n as usize))
        .collect();
    assert_eq!(counted, want);
    let inspected = d.run(&["inspect", "--config", &config, "--scope", "agent:1"]);
    let sum: usize = want.iter().map(|n| n.unwrap()).sum();
    let out = inspected.ok();
    assert!(out.contains(&format!(", tool schemas {sum}\n")), "{out}");
    let line = out
        .lines()
        .find(|l| l.starts_with("mcp__fx__blank "))
        .unwrap();
    assert!(
        line.ends_with(&format!(" {}", want[blank].unwrap())),
        "{line}"
    );
}
