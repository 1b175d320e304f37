//! JSON-RPC request parsing: any line gets a JSON response (or none, for a notification or a
//! blank line) and the server keeps serving; no panic.
//!
//! One server per process, on a host with no plugins; the fuzzer runs in a scratch
//! directory so a `step` request's session log lands there.
#![no_main]

use std::sync::{Arc, Mutex, OnceLock};

use libfuzzer_sys::fuzz_target;
use prompt_host::{Host, PromptConfig, RuntimeConfig};
use prompt_host_serve::Server;

struct Fixture {
    rt: tokio::runtime::Runtime,
    server: Mutex<(Arc<Server>, u64)>,
}

fn server() -> Arc<Server> {
    let host = Host::new(PromptConfig::default(), RuntimeConfig::without_cache()).expect("host");
    Server::new(host)
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let scratch =
            std::env::temp_dir().join(format!("prompt-host-fuzz-serve-{}", std::process::id()));
        std::fs::create_dir_all(&scratch).expect("scratch dir");
        std::env::set_current_dir(&scratch).expect("cd scratch");
        Fixture {
            rt: tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .expect("runtime"),
            server: Mutex::new((server(), 0)),
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(line) = std::str::from_utf8(data) else {
        return;
    };
    // One request per line: the stdio loop never hands a newline to the server.
    if line.contains('\n') {
        return;
    }
    let f = fixture();
    let mut guard = f.server.lock().unwrap_or_else(|p| p.into_inner());
    // A fresh server now and then, so state (scopes, sessions) cannot pile up.
    guard.1 += 1;
    if guard.1.is_multiple_of(5_000) {
        guard.0 = server();
    }
    let out = f.rt.block_on(guard.0.handle_line(line));
    if let Some(out) = out {
        let value: serde_json::Value = serde_json::from_str(&out).expect("responses are JSON");
        assert!(value.is_object() || value.is_array(), "{out}");
    }
    // Still serving.
    let ping =
        f.rt.block_on(
            guard
                .0
                .handle_line(r#"{"jsonrpc":"2.0","id":1,"method":"plugins"}"#),
        )
        .expect("a response");
    assert!(ping.contains("\"result\""), "{ping}");
});
