//! What a plugin that fetches its text costs between refreshes: the reference deployment with
//! one more section, either a fixed text (the `declare` plugin) or the same text fetched by
//! `remote-instructions` from a loopback server in `init` and kept (refresh an hour away) —
//! and the fixed one in a second host, for how far two identical hosts differ —
//! rendered interleaved in one run. The two prompts are checked equal; the server's request
//! count shows no assembly fetched. Prints min / median / p99 and the ratio.
//! `cargo bench -p prompt-host-tests --bench egress`.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use prompt_host_tests::reference;

const DOCUMENT: &str = "Review every change before it is merged. Keep commits small, and say \
                        in each commit's body why it was made and what it measured.";

/// A loopback HTTP/1.1 server answering every request with the document (keep-alive);
/// returns its port and the count of requests it answered.
fn serve_document() -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let count = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&count);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let counted = Arc::clone(&counted);
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                loop {
                    let mut line = String::new();
                    // The request line and headers, up to the blank line.
                    loop {
                        line.clear();
                        match reader.read_line(&mut line) {
                            Ok(0) | Err(_) => return,
                            Ok(_) if line == "\r\n" => break,
                            Ok(_) => {}
                        }
                    }
                    counted.fetch_add(1, Ordering::SeqCst);
                    let answer = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: text/markdown\r\netag: \"v1\"\r\n\
                         content-length: {}\r\n\r\n{DOCUMENT}",
                        DOCUMENT.len()
                    );
                    if stream.write_all(answer.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (port, count)
}

fn main() {
    let (port, requests) = serve_document();
    let fixed_dir = tempfile::tempdir().expect("dir");
    let fetch_dir = tempfile::tempdir().expect("dir");
    let again_dir = tempfile::tempdir().expect("dir");
    // One more `[[plugin]]` after the deployment's own (an array of tables continues).
    let plus = |text: String, entry: serde_json::Value| {
        let more = toml::to_string(&serde_json::json!({ "plugin": [entry] })).expect("TOML");
        format!("{text}\n{more}")
    };
    let fixed_entry = |dir: &std::path::Path| {
        serde_json::json!({
            "name": "team-rules",
            "wasm": dir.join("declare.wasm"),
            "config": {"sections": [{
                "name": "team:rules", "order": 130,
                "text": format!("From the team:\n\n{DOCUMENT}"),
            }]},
            "limits": {"call_timeout_ms": 1_000},
        })
    };
    let fixed = support::reference_host(fixed_dir.path(), "host.toml", |text| {
        plus(text, fixed_entry(fixed_dir.path()))
    });
    // The same deployment twice: how far two identical hosts differ in this run.
    let again = support::reference_host(again_dir.path(), "host.toml", |text| {
        plus(text, fixed_entry(again_dir.path()))
    });
    let fetching = support::reference_host(fetch_dir.path(), "host.toml", |text| {
        let origin = format!("http://127.0.0.1:{port}");
        let entry = serde_json::json!({
            "name": "team-rules",
            "wasm": env!("GUEST_REMOTE_INSTRUCTIONS"),
            "grants": {"http": [{"origin": origin}]},
            "config": {
                "url": format!("{origin}/team.md"), "heading": "From the team:",
                "section": "team:rules", "order": 130, "refresh_seconds": 3600,
            },
            "limits": {"call_timeout_ms": 1_000},
        });
        plus(text, entry)
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio");
    let scope = reference::agent(0);
    let render = |host: &prompt_host::Host| {
        let started = Instant::now();
        let rendered = runtime
            .block_on(host.render(Some(&scope), support::reference_facts()))
            .expect("render");
        (started.elapsed().as_secs_f64() * 1e6, rendered.prompt)
    };
    let (_, fixed_prompt) = render(&fixed);
    render(&again);
    let (_, fetched_prompt) = render(&fetching);
    assert_eq!(
        fixed_prompt, fetched_prompt,
        "the two deployments render alike"
    );
    assert!(fixed_prompt.contains(DOCUMENT));
    let before = requests.load(Ordering::SeqCst);
    let rounds = 5_000;
    let (mut t_fixed, mut t_fetching, mut t_again) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        t_fixed.push(render(&fixed).0);
        t_fetching.push(render(&fetching).0);
        t_again.push(render(&again).0);
    }
    let fetched = requests.load(Ordering::SeqCst) - before;
    let (f_min, f_med, f_p99) = support::min_median_p99(&mut t_fixed);
    let (g_min, g_med, g_p99) = support::min_median_p99(&mut t_fetching);
    let (a_min, a_med, a_p99) = support::min_median_p99(&mut t_again);
    println!(
        "Host::render, reference deployment + one section ({} bytes of prompt), {rounds} \
         interleaved rounds; µs min / median / p99",
        fixed_prompt.len()
    );
    println!("  a fixed section (declare)            {f_min:>8.1} {f_med:>8.1} {f_p99:>8.1}");
    println!("  the same fixed section, a second host  {a_min:>8.1} {a_med:>8.1} {a_p99:>8.1}");
    println!("  fetched in init, kept (remote-instr.)  {g_min:>8.1} {g_med:>8.1} {g_p99:>8.1}");
    println!(
        "  ratio fetched / fixed: median {:.3}, p99 {:.3} (second fixed host / fixed: median \
         {:.3}, p99 {:.3}); requests during the rounds: {fetched}",
        g_med / f_med,
        g_p99 / f_p99,
        a_med / f_med,
        a_p99 / f_p99
    );
}
