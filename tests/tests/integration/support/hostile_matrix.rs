//! The hostile matrix: every mode of the `hostile` guest in `init` and in every export, with
//! the outcome each must have, shared by the entry-point tests (CLI, `serve`, the library in
//! both Tokio runtime flavours).
//!
//! Every case either succeeds or fails with one paragraph naming the plugin (`hostile`), the
//! export it failed in and its scope; the amplification cases fail at rendering instead,
//! naming the section, the variable, the plugin and the scope. Deadlines are short
//! (`init_timeout_ms = 250`, `call_timeout_ms = 50`) so the slow cases stay quick.

use serde_json::{json, Value};

/// Where a mode runs.
pub const PHASES: [&str; 6] = [
    "init", "section", "context", "variable", "tools", "listener",
];

/// Every mode of the guest.
pub const MODES: [&str; 28] = [
    "ok",
    "loop",
    "memory",
    "recursion",
    "panic",
    "trap",
    "sleep",
    "handles",
    "log_spam",
    "stdout_spam",
    "huge_log",
    "huge_text",
    "probe_fs",
    "probe_env",
    "probe_net",
    "probe_stdin",
    "duplicate",
    "invalid",
    "many_sections",
    "declare_after_init",
    "next_twice",
    "odd_names",
    "poll_instant",
    "random",
    "amplify",
    "say",
    "read_file",
    "write_file",
];

/// What a case must do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// Loads and renders.
    Ok,
    /// Fails `init` (the plugin does not load).
    FailsInit,
    /// Loads; the assembly fails in the phase's export.
    FailsCall,
    /// Loads and assembles; rendering exceeds the prompt or context budget.
    FailsBudget,
}

/// One cell of the matrix.
#[derive(Debug, Clone)]
pub struct Case {
    pub mode: &'static str,
    pub phase: &'static str,
    pub expect: Expect,
}

impl Case {
    /// The plugin config.
    pub fn config(&self) -> Value {
        let mut config = json!({"mode": self.mode, "in": self.phase});
        let extra = match self.mode {
            // One more byte than the memory limit: refused before anything is allocated.
            "random" => json!({"bytes": (64u64 << 20) + 1}),
            // 500,000 × 50,000 = 25 GB if rendered; fits the 1 MiB output budget of init.
            "amplify" => json!({"bytes": 500_000, "count": 50_000}),
            _ => json!({}),
        };
        config
            .as_object_mut()
            .expect("object")
            .extend(extra.as_object().expect("object").clone());
        config
    }

    /// The plugin's limits: short deadlines.
    pub fn limits() -> Value {
        json!({"init_timeout_ms": 250, "call_timeout_ms": 50})
    }

    /// The export the phase runs in.
    pub fn export(&self) -> &'static str {
        match self.phase {
            "init" => "init",
            "section" => "section-text",
            "context" => "context-text",
            "variable" => "variable",
            "tools" => "tools",
            "listener" => "on-assemble",
            other => panic!("phase {other}"),
        }
    }

    /// `mode/phase`, for messages.
    pub fn label(&self) -> String {
        format!("{}/{}", self.mode, self.phase)
    }

    /// Assert that `message` (a whole error) tells this case's failure in one paragraph,
    /// naming the plugin, the export (or, for a budget, the section and variable) and
    /// `scope`.
    pub fn assert_error(&self, message: &str, scope: &str) {
        let label = self.label();
        assert!(
            !message.trim_end().contains('\n') && !message.contains('\r'),
            "{label}: not one paragraph: {message:?}"
        );
        assert!(!message.contains("wasm backtrace"), "{label}: {message}");
        assert!(
            message.contains("\"hostile\""),
            "{label}: no plugin: {message}"
        );
        assert!(
            message.contains(scope),
            "{label}: no scope {scope}: {message}"
        );
        match self.expect {
            Expect::FailsBudget => {
                assert!(message.contains("would exceed max_"), "{label}: {message}");
                assert!(
                    message.contains("variable \"amp\" is from plugin \"hostile\""),
                    "{label}: {message}"
                );
            }
            _ => assert!(
                message.contains(&format!("export \"{}\"", self.export())),
                "{label}: no export: {message}"
            ),
        }
    }
}

