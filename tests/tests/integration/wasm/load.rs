//! Loading Wasm plugins: scoping, disposal, compiled-code caching, dynamic providers,
//! listeners through the resource handle, instruction providers and `check`.

use prompt_host::wasm::CheckOptions;
use std::time::Instant;

use serde_json::json;

use crate::integration::support::wasm::*;
use prompt_host::prompt::{AssembleContext, ProviderErrorKind};
use prompt_host::wasm::{Declaration, WasmError};

#[test]
fn scoped_plugin_contributes_to_its_scope_and_descendants_only() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(dir.path());
    let reg = registry();
    reg.bind_scope_parent("agent:1", "preset:coder").unwrap();
    reg.bind_scope_parent("task:9", "agent:1").unwrap();
    let plugin = rt
        .load(
            &reg,
            &spec(
                "persona",
                Some("agent:1"),
                json!({
                    "sections": [{"name": "p:fixed", "order": 10, "text": "Fixed text."},
                                 {"name": "p:dyn", "order": 20, "text": {"dynamic": "dyn for ${scope}"}}],
                    "contexts": [{"name": "c", "order": 1, "text": "ctx"}],
                    "variables": [{"name": "v", "value": "x"}],
                    "tools": [{"schemas": [{"name": "t", "description": "d"}]}]
                }),
            ),
            &declare(),
        )
        .unwrap();
    assert_eq!(plugin.name(), "persona");
    assert_eq!(plugin.scope(), Some("agent:1"));

    let mine = assemble(&reg, Some("agent:1"));
    assert_eq!(contributed(&mine), ["p:fixed", "p:dyn"]);
    assert_eq!(mine.sections[2].text, "Fixed text.");
    assert_eq!(mine.sections[3].text, "dyn for agent:1");
    assert_eq!(mine.tools.len(), 1);
    assert_eq!(mine.variable("v"), Some(Some("x")));
    assert_eq!(mine.contexts.len(), 1);

    // A descendant sees it (the dynamic text sees the descendant's chain).
    let child = assemble(&reg, Some("task:9"));
    assert_eq!(contributed(&child), ["p:fixed", "p:dyn"]);
    assert_eq!(child.sections[3].text, "dyn for task:9");
    // The parent, a sibling and the global assembly do not.
    for other in [Some("preset:coder"), Some("agent:2"), None] {
        let a = assemble(&reg, other);
        assert!(
            contributed(&a).is_empty(),
            "{other:?}: {:?}",
            contributed(&a)
        );
        assert!(a.tools.is_empty() && a.contexts.is_empty());
    }
    assert!(render(&reg, Some("agent:1")).contains("Fixed text."));

    // Disposing removes every contribution.
    plugin.dispose();
    let after = assemble(&reg, Some("agent:1"));
    assert!(contributed(&after).is_empty());
    assert!(after.tools.is_empty() && after.contexts.is_empty() && after.variables.is_empty());
    assert_eq!(
        render(&reg, Some("agent:1")),
        prompt_host::prompt::DEFAULT_IDENTITY
    );
}

#[test]
fn dropping_the_handle_disposes() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(dir.path());
    let reg = registry();
    {
        let _p = rt
            .load(
                &reg,
                &spec(
                    "p",
                    None,
                    json!({"sections": [{"name": "s", "order": 1, "text": "S"}]}),
                ),
                &declare(),
            )
            .unwrap();
        assert_eq!(contributed(&assemble(&reg, None)), ["s"]);
    }
    assert!(contributed(&assemble(&reg, None)).is_empty());
}

#[test]
fn same_wasm_compiles_once_and_a_second_runtime_reuses_the_disk_cache() {
    let dir = tempfile::tempdir().unwrap();
    let wasm = declare();
    let rt = runtime(dir.path());
    let reg = registry();
    let t = Instant::now();
    let a = rt
        .load(&reg, &spec("a", Some("agent:1"), json!({})), &wasm)
        .unwrap();
    let first = t.elapsed();
    let t = Instant::now();
    let b = rt
        .load(&reg, &spec("b", Some("agent:2"), json!({})), &wasm)
        .unwrap();
    let second = t.elapsed();
    let s = rt.stats();
    assert_eq!((s.compiles, s.memory_hits, s.disk_hits), (1, 1, 0), "{s:?}");
    eprintln!("load: first (compile) {first:?}, second (memory hit) {second:?}");
    drop((a, b));

    // "Another process": a fresh runtime on the same cache directory.
    let rt2 = runtime(dir.path());
    let t = Instant::now();
    let _c = rt2.load(&reg, &spec("c", None, json!({})), &wasm).unwrap();
    let third = t.elapsed();
    let s = rt2.stats();
    assert_eq!((s.compiles, s.memory_hits, s.disk_hits), (0, 0, 1), "{s:?}");
    eprintln!("load: fresh runtime from disk cache {third:?}");
    // Its code may run from the file: nothing of it is left before the file is written.
    drop((_c, rt2));

    // A tampered cache file (a byte of its code) is refused and the wasm recompiled.
    tamper_with_artifacts(dir.path());
    let rt3 = runtime(dir.path());
    let _d = rt3.load(&reg, &spec("d", None, json!({})), &wasm).unwrap();
    assert_eq!(rt3.stats().compiles, 1);
}

