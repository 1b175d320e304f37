//! The binary on sessions in a SQLite database: `step`, `assistant` and `replay` name one by
//! `sqlite:PATH#ID`; `prompt-host sessions` lists, exports, imports, copies, prunes and
//! migrates, and every copy replays byte for byte.

use serde_json::Value;

use crate::integration::support::cli::{bin, Deployment};

const CONFIG: &str =
    "[prompt]\ninclude_harness_identity = false\npersona = \"Terse on {{model}}.\"\n";

#[test]
fn a_session_moves_between_sqlite_and_log_files_and_replays_alike() {
    let d = Deployment::new(CONFIG);
    let config = d.config();
    let config = config.to_str().unwrap();
    let store = format!("sqlite:{}", d.path("sessions.db").display());
    // Quotes and SQL in an id are text like any other.
    let id = format!("{store}#agent 7's \"log\"; DROP TABLE events; --");
    let step = |user: &str| {
        d.run(&[
            "step",
            "--config",
            config,
            "--session",
            &id,
            "--fact",
            "model=m",
            "--user",
            user,
        ])
        .ok()
        .to_string()
    };
    step("hi");
    d.run(&["assistant", "--session", &id, "--text", "hello"])
        .ok();
    let last = step("again");
    let replayed = d.run(&["replay", "--session", &id]).ok().to_string();
    assert_eq!(
        serde_json::from_str::<Value>(&replayed).unwrap(),
        serde_json::from_str::<Value>(&last).unwrap()
    );

    // Exported, the session is a log file that replays the same.
    let exported = d.run(&["sessions", "export", &id]).ok().to_string();
    assert!(exported.starts_with("{\"prompt-host\":\"session-log\",\"version\":1}\n"));
    let file = d.path("exported.jsonl");
    std::fs::write(&file, &exported).unwrap();
    let file = file.to_str().unwrap();
    assert_eq!(d.run(&["replay", "--session", file]).ok(), replayed);

    // Copied to a file: the same bytes; imported into another id: the same replay.
    let copied = d.path("copied.jsonl");
    let copied = copied.to_str().unwrap();
    d.run(&["sessions", "copy", &id, copied]).ok();
    assert_eq!(std::fs::read_to_string(copied).unwrap(), exported);
    let other = format!("{store}#b");
    d.run(&["sessions", "import", file, &other]).ok();
    assert_eq!(d.run(&["replay", "--session", &other]).ok(), replayed);
    for step in 0..2 {
        let step = step.to_string();
        assert_eq!(
            d.run(&["replay", "--session", &other, "--step", &step])
                .ok(),
            d.run(&["replay", "--session", file, "--step", &step]).ok()
        );
    }
    // Into a session that holds events: refused, nothing written.
    d.run(&["sessions", "import", file, &other]).fails(
        1,
        &[&format!(
            "session {other} already holds 11 events; copy into a new session"
        )],
    );

    let listed = d
        .run(&["sessions", "list", &store, "--json"])
        .ok()
        .to_string();
    let listed: Vec<Value> = listed
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert_eq!(listed[0]["id"], "agent 7's \"log\"; DROP TABLE events; --");
    assert_eq!(listed[0]["events"], 11);
    assert!(listed[0]["last_time"].as_u64().is_some());
    let table = d.run(&["sessions", "list", &store]).ok().to_string();
    assert!(
        table.contains("\"agent 7's \\\"log\\\"; DROP TABLE events; --\""),
        "{table}"
    );

    assert_eq!(
        d.run(&["sessions", "migrate", &store]).ok(),
        format!("store {store}: schema version 1\n")
    );
    // Nothing is a day old; everything is older than nothing.
    assert_eq!(
        d.run(&["sessions", "prune", &store, "--older-than", "1d"])
            .ok(),
        ""
    );
    std::thread::sleep(std::time::Duration::from_millis(5));
    let dry = d
        .run(&[
            "sessions",
            "prune",
            &store,
            "--older-than",
            "0s",
            "--dry-run",
        ])
        .ok()
        .to_string();
    assert_eq!(dry.lines().count(), 2, "{dry}");
    d.run(&["sessions", "prune", &store, "--older-than", "0s"])
        .ok();
    assert_eq!(d.run(&["sessions", "list", &store, "--json"]).ok(), "");
}

#[test]
fn bad_session_names_and_stores_are_refused_by_name() {
    let d = Deployment::new(CONFIG);
    let db = d.path("s.db");
    let store = format!("sqlite:{}", db.display());
    d.run(&["replay", "--session", &format!("{store}#")])
        .fails(1, &["session id \"\": is empty"]);
    let long = format!("{store}#{}", "x".repeat(100_000));
    d.run(&["replay", "--session", &long])
        .fails(1, &["is 100000 bytes long; at most 512 are allowed"]);
    d.run(&["replay", "--session", &store]).fails(
        1,
        &["a SQLite session is named sqlite:PATH#ID (the database file, then the session's id)"],
    );
    d.run(&["sessions", "list", "logs/a.jsonl"]).fails(
        1,
        &["\"logs/a.jsonl\" is not a store of sessions; a store is named sqlite:PATH"],
    );
    // Reading creates nothing.
    d.run(&["sessions", "list", &store])
        .fails(1, &[&format!("store {store}: the database does not exist")]);
    d.run(&["sessions", "export", &format!("{store}#a")])
        .fails(1, &["the database does not exist"]);
    assert!(!db.exists());
    // A session with no events replays nothing.
    d.run(&["sessions", "migrate", &store]).ok();
    d.run(&["replay", "--session", &format!("{store}#a")])
        .fails(1, &["no completed step"]);
}

