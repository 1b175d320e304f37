//! Plugins found by name (`wasm = "persona"`, `mcp_provider = "mcp-instructions"`,
//! `load_plugin` with a name, `prompt-host check persona`): on `PROMPT_HOST_PLUGIN_PATH`,
//! then in `plugins/` beside the binary, as the release tarball and the npm package lay
//! them out. A name is never a path, and a path is never looked up.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::json;

use crate::integration::support::cli::{bin, Run, QUIET_PROGRESS};
use crate::integration::support::serve::Served;

const ID: &str = "You are an AI agent powered by the DeepSeek Harness SDK.";

/// A directory of plugins named as an installation ships them.
fn plugin_dir(root: &Path, name: &str, plugins: &[(&str, &str)]) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    for (name, guest) in plugins {
        std::fs::copy(guest, dir.join(format!("{name}.wasm"))).unwrap();
    }
    dir
}

/// `program <args>` in `cwd` with `PROMPT_HOST_PLUGIN_PATH` set to `path` (or unset).
fn run(program: &Path, cwd: &Path, path: Option<&str>, args: &[&str]) -> Run {
    let mut command = Command::new(program);
    command
        .args(args)
        .current_dir(cwd)
        .env("PROMPT_HOST_CACHE_DIR", cwd.join("cache"))
        .env(QUIET_PROGRESS.0, QUIET_PROGRESS.1)
        .stdin(Stdio::null());
    match path {
        Some(path) => command.env("PROMPT_HOST_PLUGIN_PATH", path),
        None => command.env_remove("PROMPT_HOST_PLUGIN_PATH"),
    };
    let out = command.output().expect("run prompt-host");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// What the test binary's own `plugins/` directory is, in a not-found message: the tests
/// never create it.
fn beside_test_binary() -> String {
    format!(
        "{} (missing)",
        bin().parent().unwrap().join("plugins").display()
    )
}

const NAMED: &str = r#"
[host]
mcp_provider = "mcp-instructions"

[[scope]]
name = "agent:1"

[[plugin]]
name = "persona"
wasm = "persona"
scope = "agent:1"
config = { text = "You review {{cwd}}." }

[[plugin]]
name = "rules"
wasm = "declare"
config = { sections = [{ name = "rules", order = 100, text = "Be brief." }] }
"#;

#[test]
fn a_deployment_names_its_plugins_and_the_search_path_supplies_them() {
    let d = tempfile::tempdir().unwrap();
    let first = plugin_dir(d.path(), "first", &[("persona", env!("GUEST_PERSONA"))]);
    let second = plugin_dir(
        d.path(),
        "second",
        &[
            // Shadowed by the first directory's.
            ("persona", env!("GUEST_DECLARE")),
            ("declare", env!("GUEST_DECLARE")),
            ("mcp-instructions", env!("GUEST_MCP_INSTRUCTIONS")),
        ],
    );
    std::fs::write(d.path().join("host.toml"), NAMED).unwrap();
    // A relative entry is ignored, so a plugin in the working directory is never found by
    // name (`first` is relative to the working directory here).
    let path = format!("first:{}:{}", first.display(), second.display());
    let rendered = run(
        &bin(),
        d.path(),
        Some(&path),
        &[
            "render",
            "--config",
            "host.toml",
            "--scope",
            "agent:1",
            "--fact",
            "cwd=/w",
        ],
    );
    assert_eq!(
        rendered.ok(),
        format!("{ID}\n\nYou review /w.\n\nBe brief.")
    );

    let checked = run(
        &bin(),
        d.path(),
        Some(&path),
        &["check", "persona", "--config", r#"{"text": "Checked."}"#],
    );
    assert_eq!(
        checked.ok().lines().next(),
        Some(format!("{}: ok", first.join("persona.wasm").display()).as_str())
    );
}

#[test]
fn the_binary_finds_the_plugins_shipped_beside_it() {
    // The layout of the release tarball and of the npm package: prompt-host, plugins/.
    let root = tempfile::Builder::new()
        .prefix("shipped-")
        .tempdir_in(bin().parent().unwrap())
        .unwrap();
    let program = root.path().join("prompt-host");
    if std::fs::hard_link(bin(), &program).is_err() {
        std::fs::copy(bin(), &program).unwrap();
    }
    plugin_dir(
        root.path(),
        "plugins",
        &[
            ("persona", env!("GUEST_PERSONA")),
            ("declare", env!("GUEST_DECLARE")),
            ("mcp-instructions", env!("GUEST_MCP_INSTRUCTIONS")),
        ],
    );
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("host.toml"), NAMED).unwrap();
    let rendered = run(
        &program,
        work.path(),
        None,
        &[
            "render",
            "--config",
            "host.toml",
            "--scope",
            "agent:1",
            "--fact",
            "cwd=/w",
        ],
    );
    assert_eq!(
        rendered.ok(),
        format!("{ID}\n\nYou review /w.\n\nBe brief.")
    );
    // (The npm package's own test, clients/typescript/scripts/installed-step.mjs, loads
    // them over serve.)
}

#[test]
fn a_name_found_nowhere_names_the_key_and_every_place_looked_in() {
    let d = tempfile::tempdir().unwrap();
    let plugins = plugin_dir(d.path(), "plugins", &[("declare", env!("GUEST_DECLARE"))]);
    std::fs::write(
        d.path().join("host.toml"),
        "[[plugin]]\nname = \"p\"\nwasm = \"persna\"\n",
    )
    .unwrap();
    let path = plugins.display().to_string();
    let failed = run(
        &bin(),
        d.path(),
        Some(&path),
        &["render", "--config", "host.toml"],
    );
    assert_eq!(failed.code, 1, "{}", failed.stderr);
    assert_eq!(
        failed.stderr,
        format!(
            "error: host.toml: plugin[0].wasm: plugin \"p\": no plugin named \"persna\": looked \
             for persna.wasm in {} (holds declare), {}; a file is written as a path, e.g. \
             ./persna\n",
            plugins.display(),
            beside_test_binary()
        )
    );

    std::fs::write(
        d.path().join("host.toml"),
        "[host]\nmcp_provider = \"mcp\"\n",
    )
    .unwrap();
    let failed = run(
        &bin(),
        d.path(),
        Some(&path),
        &["render", "--config", "host.toml"],
    );
    assert_eq!(
        failed.stderr,
        format!(
            "error: host.toml: host.mcp_provider: expected an instruction-provider component: \
             no plugin named \"mcp\": looked for mcp.wasm in {} (holds declare), {}; a file is \
             written as a path, e.g. ./mcp\n",
            plugins.display(),
            beside_test_binary()
        )
    );
}

#[test]
fn a_file_named_like_a_plugin_is_taken_only_when_written_as_a_path() {
    let d = tempfile::tempdir().unwrap();
    // On the search path, `persona` is the declare plugin; beside host.toml, a file named
    // `persona` is the persona plugin.
    let plugins = plugin_dir(d.path(), "plugins", &[("persona", env!("GUEST_DECLARE"))]);
    std::fs::copy(env!("GUEST_PERSONA"), d.path().join("persona")).unwrap();
    let toml = |wasm: &str| {
        format!(
            "[[scope]]\nname = \"a\"\n\n[[plugin]]\nname = \"p\"\nwasm = \"{wasm}\"\nscope = \"a\"\n\
             config = {{ text = \"The file.\" }}\n"
        )
    };
    let path = plugins.display().to_string();
    let render = |wasm: &str| {
        std::fs::write(d.path().join("host.toml"), toml(wasm)).unwrap();
        run(
            &bin(),
            d.path(),
            Some(&path),
            &["render", "--config", "host.toml", "--scope", "a"],
        )
    };
    // declare refuses `text`: the name reached the search path's plugin, not the file.
    let named = render("persona");
    assert_eq!(named.code, 1, "{}", named.stdout);
    assert!(
        named
            .stderr
            .contains("invalid config: config: unknown key \"text\""),
        "{}",
        named.stderr
    );
    assert_eq!(render("./persona").ok(), format!("{ID}\n\nThe file."));

    // With nothing on the search path, the error points at the file it did not take.
    let empty = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("host.toml"), toml("persona")).unwrap();
    let failed = run(
        &bin(),
        d.path(),
        Some(&empty.path().display().to_string()),
        &["render", "--config", "host.toml", "--scope", "a"],
    );
    assert_eq!(
        failed.stderr,
        format!(
            "error: host.toml: plugin[0].wasm: plugin \"p\": no plugin named \"persona\": looked \
             for persona.wasm in {} (no plugins), {}; persona exists, but a file is written as \
             a path: ./persona\n",
            empty.path().display(),
            beside_test_binary()
        )
    );
}

