//! The stores under faults: a `serve` process killed with SIGKILL while it steps (nothing
//! acknowledged lost, nothing partial visible, the next server goes on), and a full disk
//! under SQLite (a clear error naming the session, nothing partial, the next step after
//! space is made works). PostgreSQL stopped mid-conversation is in `postgres.rs`.

use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;

use super::attacked::{skip, Tmpfs};
use crate::integration::support::cli::Deployment;
use crate::integration::support::postgres::server;
use crate::integration::support::serve::Served;
use prompt_host::session::{Event, Session, STEP_END, STEP_START};
use prompt_host::{Facts, Host, PromptConfig, RuntimeConfig, StepOptions};

const CONFIG: &str = "[prompt]\ninclude_harness_identity = false\npersona = \"Terse.\"\n";

#[test]
fn a_server_killed_mid_step_on_sqlite_loses_nothing_acknowledged() {
    let d = Deployment::new(CONFIG);
    let name = PathBuf::from(format!("sqlite:{}#killed", d.path("s.db").display()));
    killed_while_stepping(&d, &name);
}

#[test]
fn a_server_killed_mid_step_on_a_log_file_loses_nothing_acknowledged() {
    let d = Deployment::new(CONFIG);
    killed_while_stepping(&d, &d.path("killed.jsonl"));
}

#[test]
fn a_server_killed_mid_step_on_postgres_loses_nothing_acknowledged() {
    let pg = match server() {
        Ok(pg) => pg,
        Err(why) => {
            return skip(
                concat!(
                    module_path!(),
                    "::a_server_killed_mid_step_on_postgres_loses_nothing_acknowledged"
                ),
                &why,
            )
        }
    };
    let d = Deployment::new(CONFIG);
    let name = PathBuf::from(format!("{}#killed", pg.database()));
    killed_while_stepping(&d, &name);
}

/// Three rounds: a server steps the session in a tight loop and is killed with SIGKILL
/// after a while (each round a different while, so the kill falls at different points of
/// a step); after each, the store holds every acknowledged step exactly once, every step it
/// holds is whole (step/start … step/end), at most one more than was acknowledged (written,
/// not yet answered), and the next server goes on from there.
fn killed_while_stepping(d: &Deployment, name: &std::path::Path) {
    let session = name.display().to_string();
    let mut acknowledged: Vec<String> = Vec::new();
    for (round, after_ms) in [(0, 150u64), (1, 400), (2, 900)] {
        let acked = Arc::new(Mutex::new(Vec::new()));
        let mut served = Served::start(
            &["--config", d.config().to_str().unwrap()],
            &d.path("cache"),
        );
        let pid = served.pid();
        let stepping = {
            let (acked, session) = (Arc::clone(&acked), session.clone());
            std::thread::spawn(move || {
                for i in 0.. {
                    let text = format!("round {round} step {i}");
                    let request = json!({"jsonrpc": "2.0", "id": i, "method": "step",
                        "params": {"session": session, "user": [text], "facts": {"model": "m"}}});
                    let Some(answer) = served.try_call_line(&request.to_string()) else {
                        return; // killed
                    };
                    assert!(answer.get("result").is_some(), "{answer}");
                    acked.lock().unwrap().push(text);
                }
            })
        };
        std::thread::sleep(Duration::from_millis(after_ms));
        let killed = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        stepping
            .join()
            .expect("the stepping thread saw only answers");
        let acked = acked.lock().unwrap().clone();
        acknowledged.extend(acked.iter().cloned());

        let (events, _) = Session::read(name).unwrap_or_else(|e| panic!("round {round}: {e}"));
        let steps = whole_steps(&events);
        let lines: Vec<String> = events
            .iter()
            .map(|e| String::from_utf8(e.to_line().unwrap()).unwrap())
            .collect();
        for text in &acknowledged {
            let quoted = serde_json::to_string(text).unwrap();
            let found = lines.iter().filter(|l| l.contains(&quoted)).count();
            assert_eq!(
                found, 1,
                "round {round}: {text} is in the store {found} times"
            );
        }
        assert!(
            steps == acknowledged.len() || steps == acknowledged.len() + 1,
            "round {round}: {steps} steps stored, {} acknowledged",
            acknowledged.len()
        );
        // Any step written but not answered is whole too; the next round steps after it.
        if steps > acknowledged.len() {
            acknowledged.push(format!("round {round} step {}", acked.len()));
        }
        eprintln!(
            "round {round}: killed after {after_ms} ms, {} steps acknowledged, {steps} stored",
            acked.len()
        );
    }
    // A last server steps on, after everything the killed ones wrote.
    let mut served = Served::start(
        &["--config", d.config().to_str().unwrap()],
        &d.path("cache"),
    );
    let last = served.ok(
        "step",
        json!({"session": session, "user": ["after"], "facts": {"model": "m"}}),
    );
    assert_eq!(last["step"], json!(acknowledged.len()), "{last}");
}

/// The number of steps in `events`, each whole: step/start … step/end, none inside another
/// and none left open.
fn whole_steps(events: &[Event]) -> usize {
    let (mut open, mut steps) = (false, 0);
    for event in events {
        match event.kind.as_str() {
            STEP_START => {
                assert!(!open, "a step began inside another at seq {}", event.seq);
                open = true;
            }
            STEP_END => {
                assert!(
                    open,
                    "a step ended that did not begin, at seq {}",
                    event.seq
                );
                open = false;
                steps += 1;
            }
            _ => {}
        }
    }
    assert!(!open, "a partial step is visible");
    steps
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_under_sqlite_fails_the_step_clearly_and_loses_nothing() {
    let test = concat!(
        module_path!(),
        "::a_full_disk_under_sqlite_fails_the_step_clearly_and_loses_nothing"
    );
    let Some(fs) = Tmpfs::mount(test, "512k") else {
        return;
    };
    let name = PathBuf::from(format!("sqlite:{}#full", fs.path().join("s.db").display()));
    let host = Host::new(
        PromptConfig::default().include_harness_identity(false),
        RuntimeConfig::default(),
    )
    .unwrap();
    let facts = || Facts::new().with("model", "m");
    let ask =
        |i: usize| StepOptions::default().user_texts(vec![format!("{i} {}", "y".repeat(20_000))]);
    let (mut session, _) = Session::open(&name).unwrap();
    let mut acked = 0;
    let err = loop {
        match host.step(&mut session, None, facts(), &ask(acked)).await {
            Ok(_) => acked += 1,
            Err(e) => break e,
        }
        assert!(acked < 200, "a 512 KiB tmpfs never filled up");
    };
    let message = err.to_string();
    eprintln!("full disk after {acked} steps: {message}");
    assert!(
        message.contains(&format!("sqlite:{}#full", fs.path().join("s.db").display())),
        "{message}"
    );
    assert!(message.contains("full"), "{message}");
    drop(session);
    // Every acknowledged step is there, whole; the failed one left nothing.
    let (events, _) = Session::read(&name).unwrap();
    assert_eq!(whole_steps(&events), acked);
    // With room again, the session steps on from where it was.
    fs.remount("size=4m");
    let (mut session, _) = Session::open(&name).unwrap();
    let (_, step) = host
        .step(&mut session, None, facts(), &ask(acked))
        .await
        .unwrap();
    assert_eq!(step.step as usize, acked);
}