/// A warm start does not read or hash a component file, nor the HMAC of its compiled code,
/// when both files are the ones hashed and verified before (their identities are on record);
/// a changed component file or a tampered artifact is read, hashed and checked again.
#[test]
fn unchanged_files_are_known_by_identity_and_changed_ones_are_hashed_again() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let wasm = dir.path().join("plugin.wasm");
    std::fs::write(&wasm, declare()).unwrap();
    // A file changed in the last two seconds is never recorded (a write in the same clock
    // tick could go unseen): let it settle.
    std::thread::sleep(std::time::Duration::from_millis(2_100));
    let first = runtime(&cache);
    let code = first.compile("p", &wasm, None).unwrap();
    assert_eq!(code.sha256(), sha256_hex(&declare()));
    let s = first.stats();
    assert_eq!((s.compiles, s.files_unchanged), (1, 0), "{s:?}");

    // Another process: the file is known by its identity, its code comes from the disk cache.
    let warm = runtime(&cache);
    let code = warm.compile("p", &wasm, None).unwrap();
    assert_eq!(code.sha256(), sha256_hex(&declare()));
    let s = warm.stats();
    assert_eq!(
        (s.compiles, s.disk_hits, s.files_unchanged),
        (0, 1, 1),
        "{s:?}"
    );
    let reg = registry();
    let loaded = warm.load(&reg, &spec("p", None, json!({})), &code).unwrap();
    drop((loaded, code, warm));

    // Settle the artifact, so its identity is recorded by the next warm load too.
    std::thread::sleep(std::time::Duration::from_millis(2_100));
    runtime(&cache).compile("p", &wasm, None).unwrap();
    let records = std::fs::read_dir(&cache)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "id")
        })
        .count();
    assert_eq!(
        records, 2,
        "one record for the component, one for its artifact"
    );

    // A tampered artifact no longer has its recorded identity: verified again, refused,
    // recompiled.
    tamper_with_artifacts(&cache);
    let after_tamper = runtime(&cache);
    after_tamper.compile("p", &wasm, None).unwrap();
    let s = after_tamper.stats();
    assert_eq!((s.compiles, s.disk_hits), (1, 0), "{s:?}");

    // Another component written to the same path: read and hashed again.
    let redactor = std::fs::read(env!("GUEST_REDACTOR")).unwrap();
    std::fs::write(&wasm, &redactor).unwrap();
    let changed = runtime(&cache);
    let code = changed.compile("p", &wasm, None).unwrap();
    assert_eq!(code.sha256(), sha256_hex(&redactor));
    assert_eq!(changed.stats().files_unchanged, 0);
}

fn sha256_hex(bytes: &[u8]) -> String {
    prompt_host::wasm::sha256_hex(bytes)
}

#[test]
fn sha256_pin_is_enforced() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(dir.path());
    let reg = registry();
    let mut s = spec("pinned", None, json!({}));
    s.sha256 = Some("00".repeat(32));
    let err = rt.load(&reg, &s, &declare()).unwrap_err();
    assert!(matches!(err, WasmError::PinMismatch { .. }), "{err}");
    let report = rt.check(&declare(), &CheckOptions::default()).unwrap();
    s.sha256 = Some(report.sha256.clone());
    rt.load(&reg, &s, &declare()).unwrap();
}

#[test]
fn registration_is_closed_after_init_and_duplicates_fail_init() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(dir.path());
    let reg = registry();
    let _a = rt
        .load(
            &reg,
            &spec(
                "a",
                Some("agent:1"),
                json!({"sections": [{"name": "dup", "order": 1, "text": "A"}]}),
            ),
            &declare(),
        )
        .unwrap();
    let err = rt
        .load(
            &reg,
            &spec(
                "b",
                Some("agent:1"),
                json!({"sections": [
                {"name": "other", "order": 2, "text": "B"},
                {"name": "dup", "order": 1, "text": "B"}]}),
            ),
            &declare(),
        )
        .unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("plugin \"b\""), "{msg}");
    assert!(
        msg.contains("prompt section \"dup\" is already registered in this scope"),
        "{msg}"
    );
    // The failed plugin left nothing behind.
    assert_eq!(contributed(&assemble(&reg, Some("agent:1"))), ["dup"]);

    let err = rt
        .load(
            &reg,
            &spec(
                "c",
                None,
                json!({"sections": [{"name": "bad", "order": "NaN", "text": "x"}]}),
            ),
            &declare(),
        )
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("prompt section \"bad\" order must be a finite number"),
        "{err}"
    );
}

