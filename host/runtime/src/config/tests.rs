use super::*;

fn parse(text: &str) -> Result<HostConfig, ConfigFileError> {
    HostConfig::parse(text, "host.toml", Path::new("."))
}

#[test]
fn empty_file_gives_defaults() {
    let c = parse("").unwrap();
    assert_eq!(c.prompt, PromptConfig::default());
    assert!(c.scopes.is_empty() && c.plugins.is_empty());
    #[cfg(feature = "mcp")]
    assert!(c.mcp.is_empty());
}

#[test]
fn prompt_table_is_read() {
    let c = parse(
        "[prompt]\npersona = \"P1\"\ninclude_harness_identity = false\ntool_order = [\"bash\", \"<unlisted-tools>\"]\n",
    )
    .unwrap();
    assert_eq!(c.prompt.persona, "P1");
    assert!(!c.prompt.include_harness_identity);
    assert_eq!(c.prompt.tool_order.as_deref().map(|v| v.len()), Some(2));
}

#[test]
fn unknown_key_names_file_and_key() {
    let e = parse("[prompt]\npersonna = \"x\"\n")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("host.toml: "), "{e}");
    assert!(e.contains("personna"), "{e}");
    assert!(e.contains("expected one of"), "{e}");
}

#[test]
fn wrong_type_is_refused() {
    let e = parse("[prompt]\npersona = 3\n").unwrap_err().to_string();
    assert!(e.contains("persona") && e.contains("string"), "{e}");
}

#[test]
fn undeclared_parent_is_refused() {
    let e = parse("[[scope]]\nname = \"agent:1\"\nparent = \"preset:x\"\n")
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "host.toml: scope[0].parent: parent \"preset:x\" of scope \"agent:1\" is not declared in any [[scope]] entry"
    );
}

#[test]
fn cycle_is_refused() {
    let e =
        parse("[[scope]]\nname = \"a\"\nparent = \"b\"\n[[scope]]\nname = \"b\"\nparent = \"a\"\n")
            .unwrap_err()
            .to_string();
    assert!(e.contains("scope[0].parent") && e.contains("cycle"), "{e}");
    let e = parse("[[scope]]\nname = \"a\"\nparent = \"a\"\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("cycle"), "{e}");
}

#[test]
fn missing_wasm_is_refused() {
    let e = parse("[[plugin]]\nname = \"p\"\nwasm = \"nope.wasm\"\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(
            "host.toml: plugin[0].wasm: expected a readable component file for plugin \"p\""
        ),
        "{e}"
    );
}

#[test]
fn sha256_pin_is_checked() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.wasm"), b"bytes").unwrap();
    let good = crate::wasm::sha256_hex(b"bytes");
    let text = format!("[[plugin]]\nname = \"p\"\nwasm = \"p.wasm\"\nsha256 = \"{good}\"\n");
    HostConfig::parse(&text, "h.toml", dir.path()).unwrap();
    let text = "[[plugin]]\nname = \"p\"\nwasm = \"p.wasm\"\nsha256 = \"00\"\n";
    let e = HostConfig::parse(text, "h.toml", dir.path())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("plugin[0].sha256") && e.contains("expected 00"),
        "{e}"
    );
}

#[test]
fn plugin_scope_must_be_declared() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.wasm"), b"x").unwrap();
    let text = "[[plugin]]\nname = \"p\"\nwasm = \"p.wasm\"\nscope = \"agent:9\"\n";
    let e = HostConfig::parse(text, "h.toml", dir.path())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("plugin[0].scope") && e.contains("agent:9"),
        "{e}"
    );
}

#[cfg(feature = "mcp")]
#[test]
fn mcp_name_is_checked() {
    let e = parse("[[mcp]]\nname = \"bad name\"\ncommand = \"x\"\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("mcp[0].name"), "{e}");
}

#[test]
fn plugin_config_becomes_json() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.wasm"), b"x").unwrap();
    let text = "[[plugin]]\nname = \"p\"\nwasm = \"p.wasm\"\nconfig = { text = \"hi\", n = 2 }\n";
    let c = HostConfig::parse(text, "h.toml", dir.path()).unwrap();
    let json = HostConfig::plugin_config_json(&c.plugins[0].config);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["text"], "hi");
    assert_eq!(v["n"], 2);
}

#[cfg(feature = "mcp")]
#[test]
fn mcp_needs_a_provider() {
    let e = parse("[[mcp]]\nname = \"fx\"\ncommand = \"x\"\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("mcp[0].provider") && e.contains("[host] mcp_provider") && e.contains("\"fx\""),
        "{e}"
    );
}

#[cfg(feature = "mcp")]
#[test]
fn mcp_provider_defaults_to_the_host_one_resolved_against_the_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("default.wasm"), b"x").unwrap();
    std::fs::write(dir.path().join("own.wasm"), b"x").unwrap();
    let text = "[host]\nmcp_provider = \"default.wasm\"\n\
                [[mcp]]\nname = \"a\"\ncommand = \"x\"\n\
                [[mcp]]\nname = \"b\"\ncommand = \"x\"\nprovider = \"own.wasm\"\n";
    let c = HostConfig::parse(text, "h.toml", dir.path()).unwrap();
    assert_eq!(
        c.mcp_provider(0),
        Some(dir.path().join("default.wasm").as_path())
    );
    assert_eq!(
        c.mcp_provider(1),
        Some(dir.path().join("own.wasm").as_path())
    );
    let e = HostConfig::parse(
        "[host]\nmcp_provider = \"gone.wasm\"\n",
        "h.toml",
        dir.path(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("host.mcp_provider"), "{e}");
}

