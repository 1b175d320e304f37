//! What token counting costs: the reference deployment rendered through the public API
//! (`Host::render`, as an embedder calls it) with no token budget and with
//! `[prompt] tokenizer = "o200k_base"` and both token budgets set, interleaved in one run;
//! then a whole token report (every section, context and tool schema) from a warm count
//! cache, and the prompt counted afresh by each built-in tokenizer (what the first step of a
//! changed prompt pays); the load of each built-in encoding; and long runs of one kind of
//! character at 1 MiB and 4 MiB side by side, with the memory they take. Prints min / median
//! / p99 and the ratios.
//! `cargo bench -p prompt-host-tests --bench tokens`.

mod support;

use std::path::Path;
use std::time::Instant;

use prompt_host::tokens::Tokenizer;
use prompt_host::Host;
use prompt_host_tests::reference;

/// Budgets the prompt is within by its bytes alone (never counted).
const ROOMY: &str = "[prompt]\ntokenizer = \"o200k_base\"\nmax_prompt_tokens = 1000000\nmax_context_tokens = 1000000\n";
/// Budgets under the prompt's bytes (5 KB) and over its tokens (~1,000): counted each step,
/// answered from the count cache.
const COUNTED: &str =
    "[prompt]\ntokenizer = \"o200k_base\"\nmax_prompt_tokens = 2000\nmax_context_tokens = 400\n";

fn host(dir: &Path, name: &str, budgets: Option<&str>) -> Host {
    support::reference_host(dir, name, |text| match budgets {
        Some(budgets) => {
            let edited = text.replacen("[prompt]\n", budgets, 1);
            assert_ne!(edited, text, "the reference host.toml has a [prompt] table");
            edited
        }
        None => text,
    })
}