#[test]
fn dynamic_providers_are_called_per_assembly_with_the_context() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(dir.path());
    let reg = registry();
    let _p = rt
        .load(
            &reg,
            &spec("d", None, json!({
                "sections": [{"name": "s", "order": 1, "text": {"dynamic": "call ${call} model=${fact:model}"}}],
                "variables": [{"name": "m", "dynamic": "${fact:model}"}, {"name": "n", "dynamic": null}],
                "tools": [{"schemas": [{"name": "zz"}, {"name": "aa"}], "dynamic": true}]
            })),
            &declare(),
        )
        .unwrap();
    let ctx = AssembleContext::with_facts([("model", "m1")]);
    let a = reg.assemble_blocking(None, ctx.clone()).unwrap();
    assert_eq!(a.sections[2].text, "call 1 model=m1");
    assert_eq!(a.variable("m"), Some(Some("m1")));
    assert_eq!(a.variable("n"), Some(None));
    assert_eq!(
        a.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        ["aa", "zz"]
    );
    let a = reg.assemble_blocking(None, ctx).unwrap();
    assert_eq!(a.sections[2].text, "call 2 model=m1");
}

#[test]
fn err_results_name_plugin_export_and_scope() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(dir.path());
    let reg = registry();
    let _p = rt
        .load(
            &reg,
            &spec(
                "failing",
                Some("agent:1"),
                json!({
                "sections": [{"name": "s", "order": 1, "text": {"fail": "no data"}}]}),
            ),
            &declare(),
        )
        .unwrap();
    let err = reg
        .assemble_blocking(Some("agent:1"), AssembleContext::default())
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("plugin \"failing\" export \"section-text\" (scope agent:1)"),
        "{msg}"
    );
    assert!(msg.contains("no data"), "{msg}");
    assert_eq!(err.plugin(), Some("failing"));
    match err {
        prompt_host::prompt::AssembleError::Provider { error, .. } => {
            assert_eq!(error.kind, ProviderErrorKind::Failed)
        }
        other => panic!("{other:?}"),
    }
    // An unaffected scope still assembles.
    assemble(&reg, Some("agent:2"));
}

#[test]
fn listeners_edit_the_assembly_through_the_handle_and_chain() {
    let dir = tempfile::tempdir().unwrap();
    let (rt, log) = runtime_with_log(dir.path());
    let reg = registry();
    let _base = rt
        .load(
            &reg,
            &spec(
                "base",
                None,
                json!({"sections": [{"name": "base", "order": 1, "text": "B"}]}),
            ),
            &declare(),
        )
        .unwrap();
    let _a = rt
        .load(
            &reg,
            &spec(
                "a",
                None,
                json!({"listener": {"key": "a", "steps": [
                    {"push_section": {"name": "from-a", "text": "A"}},
                    {"next": true},
                    {"push_tool": {"name": "aardvark"}}
                ]}}),
            ),
            &declare(),
        )
        .unwrap();
    let _b = rt
        .load(
            &reg,
            &spec(
                "b",
                None,
                json!({"listener": {"key": "b", "steps": [
                    {"record_sections": true},
                    {"set_variable": {"name": "extra", "value": "from-b"}},
                    {"next": true}
                ]}}),
            ),
            &declare(),
        )
        .unwrap();
    let a = assemble(&reg, None);
    assert_eq!(contributed(&a), ["base", "from-a"]);
    assert_eq!(a.variable("extra"), Some(Some("from-b")));
    assert_eq!(
        a.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        ["aardvark"]
    );
    let lines = log.lock().unwrap();
    let record = lines
        .iter()
        .find(|l| l.plugin == "b" && l.message.contains("\"record\":\"sections\""))
        .unwrap_or_else(|| panic!("{lines:?}"));
    assert!(record.message.contains("from-a"), "{}", record.message);
}

