//! Counts of text a tokenizer's regex chokes on: runs of spaces, tabs, mixed whitespace,
//! newlines, one letter, CJK and combining marks, up to 4 MiB.
//!
//! The BPE encodings are held to tiktoken (Python) wherever it can count, and beyond (it
//! panics on about a million spaces or tabs) to tiktoken's own definition executed without
//! its regex engine's limit: its split pattern run by Python's `regex` module, each piece
//! encoded by tiktoken's merge loop (count.py, `"by": "pieces"`). A `tokenizer.json` is held
//! to Hugging Face `tokenizers` on every text without a run over the limit, and to the stated
//! rule (parts cut inside such runs, each counted by Hugging Face) beyond it.

use std::process::{Command, Stdio};
use std::thread::JoinHandle;

use prompt_host::tokens::{Tokenizer, MAX_TOKENIZER_JSON_RUN};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

use super::reference::{deepseek_tokenizer_json, fixture, ranks_dir};
use crate::integration::mcp::client::python;

/// count.py's answers for `texts`: per text a count, or `None` where tiktoken panicked
/// (`by` = "tiktoken"). Run on a thread of its own, so the host counts meanwhile.
pub(crate) fn reference(
    encoding: Option<&str>,
    by: &str,
    texts: Vec<String>,
) -> JoinHandle<Vec<Option<usize>>> {
    let request = match encoding {
        Some(encoding) => serde_json::json!({
            "encoding": encoding, "ranks_dir": ranks_dir(), "texts": texts, "by": by,
        }),
        None => serde_json::json!({ "tokenizer_json": deepseek_tokenizer_json(), "texts": texts }),
    };
    std::thread::spawn(move || {
        let mut child = Command::new(python())
            .arg(fixture("count.py"))
            // tiktoken's panic prints Rust's report on stderr; only its type matters here.
            .env("RUST_BACKTRACE", "0")
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
    })
}

/// A text shown in a failure: its length and an escaped head.
fn shown(text: &str) -> String {
    let head: String = text.chars().take(80).collect();
    format!("{} bytes starting {head:?}", text.len())
}

/// Runs of what the split patterns treat apart; now and then a run of about a million
/// whitespace characters, where tiktoken panics.
fn adversarial() -> impl Strategy<Value = String> {
    let atom = proptest::sample::select(vec![
        " ",
        "\t",
        "\n",
        "\r\n",
        "\r",
        "\u{a0}",
        "\u{3000}",
        "\u{2003}",
        "\u{b}",
        "\u{85}",
        "\u{2028}",
        " \t",
        "a",
        "Z",
        "é",
        "日本語",
        "\u{301}",
        "e\u{301}",
        "7",
        "!",
        "/",
        "'s",
        "'ſ",
        "👍🏽",
        "<|endoftext|>",
    ]);
    let small = (
        atom,
        proptest::prop_oneof![6 => 1..4usize, 3 => 1..2_000usize],
    )
        .prop_map(|(atom, n)| atom.repeat(n));
    let blank = proptest::sample::select(vec![" ", "\t", " \t", "\u{3000}", "\n "]);
    let huge = (blank, 1_000_000..1_040_000usize)
        .prop_map(|(atom, chars)| atom.repeat(chars / atom.chars().count()));
    let run = proptest::prop_oneof![150 => small, 1 => huge];
    proptest::collection::vec(run, 0..10).prop_map(|runs| runs.concat())
}

/// The reference count of `text` for `encoding`: tiktoken's where it can, its definition
/// by pieces where it panics (`None` from tiktoken).
fn reference_one(encoding: &str, text: &str) -> usize {
    let texts = vec![text.to_owned()];
    let by_tiktoken = reference(Some(encoding), "tiktoken", texts.clone())
        .join()
        .unwrap();
    match by_tiktoken[0] {
        Some(count) => count,
        None => reference(Some(encoding), "pieces", texts).join().unwrap()[0].unwrap(),
    }
}