fn main() {
    let dir = tempfile::tempdir().expect("dir");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio");
    let off = host(dir.path(), "off.toml", None);
    let roomy = host(dir.path(), "roomy.toml", Some(ROOMY));
    let on = host(dir.path(), "on.toml", Some(COUNTED));
    let scope = reference::agent(0);
    let render = |host: &Host| {
        let started = Instant::now();
        let rendered = runtime
            .block_on(host.render(Some(&scope), support::reference_facts()))
            .expect("render");
        (started.elapsed().as_secs_f64() * 1e6, rendered)
    };
    let (_, a) = render(&off);
    let (_, b) = render(&on);
    assert_eq!(a.prompt, b.prompt, "the budgets change nothing within them");
    // Interleaved: off, roomy, counted, off, … so drift on a shared machine hits all alike.
    let rounds = 5_000;
    let mut times: [Vec<f64>; 3] = Default::default();
    for _ in 0..rounds {
        for (i, host) in [&off, &roomy, &on].into_iter().enumerate() {
            times[i].push(render(host).0);
        }
    }
    let [mut t_off, mut t_roomy, mut t_on] = times;
    let (off_min, off_med, off_p99) = support::min_median_p99(&mut t_off);
    let (roomy_min, roomy_med, roomy_p99) = support::min_median_p99(&mut t_roomy);
    let (on_min, on_med, on_p99) = support::min_median_p99(&mut t_on);
    println!(
        "Host::render, reference deployment ({} bytes of prompt), {rounds} interleaved rounds; µs min / median / p99",
        a.prompt.len()
    );
    println!(
        "  no token budget                          {off_min:>8.1} {off_med:>8.1} {off_p99:>8.1}"
    );
    println!(
        "  budgets within the bytes (not counted)   {roomy_min:>8.1} {roomy_med:>8.1} {roomy_p99:>8.1}"
    );
    println!(
        "  budgets counted (o200k_base, cached)     {on_min:>8.1} {on_med:>8.1} {on_p99:>8.1}"
    );
    println!(
        "  ratio to no budget: not counted median {:.3} p99 {:.3}; counted median {:.3} p99 {:.3}",
        roomy_med / off_med,
        roomy_p99 / off_p99,
        on_med / off_med,
        on_p99 / off_p99
    );
    let tokenizer = on.tokenizer().expect("configured").clone();
    let stats_now = tokenizer.cache_stats();
    println!(
        "  count cache: {} hits, {} misses, {} texts, {} bytes",
        stats_now.hits, stats_now.misses, stats_now.texts, stats_now.bytes
    );

    // A whole report from a warm cache.
    let report = on
        .token_report(&b, Some(&scope), &tokenizer)
        .expect("report");
    let mut reports: Vec<f64> = (0..1_000)
        .map(|_| {
            let started = Instant::now();
            let r = on
                .token_report(&b, Some(&scope), &tokenizer)
                .expect("report");
            assert_eq!(r, report);
            started.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    let (r_min, r_med, r_p99) = support::min_median_p99(&mut reports);
    println!(
        "token report ({} sections, {} tools; {} tokens), warm cache; µs {r_min:.1} / {r_med:.1} / {r_p99:.1}",
        report.sections.len(),
        report.tools.len(),
        report.prompt
    );

    // The prompt counted afresh: what a changed prompt costs once.
    for name in ["o200k_base", "cl100k_base"] {
        let t = Tokenizer::load(name, None).expect("built in");
        let mut fresh: Vec<f64> = (0..50)
            .map(|_| {
                let started = Instant::now();
                t.count_afresh(&b.prompt).expect("count");
                started.elapsed().as_secs_f64() * 1e6
            })
            .collect();
        let tokens = t.count_afresh(&b.prompt).expect("count");
        let (min, med, p99) = support::min_median_p99(&mut fresh);
        println!(
            "prompt counted afresh by {name} ({tokens} tokens); µs {min:.0} / {med:.0} / {p99:.0} ({:.1} MB/s)",
            b.prompt.len() as f64 / med
        );
    }

    // Loading a built-in encoding (each host with `[prompt] tokenizer` pays it once), and
    // the same followed by a first count of a text ending with a run of 10,001 spaces, which
    // builds the encoding's pattern without lookahead (what a host pays once, the first time
    // such a text is counted). Interleaved, the first round left out.
    let long_run = format!("x{}", " ".repeat(10_001));
    for name in ["o200k_base", "cl100k_base"] {
        let mut plain = Vec::new();
        let mut with_build = Vec::new();
        for round in 0..6 {
            let started = Instant::now();
            Tokenizer::load(name, None).expect("built in");
            let loaded = started.elapsed().as_secs_f64() * 1e3;
            let started = Instant::now();
            let t = Tokenizer::load(name, None).expect("built in");
            t.count_afresh(&long_run).expect("counts");
            let built = started.elapsed().as_secs_f64() * 1e3;
            if round > 0 {
                plain.push(loaded);
                with_build.push(built);
            }
        }
        let (min, med, _) = support::min_median_p99(&mut plain);
        let (bmin, bmed, _) = support::min_median_p99(&mut with_build);
        println!(
            "{name} loaded in {min:.0} / {med:.0} ms; loaded and its pattern without lookahead built in {bmin:.0} / {bmed:.0} ms (min / median of 5)"
        );
    }

    // Text a plugin could return to make counting slow or make the tokenizer give up: long
    // runs of one kind of character, at 1 MiB and 4 MiB side by side. Counting is host
    // code, out of reach of a call's deadline, so it must stay linear; the peak resident
    // memory it adds is measured too (the peak is reset before each count).
    let cjk = |bytes: usize| -> String {
        (0..bytes / 3)
            .map(|i| {
                char::from_u32(0x4e00 + ((i as u32).wrapping_mul(7919) % 20_000)).unwrap_or('x')
            })
            .collect()
    };
    let runs: [(&str, &dyn Fn(usize) -> String); 11] = [
        ("spaces", &|n| " ".repeat(n)),
        ("spaces, then a word", &|n| " ".repeat(n - 4) + "word"),
        ("tabs, then a word", &|n| "\t".repeat(n - 4) + "word"),
        ("mixed whitespace, then a word", &|n| {
            " \t\u{a0}\u{3000}".repeat(n / 7) + "word"
        }),
        ("whitespace and newlines", &|n| " \t\r\n ".repeat(n / 5)),
        ("newlines", &|n| "\n".repeat(n)),
        ("one letter", &|n| "a".repeat(n)),
        ("one digit", &|n| "7".repeat(n)),
        ("CJK", &cjk),
        ("combining marks", &|n| {
            "e".to_owned() + &"\u{301}".repeat(n / 2 - 1)
        }),
        ("ZWJ emoji", &|n| {
            "👩\u{200d}👩\u{200d}👧\u{200d}👦".repeat(n / 25)
        }),
    ];
    println!(
        "counted afresh: ms at 1 MiB / 4 MiB (ratio, 4.0 is linear); peak MiB added at 1 / 4 MiB"
    );
    for name in ["o200k_base", "cl100k_base"] {
        let t = Tokenizer::load(name, None).expect("built in");
        for (label, make) in &runs {
            let mut figures = Vec::new();
            for mib in [1usize, 4] {
                let text = make(mib << 20);
                let before = reset_peak();
                let started = Instant::now();
                let tokens = t.count_afresh(&text).expect("count");
                let ms = started.elapsed().as_secs_f64() * 1e3;
                let added = peak_kib().saturating_sub(before) as f64 / 1024.0;
                figures.push((tokens, ms, added));
            }
            let [(t1, ms1, mem1), (t4, ms4, mem4)] = [figures[0], figures[1]];
            println!(
                "{name}: {label:<30} {t1:>8} / {t4:>8} tokens {ms1:>8.1} / {ms4:>8.1} ms ({:.2}) {mem1:>6.0} / {mem4:>6.0} MiB",
                ms4 / ms1
            );
        }
    }
}

/// Reset this process's peak resident set to its current one (Linux: `5` to `clear_refs`);
/// the current one, KiB.
fn reset_peak() -> u64 {
    // Best effort: without it the peaks only grow, and the figures say so.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    support::resident_kib(std::process::id(), "VmRSS:")
}

/// This process's peak resident set since the last reset, KiB.
fn peak_kib() -> u64 {
    support::resident_kib(std::process::id(), "VmHWM:")
}