#[test]
fn a_listener_that_does_not_call_next_short_circuits() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(dir.path());
    let reg = registry();
    let _a = rt
        .load(
            &reg,
            &spec(
                "a",
                None,
                json!({"listener": {"key": "a", "prepend": true, "steps": [{"clear": true}]}}),
            ),
            &declare(),
        )
        .unwrap();
    let _b = rt
        .load(&reg, &spec("b", None, json!({"listener": {"key": "b", "steps": [{"push_section": {"name": "never", "text": "x"}}, {"next": true}]}})), &declare())
        .unwrap();
    let a = assemble(&reg, None);
    assert!(a.sections.is_empty(), "{:?}", a.sections);
}

#[test]
fn check_reports_declarations_and_rejects_bad_files() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(dir.path());
    let wasm = declare();
    let report = rt.check(&wasm, &CheckOptions::default()).unwrap();
    assert_eq!(report.world, prompt_host::wasm::World::Plugin);
    assert!(report.declarations.is_empty());
    assert_eq!(report.sha256.len(), 64);

    let report = rt
        .check(&wasm, &CheckOptions::default().config(json!({
            "sections": [{"name": "s", "order": 5, "text": "12345"}, {"name": "d", "order": 6, "text": {"dynamic": "x"}}],
            "variables": [{"name": "v", "value": "x"}],
            "tools": [{"schemas": [{"name": "t"}]}],
            "suppress_runtime_context": true,
            "listener": {"key": "l", "steps": []}
        })))
        .unwrap();
    assert_eq!(report.section_names(), ["s", "d"]);
    assert!(report.declarations.contains(&Declaration::Section {
        name: "s".into(),
        order: 5.0,
        dynamic: false,
        bytes: 5,
        complete: false
    }));
    assert!(report
        .declarations
        .iter()
        .any(|d| matches!(d, Declaration::Section { name, dynamic: true, .. } if name == "d")));
    assert!(report.declarations.contains(&Declaration::Suppressor));
    assert!(report
        .declarations
        .iter()
        .any(|d| matches!(d, Declaration::Listener { key, .. } if key == "l")));
    assert!(report
        .declarations
        .iter()
        .any(|d| matches!(d, Declaration::Tools { names, .. } if names == &["t"])));

    // Not WebAssembly at all.
    let err = rt
        .check(b"#!/bin/sh\necho hi\n", &CheckOptions::default())
        .unwrap_err();
    assert!(matches!(err, WasmError::NotAComponent { .. }), "{err}");
    // A core module.
    let err = rt
        .check(b"\0asm\x01\0\0\0", &CheckOptions::default())
        .unwrap_err();
    assert!(err.to_string().contains("core WebAssembly module"), "{err}");
    // Truncated.
    let err = rt
        .check(&wasm[..wasm.len() / 2], &CheckOptions::default())
        .unwrap_err();
    assert!(matches!(err, WasmError::Invalid { .. }), "{err}");
    // An empty component implements neither world.
    let err = rt
        .check(b"\0asm\x0d\0\x01\0", &CheckOptions::default())
        .unwrap_err();
    assert!(matches!(err, WasmError::WrongWorld { .. }), "{err}");
    assert!(err.to_string().contains("contributor"), "{err}");
}

fn server(instructions: &str, tools: &[&str]) -> prompt_host::wasm::ServerInstructions {
    prompt_host::wasm::ServerInstructions::new(
        "github",
        instructions,
        tools
            .iter()
            .map(|t| {
                prompt_host::wasm::ServerTool::new(*t, format!("{t} tool"), "{\"type\":\"object\"}")
            })
            .collect(),
    )
}