/// 200 generated texts (a fixed seed: the same texts each run, among them some tiktoken
/// cannot count), each counted by both encodings. A mismatch is shrunk to a smallest text
/// that still disagrees before the test fails.
#[test]
fn bpe_counts_equal_tiktoken_on_generated_adversarial_text_and_its_definition_beyond() {
    let strategy = adversarial();
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::deterministic_rng(RngAlgorithm::ChaCha),
    );
    let mut trees: Vec<_> = (0..200)
        .map(|_| strategy.new_tree(&mut runner).expect("a text"))
        .collect();
    let texts: Vec<String> = trees.iter().map(|t| t.current()).collect();
    let mut failure = None;
    for encoding in ["o200k_base", "cl100k_base"] {
        let theirs = reference(Some(encoding), "tiktoken", texts.clone());
        let tokenizer = Tokenizer::load(encoding, None).unwrap();
        let ours: Vec<usize> = texts
            .iter()
            .map(|t| tokenizer.count_afresh(t).unwrap())
            .collect();
        let mut want = theirs.join().unwrap();
        // Where tiktoken panicked, its definition by pieces.
        let beyond: Vec<usize> = (0..texts.len()).filter(|&i| want[i].is_none()).collect();
        assert!(
            beyond.len() >= 3,
            "{encoding}: the texts reach past tiktoken's limit"
        );
        let by_pieces = reference(
            Some(encoding),
            "pieces",
            beyond.iter().map(|&i| texts[i].clone()).collect(),
        );
        for (&i, count) in beyond.iter().zip(by_pieces.join().unwrap()) {
            want[i] = count;
        }
        if let Some(i) = (0..texts.len()).find(|&i| want[i] != Some(ours[i])) {
            failure = Some((encoding, tokenizer, i, ours[i], want[i]));
            break;
        }
    }
    let Some((encoding, tokenizer, first, ours, want)) = failure else {
        return;
    };
    // Shrink the disagreement, one reference count per candidate.
    let mut tree = trees.swap_remove(first);
    let disagrees =
        |text: &str| tokenizer.count_afresh(text).unwrap() != reference_one(encoding, text);
    let mut smallest = tree.current();
    for _ in 0..64 {
        if !tree.simplify() {
            break;
        }
        let candidate = tree.current();
        if disagrees(&candidate) {
            smallest = candidate;
        } else if !tree.complicate() {
            break;
        }
    }
    panic!(
        "{encoding}: {} (generated) counts {ours} where the reference counts {want:?}; \
         shrunk: {} counts {} against {}",
        shown(&texts[first]),
        shown(&smallest),
        tokenizer.count_afresh(&smallest).unwrap(),
        reference_one(encoding, &smallest)
    );
}

/// About `mib` MiB of each kind of run in `kinds` (all when empty), before a word; and of
/// spaces and of tabs alone (a section of nothing else).
fn families(mib: usize, kinds: &[&str]) -> Vec<(String, String)> {
    let n = mib << 20;
    let all: [(&str, &str); 8] = [
        ("spaces", " "),
        ("tabs", "\t"),
        ("mixed whitespace", " \t\u{a0}\u{3000}\u{2003}"),
        ("mixed with newlines", " \t\r\n\u{3000} \n"),
        ("newlines", "\n"),
        ("one letter", "a"),
        ("CJK", "日本語"),
        ("combining marks", "\u{301}"),
    ];
    let mut texts = Vec::new();
    for (label, unit) in all {
        if !kinds.is_empty() && !kinds.contains(&label) {
            continue;
        }
        let run = unit.repeat(n / unit.len());
        if label == "spaces" || label == "tabs" {
            texts.push((format!("{mib} MiB of {label}"), run.clone()));
        }
        texts.push((
            format!("{mib} MiB of {label}, then a word"),
            format!("{run}word"),
        ));
    }
    texts
}