/// The expected outcome of `mode` in `phase`.
fn expect(mode: &str, phase: &str) -> Expect {
    let init = phase == "init";
    let fails = if init {
        Expect::FailsInit
    } else {
        Expect::FailsCall
    };
    match mode {
        // Without a grant there is nothing to write to: each attempt is reported as text.
        "ok" | "probe_fs" | "probe_env" | "probe_net" | "probe_stdin" | "declare_after_init"
        | "write_file" => Expect::Ok,
        // These declare: allowed only during init, `closed` afterwards.
        "duplicate" | "invalid" | "odd_names" if init => Expect::Ok,
        "duplicate" | "invalid" | "odd_names" => Expect::FailsCall,
        // Needs the assembly handle: only a listener has one.
        "next_twice" if phase == "listener" => Expect::Ok,
        // A value is inserted verbatim and a tool description is not rendered.
        "amplify" if phase == "variable" || phase == "tools" => Expect::Ok,
        "amplify" => Expect::FailsBudget,
        _ => fails,
    }
}

/// Every (mode, phase) pair with its outcome.
pub fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    for mode in MODES {
        for phase in PHASES {
            out.push(Case {
                mode,
                phase,
                expect: expect(mode, phase),
            });
        }
    }
    out
}

/// The declare guest's amplification: a 500,000-character variable and a section of
/// `{{v}}` repeated 100,000 times (50 GB once rendered).
pub fn declare_amplifier() -> Value {
    json!({
        "variables": [{"name": "v", "value": "x".repeat(500_000)}],
        "sections": [{"name": "amp", "order": 10, "text": "{{v}}".repeat(100_000)}],
    })
}

/// The same deployment's good plugin: a dynamic section in `agent:ok`.
pub fn good_config() -> Value {
    json!({"sections": [{"name": "good", "order": 1, "text": {"dynamic": "fine in ${scope}"}}]})
}

/// `value` as a TOML inline value (JSON string escapes are valid in TOML basic strings).
pub fn toml_inline(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let items: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{} = {}", Value::String(k.clone()), toml_inline(v)))
                .collect();
            format!("{{ {} }}", items.join(", "))
        }
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(toml_inline).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Null => panic!("TOML has no null"),
        other => other.to_string(),
    }
}

/// A host.toml with the benign plugin in `agent:ok` and, when given, the hostile case in
/// `agent:h` with failure policy `on_error`. Paths are the built guests'.
pub fn deployment_toml(hostile: Option<(&Case, &str)>) -> String {
    let mut toml = format!(
        "[[scope]]\nname = \"agent:ok\"\n\n[[scope]]\nname = \"agent:h\"\n\n\
         [[plugin]]\nname = \"good\"\nwasm = {}\nscope = \"agent:ok\"\nconfig = {}\n",
        Value::String(env!("GUEST_DECLARE").into()),
        toml_inline(&good_config())
    );
    if let Some((case, on_error)) = hostile {
        toml.push_str(&format!(
            "\n[[plugin]]\nname = \"hostile\"\nwasm = {}\nscope = \"agent:h\"\nconfig = {}\nlimits = {}\non_error = \"{on_error}\"\n",
            Value::String(env!("GUEST_HOSTILE").into()),
            toml_inline(&case.config()),
            toml_inline(&Case::limits()),
        ));
    }
    toml
}

/// The matrix as JSON, for the clients' suites, which run it through their own entry points
/// (the Python package's in-process host among them): each case's mode, phase, outcome,
/// config, limits and export.
pub fn cases_json() -> Value {
    let cases: Vec<Value> = cases()
        .iter()
        .map(|case| {
            json!({
                "mode": case.mode,
                "phase": case.phase,
                "expect": match case.expect {
                    Expect::Ok => "ok",
                    Expect::FailsInit => "fails-init",
                    Expect::FailsCall => "fails-call",
                    Expect::FailsBudget => "fails-budget",
                },
                "config": case.config(),
                "limits": Case::limits(),
                "export": case.export(),
            })
        })
        .collect();
    json!({
        "about": "The hostile matrix (tests/tests/integration/support/hostile_matrix.rs), for the clients' suites. Recorded by `PROMPT_HOST_BLESS=1 cargo test -p prompt-host-tests --test integration hostile_matrix_is_recorded`.",
        "good_config": good_config(),
        "cases": cases,
    })
}

/// The recording the clients read is the matrix this file defines.
#[test]
fn hostile_matrix_is_recorded() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/hostile-matrix.json");
    let actual = serde_json::to_string_pretty(&cases_json()).unwrap() + "\n";
    if std::env::var_os("PROMPT_HOST_BLESS").is_some() {
        std::fs::write(&path, &actual).unwrap();
        return;
    }
    let recorded = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (record it with PROMPT_HOST_BLESS=1)",
            path.display()
        )
    });
    assert!(
        recorded == actual,
        "{} differs from the matrix in hostile_matrix.rs: record it again with PROMPT_HOST_BLESS=1",
        path.display()
    );
}