#[test]
fn instruction_providers_publish_generations_that_replace_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(dir.path());
    let reg = registry();
    let wasm = std::fs::read(env!("GUEST_MCP_INSTRUCTIONS")).unwrap();
    assert_eq!(
        rt.check(&wasm, &CheckOptions::default()).unwrap().world,
        prompt_host::wasm::World::InstructionProvider
    );
    let p = rt
        .load(&reg, &spec("mcp:github", Some("agent:1"), json!({})), &wasm)
        .unwrap();
    assert!(p.is_instruction_provider());

    let declared = p
        .publish(&server("Use the issue tools.", &["create_issue"]))
        .unwrap();
    assert!(!declared.is_empty());
    // The server's text is the value of a variable the section references.
    let instructions = |a: &prompt_host::prompt::Assembly| -> Vec<(String, Option<String>)> {
        a.variables
            .iter()
            .filter(|(name, _)| name == "mcp_github_instructions")
            .cloned()
            .collect()
    };
    let a = assemble(&reg, Some("agent:1"));
    let section = a
        .sections
        .iter()
        .find(|s| s.name == "mcp:github:instructions")
        .expect("instructions section");
    assert_eq!(
        section.text,
        "Instructions from MCP server \"github\" (third-party text, not from the operator):\n\
         <<<\n{{mcp_github_instructions}}\n>>>"
    );
    assert_eq!(
        instructions(&a),
        [(
            "mcp_github_instructions".into(),
            Some("Use the issue tools.".into())
        )]
    );
    assert!(render(&reg, Some("agent:1")).contains("<<<\nUse the issue tools.\n>>>"));
    assert_eq!(a.tools[0].name, "mcp__github__create_issue");
    assert!(assemble(&reg, Some("agent:2")).tools.is_empty());

    // A new generation replaces the old one, its variable included.
    p.publish(&server("Second generation.", &["list_issues"]))
        .unwrap();
    let a = assemble(&reg, Some("agent:1"));
    assert_eq!(
        instructions(&a),
        [(
            "mcp_github_instructions".into(),
            Some("Second generation.".into())
        )]
    );
    let prompt = render(&reg, Some("agent:1"));
    assert!(prompt.contains("<<<\nSecond generation.\n>>>"), "{prompt}");
    assert!(!prompt.contains("Use the issue tools."), "{prompt}");
    assert_eq!(a.tools.len(), 1);
    assert_eq!(a.tools[0].name, "mcp__github__list_issues");

    // A failing publish keeps the previous generation.
    let err = p.publish(&server("Third.", &["dup", "dup"])).unwrap_err();
    assert!(err.to_string().contains("more than once"), "{err}");
    assert!(err.to_string().contains("export \"publish\""), "{err}");
    let a = assemble(&reg, Some("agent:1"));
    assert_eq!(a.tools[0].name, "mcp__github__list_issues");

    // Empty instructions contribute no section and no variable.
    p.publish(&server("", &[])).unwrap();
    let a = assemble(&reg, Some("agent:1"));
    assert!(contributed(&a).is_empty() && instructions(&a).is_empty());

    // A plugin-world component has no publish.
    let plain = rt
        .load(&reg, &spec("plain", None, json!({})), &declare())
        .unwrap();
    assert!(matches!(
        plain.publish(&server("x", &[])),
        Err(WasmError::Unsupported { .. })
    ));

    p.publish(&server("Back.", &["t"])).unwrap();
    drop(p);
    let a = assemble(&reg, Some("agent:1"));
    assert!(contributed(&a).is_empty() && a.tools.is_empty());
}

/// An embedder spinning up agent scopes compiles a plugin file once and loads that code into
/// each scope; a sha256 pin is checked against the compiled code.
#[test]
fn host_loads_compiled_code_into_many_scopes() {
    use prompt_host::{Host, PromptConfig, RuntimeConfig};
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new(
        PromptConfig::default(),
        RuntimeConfig::with_cache_dir(dir.path().join("cache")),
    )
    .unwrap();
    let path = std::path::Path::new(env!("GUEST_DECLARE"));
    let code = host.compile_plugin("guide", path).unwrap();
    host.bind_scope("preset:coder", None).unwrap();
    let config =
        json!({"sections": [{"name": "guide", "order": 150, "text": {"dynamic": "for ${scope}"}}]});
    let plugins: Vec<_> = (0..3)
        .map(|i| {
            let scope = format!("agent:{i}");
            host.bind_scope(&scope, Some("preset:coder")).unwrap();
            host.load_plugin(spec("guide", Some(&scope), config.clone()), &code)
                .unwrap()
        })
        .collect();
    for i in 0..3 {
        let a = assemble(host.registry(), Some(&format!("agent:{i}")));
        let guide = a.sections.iter().find(|s| s.name == "guide").unwrap();
        assert_eq!(guide.text, format!("for agent:{i}"));
    }
    drop(plugins);
    assert!(
        !contributed(&assemble(host.registry(), Some("agent:0"))).contains(&"guide".to_string())
    );

    let mut pinned = spec("guide", Some("agent:0"), config);
    pinned.sha256 = Some("00".repeat(32));
    let error = host.load_plugin(pinned, &code).unwrap_err().to_string();
    assert!(
        error.contains("plugin \"guide\"") && error.contains("sha256"),
        "{error}"
    );

    let missing = host
        .compile_plugin("ghost", &dir.path().join("ghost.wasm"))
        .unwrap_err()
        .to_string();
    assert!(
        missing.contains("plugin \"ghost\": cannot read"),
        "{missing}"
    );
}