#[test]
fn serve_loads_and_reloads_a_plugin_by_name_and_says_where_it_looked() {
    let d = tempfile::tempdir().unwrap();
    let plugins = plugin_dir(
        d.path(),
        "plugins",
        &[
            ("declare", env!("GUEST_DECLARE")),
            ("persona", env!("GUEST_PERSONA")),
        ],
    );
    let path = plugins.display().to_string();
    let mut served = Served::start_with_env(
        &[],
        &d.path().join("cache"),
        &[("PROMPT_HOST_PLUGIN_PATH", &path)],
    );
    served.ok("bind_scope", json!({"scope": "a"}));
    let loaded = served.ok(
        "load_plugin",
        json!({"name": "p", "wasm": "persona", "scope": "a", "config": {"text": "Named."}}),
    );
    let rendered = served.ok("render", json!({"scope": "a"}));
    assert_eq!(rendered["prompt"], format!("{ID}\n\nNamed."));
    let reloaded = served.ok(
        "reload_plugin",
        json!({"id": loaded["id"], "wasm": "persona"}),
    );
    assert_eq!(reloaded["declarations"], 1);
    let missing = served.err("load_plugin", json!({"name": "q", "wasm": "persna"}));
    assert_eq!(
        missing,
        format!(
            "invalid params: wasm: no plugin named \"persna\": looked for persna.wasm in {} \
             (holds declare, persona), {}; a file is written as a path, e.g. ./persna",
            plugins.display(),
            beside_test_binary()
        )
    );
}

