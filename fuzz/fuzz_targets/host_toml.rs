//! host.toml parsing: any text is either a config or a `ConfigFileError` naming the file; no
//! panic. Paths resolve against an empty temporary directory.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use prompt_host::HostConfig;

fn base() -> &'static PathBuf {
    static BASE: OnceLock<PathBuf> = OnceLock::new();
    BASE.get_or_init(|| {
        let dir =
            std::env::temp_dir().join(format!("prompt-host-fuzz-toml-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        dir
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Err(e) = HostConfig::parse(text, "fuzz/host.toml", base()) {
        let message = e.to_string();
        assert!(message.contains("fuzz/host.toml"), "{message}");
    }
});