/// `[host.pooling]` in host.toml switches the runtime to the pooling allocator: plugins load
/// from it, one wasm file shared by several plugins is compiled once, and the pool's cap on
/// live instances is a clear error naming the plugin that did not fit.
#[test]
fn host_toml_pooling_loads_plugins_and_names_the_one_over_the_cap() {
    use prompt_host::{Host, HostConfig, RuntimeConfig};
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(env!("GUEST_DECLARE"), dir.path().join("declare.wasm")).unwrap();
    let plugin = |name: &str, order: u32| {
        format!(
            "[[plugin]]\nname = \"{name}\"\nwasm = \"declare.wasm\"\n\
             config = {{ sections = [{{ name = \"{name}\", order = {order}, text = \"{name} text\" }}] }}\n"
        )
    };
    let text = format!(
        "[host]\ncache_dir = \"cache\"\n[host.pooling]\nmax_instances = 2\n{}{}",
        plugin("one", 150),
        plugin("two", 160)
    );
    let config = HostConfig::parse(&text, "host.toml", dir.path()).unwrap();
    let host = Host::from_config(&config, RuntimeConfig::default()).unwrap();
    let a = assemble(host.registry(), None);
    assert_eq!(contributed(&a), ["one", "two"]);
    let stats = host.runtime().stats();
    assert_eq!(stats.compiles + stats.disk_hits, 1, "{stats:?}");

    let over = format!("{text}{}", plugin("three", 170));
    let config = HostConfig::parse(&over, "host.toml", dir.path()).unwrap();
    let error = match Host::from_config(&config, RuntimeConfig::default()) {
        Ok(_) => panic!("a third instance must not fit a pool of two"),
        Err(e) => format!("{e:#}"),
    };
    assert!(error.contains("plugin \"three\""), "{error}");
}

/// `Host::from_config` fetches the distinct files of a deployment side by side (identical
/// bytes under two names are compiled once) and loads every plugin; a file that cannot be
/// compiled fails each plugin that uses it under that plugin's own name (skipped ones are left
/// out, the first one that is not skipped stops the deployment).
#[test]
fn host_toml_with_several_files_loads_in_order_and_names_each_plugin_of_a_broken_file() {
    use prompt_host::{Host, HostConfig, RuntimeConfig};
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(env!("GUEST_DECLARE"), dir.path().join("declare.wasm")).unwrap();
    std::fs::copy(env!("GUEST_DECLARE"), dir.path().join("declare-copy.wasm")).unwrap();
    std::fs::copy(env!("GUEST_REDACTOR"), dir.path().join("redactor.wasm")).unwrap();
    std::fs::write(dir.path().join("broken.wasm"), b"\0asm not really").unwrap();
    let plugin = |name: &str, file: &str, order: u32, extra: &str| {
        format!(
            "[[plugin]]\nname = \"{name}\"\nwasm = \"{file}\"\n{extra}\n\
             config = {{ sections = [{{ name = \"{name}\", order = {order}, text = \"{name} text\" }}] }}\n"
        )
    };
    let skip = "on_error = \"skip\"";
    let deployment = [
        plugin("late", "declare-copy.wasm", 190, ""),
        plugin("first-broken", "broken.wasm", 120, skip),
        plugin("early", "declare.wasm", 110, ""),
        plugin("second-broken", "broken.wasm", 130, skip),
        plugin("middle", "declare.wasm", 150, ""),
    ]
    .concat();
    let text = format!(
        "[host]\ncache_dir = \"cache\"\n{deployment}[[plugin]]\nname = \"redactor\"\nwasm = \"redactor.wasm\"\n"
    );
    let config = HostConfig::parse(&text, "host.toml", dir.path()).unwrap();
    let host = Host::from_config(&config, RuntimeConfig::default()).unwrap();
    let a = assemble(host.registry(), None);
    assert_eq!(contributed(&a), ["early", "middle", "late"]);
    let stats = host.runtime().stats();
    // declare.wasm, its byte-identical copy (the same code: one compile) and the redactor.
    assert_eq!(
        stats.compiles + stats.disk_hits + stats.memory_hits,
        3,
        "{stats:?}"
    );

    let strict = format!("{text}{}", plugin("strict-broken", "broken.wasm", 140, ""));
    let config = HostConfig::parse(&strict, "host.toml", dir.path()).unwrap();
    let error = match Host::from_config(&config, RuntimeConfig::default()) {
        Ok(_) => panic!("a plugin that cannot be compiled and is not skipped must fail"),
        Err(e) => format!("{e:#}"),
    };
    assert!(error.contains("plugin \"strict-broken\""), "{error}");
    assert!(!error.contains("first-broken"), "{error}");
}