#[test]
#[cfg_attr(
    not(as_root),
    ignore = "gives a plugin directory to another user with chown, which needs root: run the tests as root (.ci/run does)"
)]
fn a_plugin_directory_of_another_user_is_refused_not_skipped() {
    #[cfg(as_root)]
    {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let planted = plugin_dir(d.path(), "planted", &[("persona", env!("GUEST_DECLARE"))]);
        let real = plugin_dir(d.path(), "real", &[("persona", env!("GUEST_PERSONA"))]);
        std::os::unix::fs::chown(&planted, Some(4242), Some(4242)).unwrap();
        std::fs::write(
            d.path().join("host.toml"),
            "[[scope]]\nname = \"agent:1\"\n\n[[plugin]]\nname = \"persona\"\nwasm = \"persona\"\n\
             scope = \"agent:1\"\nconfig = { text = \"Mine.\" }\n",
        )
        .unwrap();
        let path = format!("{}:{}", planted.display(), real.display());
        let refused = run(
            &bin(),
            d.path(),
            Some(&path),
            &["render", "--config", "host.toml", "--scope", "agent:1"],
        );
        assert_eq!(
            refused.stderr,
            format!(
                "error: host.toml: plugin[0].wasm: plugin \"persona\": plugin \"persona\" was \
                 found at {}, which is refused: its directory belongs to uid 4242, neither this \
                 user (uid 0) nor root\n",
                planted.join("persona.wasm").display()
            )
        );
        // Another user's file in one's own directory, and a file anyone may write, likewise.
        std::os::unix::fs::chown(&planted, Some(0), Some(0)).unwrap();
        std::os::unix::fs::chown(planted.join("persona.wasm"), Some(4242), None).unwrap();
        let refused = run(
            &bin(),
            d.path(),
            Some(&path),
            &["render", "--config", "host.toml", "--scope", "agent:1"],
        );
        assert!(
            refused.stderr.ends_with(
                "which is refused: it belongs to uid 4242, neither this user (uid 0) nor root\n"
            ),
            "{}",
            refused.stderr
        );
        std::os::unix::fs::chown(planted.join("persona.wasm"), Some(0), None).unwrap();
        std::fs::set_permissions(
            planted.join("persona.wasm"),
            std::fs::Permissions::from_mode(0o646),
        )
        .unwrap();
        let refused = run(
            &bin(),
            d.path(),
            Some(&path),
            &["render", "--config", "host.toml", "--scope", "agent:1"],
        );
        assert!(
            refused
                .stderr
                .ends_with("which is refused: it is writable by other users (mode 0646)\n"),
            "{}",
            refused.stderr
        );
    }
}

#[test]
fn dev_builds_nothing_for_a_plugin_given_by_name() {
    // The npm package's layout: its package.json above the plugins would otherwise make
    // `dev` run `npm run build` in the installed package.
    let d = tempfile::tempdir().unwrap();
    let package = d.path().join("node_modules/prompt-host");
    std::fs::create_dir_all(&package).unwrap();
    std::fs::write(
        package.join("package.json"),
        "{\"scripts\":{\"build\":\"false\"}}",
    )
    .unwrap();
    let plugins = plugin_dir(
        &package.join("bin/linux-x64"),
        "plugins",
        &[("persona", env!("GUEST_PERSONA"))],
    );
    std::fs::write(
        d.path().join("host.toml"),
        "[[scope]]\nname = \"a\"\n\n[[plugin]]\nname = \"p\"\nwasm = \"persona\"\nscope = \"a\"\n\
         config = { text = \"Installed.\" }\n",
    )
    .unwrap();
    let path = plugins.display().to_string();
    let dev = run(
        &bin(),
        d.path(),
        Some(&path),
        &[
            "dev",
            "--config",
            "host.toml",
            "--scope",
            "a",
            "--max-rounds",
            "0",
        ],
    );
    let first = dev.ok().lines().next().unwrap_or_default().to_string();
    assert_eq!(
        first,
        format!(
            "== watching plugin \"p\": {} (no build command)",
            plugins.join("persona.wasm").display()
        )
    );
}