#[test]
fn pooling_table_overrides_only_the_keys_it_names() {
    assert_eq!(parse("").unwrap().host.pooling, None);
    let c = parse("[host.pooling]\nmax_instances = 64\n").unwrap();
    let pooling = c.host.pooling.expect("pooling").pooling();
    let defaults = crate::wasm::Pooling::default();
    assert_eq!(pooling.max_instances, 64);
    assert_eq!(pooling.max_memory_bytes, defaults.max_memory_bytes);
    assert_eq!(pooling.keep_resident_bytes, defaults.keep_resident_bytes);
    let empty = parse("[host.pooling]\n").unwrap();
    assert_eq!(empty.host.pooling.expect("pooling").pooling(), defaults);
    let e = parse("[host.pooling]\nmax_instance = 3\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("max_instance") && e.contains("expected one of"),
        "{e}"
    );
}

#[cfg(feature = "oci")]
#[test]
fn oci_plugins_are_gathered_and_pinned_from_plain_resolutions() {
    let component = format!("sha256:{}", "a".repeat(64));
    let reference = "oci://localhost:5000/plugins/greeter:1.0";
    let mut c = parse(&format!(
        "[host]\ncache_dir = \"cache\"\nmax_wasm_bytes = 1000\n\n[host.registry]\nplain_http = [\"localhost:5000\"]\ntimeout_ms = 5\n\n[[plugin]]\nname = \"greeter\"\nwasm = \"{reference}\"\nsha256 = \"{}\"\n\n[[plugin]]\nname = \"other\"\nwasm = \"{reference}\"\n",
        "b".repeat(64)
    ))
    .unwrap();
    let wanted = c.oci_plugins();
    assert_eq!(wanted.len(), 2);
    assert_eq!(wanted[0].plugin, "greeter");
    assert_eq!(wanted[0].reference.to_string(), reference);
    assert_eq!(wanted[0].sha256, Some("b".repeat(64)));
    assert_eq!(wanted[1].sha256, None);
    assert_eq!(c.oci_lock_path(), None);
    let settings = c.registry_settings();
    assert_eq!(settings.plain_http, ["localhost:5000"]);
    assert_eq!(settings.timeout, std::time::Duration::from_millis(5));
    assert_eq!(settings.total_timeout, crate::oci::DEFAULT_TOTAL_TIMEOUT);
    assert_eq!(settings.max_bytes, 1000);
    assert_eq!(
        c.oci_cache_dir(Some(Path::new("elsewhere"))),
        Path::new("./cache")
    );

    let resolution = crate::oci::Resolution {
        reference: reference.to_string(),
        manifest: format!("sha256:{}", "c".repeat(64)),
        component: component.clone(),
        size: 3,
        path: PathBuf::from("store/blob"),
        was: None,
        pulled: false,
        added: false,
    };
    // The first plugin's pin is not the component: refused, naming it and the lock.
    let e = c
        .pin(std::slice::from_ref(&resolution))
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        format!(
            "plugin \"greeter\": {reference} resolves to component {component} (by the lock), but its sha256 pins {}; refused",
            "b".repeat(64)
        )
    );
    c.plugins[0].sha256 = Some(component.clone());
    c.pin(&[resolution]).unwrap();
    for plugin in &c.plugins {
        assert_eq!(plugin.wasm, Path::new("store/blob"));
        assert_eq!(plugin.oci_component, Some("a".repeat(64)));
    }
}

/// The refusal a build without `feature` gives for what host.toml asks of it.
#[cfg(not(all(feature = "mcp", feature = "oci", feature = "tokens")))]
fn refusal(text: &str) -> String {
    parse(text).expect_err("refused").to_string()
}

#[cfg(not(feature = "mcp"))]
#[test]
fn without_mcp_an_mcp_entry_is_refused_by_name() {
    let e = refusal("[[mcp]]\nname = \"docs\"\ncommand = \"x\"\n");
    assert_eq!(
        e,
        "host.toml: [[mcp]] \"docs\": this build of prompt-host has no MCP support (the crate feature \"mcp\")"
    );
    // An entry without a name is named by its place.
    let e = refusal("[[mcp]]\ncommand = \"x\"\n");
    assert!(e.contains("mcp[0]") && e.contains("feature \"mcp\""), "{e}");
    let e = refusal("[host]\nmcp_provider = \"mcp-instructions\"\n");
    assert!(
        e.contains("host.mcp_provider") && e.contains("feature \"mcp\""),
        "{e}"
    );
}

#[cfg(not(feature = "oci"))]
#[test]
fn without_oci_an_oci_plugin_and_registry_settings_are_refused() {
    let e = refusal(
        "[[plugin]]\nname = \"greeter\"\nwasm = \"oci://localhost:5000/plugins/greeter:1.0\"\n",
    );
    assert_eq!(
        e,
        "host.toml: plugin[0].wasm: plugin \"greeter\" (\"oci://localhost:5000/plugins/greeter:1.0\"): \
         this build of prompt-host has no OCI registry support (the crate feature \"oci\")"
    );
    let e = refusal("[host.registry]\nplain_http = [\"localhost:5000\"]\n");
    assert!(
        e.contains("host.registry") && e.contains("feature \"oci\""),
        "{e}"
    );
}

#[cfg(not(feature = "tokens"))]
#[test]
fn without_tokens_a_tokenizer_or_budget_is_refused() {
    let e = refusal("[prompt]\ntokenizer = \"o200k_base\"\n");
    assert_eq!(
        e,
        "host.toml: prompt.tokenizer = \"o200k_base\": this build of prompt-host has no tokenizer support (the crate feature \"tokens\")"
    );
    // A budget is refused for the feature, not for the missing tokenizer it would need.
    let e = refusal("[prompt]\nmax_context_tokens = 100\n");
    assert!(
        e.contains("prompt.max_context_tokens = 100") && e.contains("feature \"tokens\""),
        "{e}"
    );
}