/// `find-sections` / `find-contexts` search in the host and return positions; `section-at`,
/// `context-at`, `set-section-text-at` and `set-context-text-at` read and write by position,
/// and report a position past the end.
#[test]
fn a_listener_finds_sections_in_the_host_and_edits_them_by_position() {
    let dir = tempfile::tempdir().unwrap();
    let (rt, log) = runtime_with_log(dir.path());
    let reg = registry();
    let _base = rt
        .load(
            &reg,
            &spec(
                "base",
                None,
                json!({"sections": [
                    {"name": "s1", "order": 10, "text": "a needle here"},
                    {"name": "s2", "order": 20, "text": "plain"},
                    {"name": "s3", "order": 30, "text": "needle again"}
                ],
                "contexts": [
                    {"name": "c1", "order": 1, "text": "plain context"},
                    {"name": "c2", "order": 2, "text": "context with a needle"}
                ]}),
            ),
            &declare(),
        )
        .unwrap();
    let _editor = rt
        .load(
            &reg,
            &spec(
                "editor",
                None,
                json!({"listener": {"key": "editor", "steps": [
                    {"next": true},
                    {"record_find": "needle"},
                    {"set_section_at": {"index": 999, "text": "nowhere"}},
                    {"record_find_contexts": "needle"},
                    {"set_context_at": {"index": 999, "text": "nowhere"}}
                ]}}),
            ),
            &declare(),
        )
        .unwrap();
    let a = assemble(&reg, None);
    let position = |name: &str| a.sections.iter().position(|s| s.name == name).unwrap();
    let lines = log.lock().unwrap();
    let record = |what: &str| {
        let line = lines
            .iter()
            .find(|l| l.plugin == "editor" && l.message.contains(&format!("\"record\":\"{what}\"")))
            .unwrap_or_else(|| panic!("{lines:?}"));
        serde_json::from_str::<serde_json::Value>(&line.message).unwrap()["value"].clone()
    };
    let found = record("find");
    assert_eq!(found["hits"], json!([position("s1"), position("s3")]));
    assert_eq!(
        found["at"],
        json!([["s1", "a needle here"], ["s3", "needle again"], null])
    );
    assert_eq!(record("set_section_at"), json!(false));
    let context_position = |name: &str| a.contexts.iter().position(|c| c.name == name).unwrap();
    let found = record("find_contexts");
    assert_eq!(found["hits"], json!([context_position("c2")]));
    assert_eq!(found["at"], json!([["c2", "context with a needle"], null]));
    assert_eq!(record("set_context_at"), json!(false));
    drop(lines);

    // Writing by position changes exactly that section.
    let at = position("s2");
    let _writer = rt
        .load(
            &reg,
            &spec(
                "writer",
                None,
                json!({"listener": {"key": "writer", "steps": [
                    {"next": true},
                    {"set_section_at": {"index": at, "text": "rewritten"}},
                    {"set_context_at": {"index": context_position("c1"), "text": "rewritten context"}}
                ]}}),
            ),
            &declare(),
        )
        .unwrap();
    let b = assemble(&reg, None);
    assert_eq!(b.sections[at].name, "s2");
    assert_eq!(b.sections[at].text, "rewritten");
    assert_eq!(b.sections[position("s1")].text, "a needle here");
    assert_eq!(b.contexts[context_position("c1")].text, "rewritten context");
    assert_eq!(
        b.contexts[context_position("c2")].text,
        "context with a needle"
    );
}

/// The `redactor` guest rewrites every configured word in sections (and contexts when asked)
/// after the inner chain ran, and leaves the rest as they were.
#[test]
fn the_redactor_rewrites_only_the_sections_that_contain_a_word() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(dir.path());
    let reg = registry();
    let _base = rt
        .load(
            &reg,
            &spec(
                "base",
                None,
                json!({
                    "sections": [
                        {"name": "first", "order": 10, "text": "the SECRET is hunter2"},
                        {"name": "plain", "order": 20, "text": "no words here"},
                        {"name": "other", "order": 30, "text": "hunter2 and hunter2"}
                    ],
                    "contexts": [{"name": "ctx", "order": 1, "text": "ctx SECRET"}]
                }),
            ),
            &declare(),
        )
        .unwrap();
    let redactor = std::fs::read(env!("GUEST_REDACTOR")).unwrap();
    let _redactor = rt
        .load(
            &reg,
            &spec(
                "redactor",
                None,
                json!({"words": ["SECRET", "hunter2"], "contexts": true}),
            ),
            &redactor,
        )
        .unwrap();
    let a = assemble(&reg, None);
    let texts: Vec<&str> = a
        .sections
        .iter()
        .filter(|s| ["first", "plain", "other"].contains(&s.name.as_str()))
        .map(|s| s.text.as_str())
        .collect();
    assert_eq!(
        texts,
        [
            "the [redacted] is [redacted]",
            "no words here",
            "[redacted] and [redacted]"
        ]
    );
    assert_eq!(a.contexts[0].text, "ctx [redacted]");

    let bad = rt
        .load(&reg, &spec("bad", None, json!({"words": [""]})), &redactor)
        .expect_err("an empty word is refused")
        .to_string();
    assert!(
        bad.contains("plugin \"bad\"") && bad.contains("empty word"),
        "{bad}"
    );
}