#[cfg(unix)]
#[test]
fn a_session_name_that_is_not_utf8_is_refused() {
    use std::os::unix::ffi::OsStrExt;
    let d = Deployment::new(CONFIG);
    let out = std::process::Command::new(crate::integration::support::cli::bin())
        .args(["replay", "--session"])
        .arg(std::ffi::OsStr::from_bytes(b"sqlite:s.db#\xff"))
        .current_dir(d.path(""))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("session name \"sqlite:s.db#\u{fffd}\" is not valid UTF-8"),
        "{stderr}"
    );
    assert!(!d.path("s.db").exists());
}

#[test]
fn a_session_is_named_by_its_id_within_the_configured_store() {
    // host.toml's store, its path relative to the file.
    let d = Deployment::new(&format!(
        "{CONFIG}\n[sessions]\nstore = \"sqlite:sessions.db\"\n"
    ));
    let config = d.config();
    let config = config.to_str().unwrap();
    let db = d.path("sessions.db");
    let store = format!("sqlite:{}", db.display());
    let id = "agent 7's \"log\"; DROP TABLE events; --";
    let step = d
        .run(&[
            "step",
            "--config",
            config,
            "--session",
            id,
            "--fact",
            "model=m",
            "--user",
            "hi",
        ])
        .ok()
        .to_string();
    assert!(db.exists(), "the store beside host.toml holds the session");
    // The commands that load no host.toml take the store from --store or the environment.
    d.run(&[
        "assistant",
        "--store",
        &store,
        "--session",
        id,
        "--text",
        "ok",
    ])
    .ok();
    let replay = std::process::Command::new(bin())
        .args(["replay", "--session", id])
        .env("PROMPT_HOST_STORE", &store)
        .output()
        .unwrap();
    assert!(
        replay.status.success(),
        "{}",
        String::from_utf8_lossy(&replay.stderr)
    );
    assert_eq!(
        serde_json::from_slice::<Value>(&replay.stdout).unwrap(),
        serde_json::from_str::<Value>(&step).unwrap()
    );
    // The full name names the same session; `sessions list` defaults to the store.
    let full = format!("{store}#{id}");
    assert_eq!(
        d.run(&["replay", "--session", &full]).ok(),
        String::from_utf8_lossy(&replay.stdout)
    );
    let listed = d
        .run(&["sessions", "--store", &store, "list", "--json"])
        .ok()
        .to_string();
    let listed: Value = serde_json::from_str(listed.trim()).unwrap();
    assert_eq!(
        (listed["id"].as_str(), listed["events"].as_u64()),
        (Some(id), Some(7))
    );
    // A tool call and its result by id, a step after them, and `inspect --session` on it.
    let call = r#"{"id": "c1", "name": "ls", "arguments": {"path": "."}}"#;
    d.run(&[
        "assistant",
        "--store",
        &store,
        "--session",
        id,
        "--tool-call",
        call,
    ])
    .ok();
    d.run(&[
        "tool-result",
        "--store",
        &store,
        "--session",
        id,
        "--call-id",
        "c1",
        "--content",
        "README.md",
    ])
    .ok();
    d.run(&[
        "step",
        "--config",
        config,
        "--session",
        id,
        "--fact",
        "model=m",
    ])
    .ok();
    let inspected = d
        .run(&[
            "inspect",
            "--config",
            config,
            "--fact",
            "model=m",
            "--session",
            id,
        ])
        .ok()
        .to_string();
    assert!(
        inspected.contains(&format!("session {store}#{id} (route chat-completions")),
        "{inspected}"
    );
    // `file:` still names a log file; a bad id is refused by the store's rule.
    let log = d.path("own.jsonl");
    d.run(&[
        "step",
        "--config",
        config,
        "--session",
        &format!("file:{}", log.display()),
        "--fact",
        "model=m",
        "--user",
        "hi",
    ])
    .ok();
    assert!(log.exists());
    d.run(&[
        "step",
        "--config",
        config,
        "--session",
        &"x".repeat(600),
        "--fact",
        "model=m",
        "--user",
        "hi",
    ])
    .fails(1, &["is 600 bytes long; at most 512 are allowed"]);
    // --store over host.toml's; a bad store is refused naming the flag.
    let other = d.path("other.db");
    d.run(&[
        "step",
        "--config",
        config,
        "--store",
        &format!("sqlite:{}", other.display()),
        "--session",
        id,
        "--fact",
        "model=m",
        "--user",
        "hi",
    ])
    .ok();
    assert!(other.exists());
    d.run(&["replay", "--store", "logs/", "--session", id])
        .fails(
            1,
            &["--store (or PROMPT_HOST_STORE): \"logs/\" is not a store of sessions"],
        );
    // A store in host.toml that is not one is refused when the file loads.
    let bad = Deployment::new(&format!(
        "{CONFIG}\n[sessions]\nstore = \"postgres://u:hunter2@db/x#id\"\n"
    ));
    let shown = bad.config();
    let refused = bad.run(&["render", "--config", shown.to_str().unwrap()]);
    refused.fails(
        1,
        &[
            "sessions.store",
            "expected sqlite:PATH or postgres://USER@HOST/DB",
            "postgres://u@db/x#id",
        ],
    );
    assert!(!refused.stderr.contains("hunter2"), "{}", refused.stderr);
}