/// 1 MiB of each kind of run and 4 MiB of some: no panic, and the count is tiktoken's where
/// it can count and its definition by pieces everywhere.
#[test]
fn bpe_counts_of_long_runs_are_tiktokens_definition_at_1_and_4_mib() {
    let mut texts = families(1, &[]);
    texts.extend(families(4, &["tabs", "one letter"]));
    let (labels, texts): (Vec<String>, Vec<String>) = texts.into_iter().unzip();
    for encoding in ["o200k_base", "cl100k_base"] {
        let by_pieces = reference(Some(encoding), "pieces", texts.clone());
        let by_tiktoken = reference(Some(encoding), "tiktoken", texts.clone());
        let tokenizer = Tokenizer::load(encoding, None).unwrap();
        let ours: Vec<usize> = texts
            .iter()
            .map(|t| tokenizer.count_afresh(t).unwrap())
            .collect();
        let (by_pieces, by_tiktoken) = (by_pieces.join().unwrap(), by_tiktoken.join().unwrap());
        let mut panicked = Vec::new();
        for (i, label) in labels.iter().enumerate() {
            assert_eq!(Some(ours[i]), by_pieces[i], "{encoding}: {label}");
            match by_tiktoken[i] {
                Some(count) => assert_eq!(ours[i], count, "{encoding}: {label}"),
                None => panicked.push(label.as_str()),
            }
        }
        // What the reference itself cannot count (the defect's inputs among them).
        assert!(
            panicked.contains(&"1 MiB of spaces, then a word"),
            "{encoding}: {panicked:?}"
        );
        assert!(
            panicked.contains(&"4 MiB of tabs, then a word"),
            "{encoding}: {panicked:?}"
        );
        assert!(
            !panicked.contains(&"4 MiB of one letter, then a word"),
            "{encoding}"
        );
    }
}

/// The parts the documented rule cuts `text` into: inside a run (all whitespace, or all
/// not) of more than MAX_TOKENIZER_JSON_RUN characters, after every that many from its start.
fn rule_parts(text: &str) -> Vec<String> {
    let (mut parts, mut part, mut run, mut kind) = (Vec::new(), String::new(), 0, None);
    for c in text.chars() {
        if kind != Some(c.is_whitespace()) {
            kind = Some(c.is_whitespace());
            run = 0;
        }
        if run == MAX_TOKENIZER_JSON_RUN {
            parts.push(std::mem::take(&mut part));
            run = 0;
        }
        part.push(c);
        run += 1;
    }
    parts.push(part);
    parts
}

/// The DeepSeek tokenizer.json: exactly Hugging Face's count on texts whose runs are within
/// the limit (up to it exactly); beyond, the sum of Hugging Face's counts of the parts the
/// rule cuts. (Before the rule, 2,000,000 spaces and a word counted 15,626 against 15,627.)
#[test]
fn tokenizer_json_counts_equal_hugging_face_within_the_run_limit_and_the_rule_beyond() {
    let n = MAX_TOKENIZER_JSON_RUN;
    let within = vec![
        format!("{}x", " ".repeat(n)),
        format!("x{}", "\t".repeat(n)),
        format!("{} b", "a".repeat(n)),
        format!("{}\n{}", "\u{301}".repeat(n), "!".repeat(n)),
        format!("{}end", " \t\n".repeat(n / 3)),
    ];
    let beyond = [
        format!("{}x", " ".repeat(2_000_000)),
        format!("{}x", "\t".repeat(1_000_000)),
        format!("{} b", "a".repeat(2_000_000)),
        format!("{}x", " \t".repeat(600_000)),
        format!("{}x", " ".repeat(n + 1)),
    ];
    let parts: Vec<Vec<String>> = beyond.iter().map(|t| rule_parts(t)).collect();
    assert_eq!(parts[4].len(), 2, "one cut, after the limit");
    let flat: Vec<String> = parts.iter().flatten().cloned().collect();
    let theirs_within = reference(None, "", within.clone());
    let theirs_parts = reference(None, "", flat);
    let tokenizer = Tokenizer::load(&deepseek_tokenizer_json(), None).unwrap();
    let ours_within: Vec<usize> = within
        .iter()
        .map(|t| tokenizer.count_afresh(t).unwrap())
        .collect();
    let ours_beyond: Vec<usize> = beyond
        .iter()
        .map(|t| tokenizer.count_afresh(t).unwrap())
        .collect();
    let theirs_within: Vec<usize> = theirs_within
        .join()
        .unwrap()
        .into_iter()
        .map(Option::unwrap)
        .collect();
    assert_eq!(ours_within, theirs_within);
    let mut counts = theirs_parts.join().unwrap().into_iter().map(Option::unwrap);
    let want: Vec<usize> = parts
        .iter()
        .map(|p| counts.by_ref().take(p.len()).sum())
        .collect();
    assert_eq!(ours_beyond, want);
    assert_eq!(ours_beyond[0], 15_627);
}