/// The benchmarks' reference deployment builds the same assembly through Wasm plugins and
/// through native closures (the benches compare like with like).
#[test]
fn the_reference_deployment_is_the_same_in_wasm_and_native() {
    use prompt_host_tests::reference::{self, Code, Guests, Reference};
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(dir.path());
    let code = Code::compile(&rt, &Guests::load());
    let reference = Reference::new();
    let wasm = Reference::registry(1);
    let native = Reference::registry(1);
    let _w = reference.deploy_wasm(&rt, &wasm, &code, 1);
    let _n = reference.deploy_native(&native, 1);
    let scope = reference::agent(0);
    let w = wasm
        .assemble_blocking(Some(&scope), Reference::context())
        .unwrap();
    let n = native
        .assemble_blocking(Some(&scope), Reference::context())
        .unwrap();
    assert_eq!(w, n);
    assert_eq!(w.tools.len(), 30);
    assert!(w
        .sections
        .iter()
        .any(|s| s.text.contains("[redacted]") && !s.text.contains(reference::REDACTED_WORD)));
}

/// `set-sections` and `set-contexts` replace everything the inner chain produced.
#[test]
fn a_listener_replaces_all_sections_and_contexts() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(dir.path());
    let reg = registry();
    let _replacer = rt
        .load(
            &reg,
            &spec(
                "replacer",
                None,
                json!({
                    "sections": [{"name": "gone", "order": 1, "text": "old"}],
                    "contexts": [{"name": "gone-ctx", "order": 1, "text": "old"}],
                    "listener": {"key": "replacer", "steps": [
                        {"next": true},
                        {"set_sections": [{"name": "a", "text": "A"}, {"name": "b", "text": "B"}]},
                        {"set_contexts": [{"name": "c", "text": "C"}]}
                    ]}
                }),
            ),
            &declare(),
        )
        .unwrap();
    let a = assemble(&reg, None);
    let sections: Vec<(&str, &str)> = a
        .sections
        .iter()
        .map(|s| (s.name.as_str(), s.text.as_str()))
        .collect();
    assert_eq!(sections, [("a", "A"), ("b", "B")]);
    assert_eq!(a.contexts.len(), 1);
    assert_eq!(
        (a.contexts[0].name.as_str(), a.contexts[0].text.as_str()),
        ("c", "C")
    );
}

/// The host sends an instance its context only when it changed (`none` otherwise, see
/// `contributor.wit`); a plugin shared by several scopes still sees each assembly's own
/// scope and facts, in any order.
#[test]
fn a_shared_instance_sees_every_assembly_context() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(dir.path());
    let reg = registry();
    reg.bind_scope_parent("agent:1", "preset:coder").unwrap();
    reg.bind_scope_parent("agent:2", "preset:coder").unwrap();
    let _shared = rt
        .load(
            &reg,
            &spec(
                "shared",
                None,
                json!({"sections": [
                    {"name": "who", "order": 10, "text": {"dynamic": "${scope_chain} on ${fact:model}, call ${call}"}}
                ]}),
            ),
            &declare(),
        )
        .unwrap();
    let who = |scope: Option<&str>, model: &str| {
        let ctx = AssembleContext::with_facts([("model", model)]);
        let a = reg.assemble_blocking(scope, ctx).unwrap();
        a.sections
            .iter()
            .find(|s| s.name == "who")
            .map(|s| s.text.clone())
            .unwrap()
    };
    assert_eq!(
        who(Some("agent:1"), "m1"),
        "agent:1,preset:coder on m1, call 1"
    );
    assert_eq!(
        who(Some("agent:1"), "m1"),
        "agent:1,preset:coder on m1, call 2"
    );
    assert_eq!(
        who(Some("agent:2"), "m1"),
        "agent:2,preset:coder on m1, call 3"
    );
    assert_eq!(
        who(Some("agent:2"), "m2"),
        "agent:2,preset:coder on m2, call 4"
    );
    assert_eq!(who(None, "m2"), " on m2, call 5");
    assert_eq!(
        who(Some("agent:1"), "m1"),
        "agent:1,preset:coder on m1, call 6"
    );
}
