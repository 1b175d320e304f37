//! The PostgreSQL store against a real server (support/postgres.rs): the store contract as
//! the file log and SQLite keep it, two writers racing, copies between every pair of
//! stores, rows someone else wrote, and a URL's password kept out of every message.

use std::path::{Path, PathBuf};

use super::attacked::skip;
use super::stores::{conversation, race_two_hosts, race_two_servers};
use crate::integration::support::cli::Deployment;
use crate::integration::support::postgres::{server, OwnCluster};
use prompt_host::session::{AppendError, Session};
use prompt_host::{Facts, Host, PromptConfig, RuntimeConfig, StepOptions};

/// The test server and a new database on it; else a `SKIPPED` line (a failure under CI)
/// and the test returns.
macro_rules! database_or_skip {
    ($test:literal) => {
        match server() {
            Ok(pg) => (pg, pg.database()),
            Err(why) => return skip(concat!(module_path!(), "::", $test), &why),
        }
    };
}

/// A host with no plugin, the facts of a step, and a step with one user message.
fn bare_host() -> Host {
    Host::new(
        PromptConfig::default().include_harness_identity(false),
        RuntimeConfig::default(),
    )
    .unwrap()
}

fn facts() -> Facts {
    Facts::new().with("model", "m")
}

fn ask(question: &str) -> StepOptions {
    StepOptions::default().user_texts(vec![question.to_string()])
}

fn name(db: &str, id: &str) -> PathBuf {
    PathBuf::from(format!("{db}#{id}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_gives_the_same_requests_and_replays_as_a_log_file() {
    let (pg, db) =
        database_or_skip!("a_conversation_gives_the_same_requests_and_replays_as_a_log_file");
    let dir = tempfile::tempdir().unwrap();
    let in_file = conversation(&dir.path().join("s.jsonl")).await;
    let in_pg = conversation(&name(&db, "s")).await;
    assert_eq!(in_file.len(), in_pg.len());
    for (i, (file, pg)) in in_file.iter().zip(&in_pg).enumerate() {
        assert_eq!(file, pg, "request {i}");
    }
    // The rows are the lines of the log file, byte for byte.
    let (from_file, _) = Session::read(dir.path().join("s.jsonl")).unwrap();
    let (from_pg, _) = Session::read(name(&db, "s")).unwrap();
    assert_eq!(from_file.len(), from_pg.len());
    assert_eq!(
        pg.psql(
            &db,
            "SELECT count(*) FROM prompt_host_events WHERE session = 's'"
        )
        .trim(),
        from_pg.len().to_string()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_behind_another_writer_is_told_conflict_with_nothing_written() {
    let (pg, db) =
        database_or_skip!("a_host_behind_another_writer_is_told_conflict_with_nothing_written");
    let session = name(&db, "agent '7'; DROP TABLE prompt_host_events; --");
    let host = bare_host();
    let (mut first, _) = Session::open(&session).unwrap();
    let (mut second, _) = Session::open(&session).unwrap();
    host.step(&mut first, None, facts(), &ask("one"))
        .await
        .unwrap();
    let written = first.events().len() as u64;
    let err = host
        .step(&mut second, None, facts(), &ask("two"))
        .await
        .unwrap_err();
    match &err {
        prompt_host::HostError::Session {
            error: AppendError::Conflict {
                expected, actual, ..
            },
            ..
        } => assert_eq!((*expected, *actual), (0, written)),
        other => panic!("{other}"),
    }
    assert_eq!(
        pg.psql(&db, "SELECT count(*) FROM prompt_host_events")
            .trim(),
        written.to_string()
    );
    // Caught up, it steps after the other writer's events.
    assert_eq!(second.refresh().unwrap(), written as usize);
    let (_, step) = host
        .step(&mut second, None, facts(), &ask("two"))
        .await
        .unwrap();
    assert_eq!(step.step, 1);
}

#[test]
fn two_serve_processes_racing_on_one_postgres_session_never_fork_it() {
    let (_, db) =
        database_or_skip!("two_serve_processes_racing_on_one_postgres_session_never_fork_it");
    race_two_servers(|_| name(&db, "shared"));
}

#[test]
fn two_hosts_in_one_process_racing_on_one_postgres_session_never_fork_it() {
    let (_, db) =
        database_or_skip!("two_hosts_in_one_process_racing_on_one_postgres_session_never_fork_it");
    race_two_hosts(&name(&db, "shared"));
}

#[test]
fn a_session_copied_through_every_store_exports_the_same_bytes() {
    let (_, db) = database_or_skip!("a_session_copied_through_every_store_exports_the_same_bytes");
    let d = Deployment::new(
        "[prompt]\ninclude_harness_identity = false\npersona = \"Terse on {{model}}.\"\n",
    );
    let config = d.config();
    let file = d.path("s.jsonl");
    for user in ["hi", "again"] {
        d.run(&[
            "step",
            "--config",
            config.to_str().unwrap(),
            "--session",
            file.to_str().unwrap(),
            "--fact",
            "model=m",
            "--user",
            user,
        ])
        .ok();
        d.run(&[
            "assistant",
            "--session",
            file.to_str().unwrap(),
            "--text",
            "ok",
        ])
        .ok();
    }
    let sqlite = format!("sqlite:{}#copy", d.path("s.db").display());
    let in_pg = format!("{db}#copy");
    let back = d.path("back.jsonl");
    d.run(&["sessions", "copy", file.to_str().unwrap(), &in_pg])
        .ok();
    d.run(&["sessions", "copy", &in_pg, &sqlite]).ok();
    d.run(&["sessions", "copy", &sqlite, back.to_str().unwrap()])
        .ok();
    assert_eq!(std::fs::read(&back).unwrap(), std::fs::read(&file).unwrap());
    assert_eq!(
        d.run(&["sessions", "export", &in_pg]).ok(),
        std::fs::read_to_string(&file).unwrap()
    );
    assert_eq!(
        d.run(&["replay", "--session", &in_pg]).ok(),
        d.run(&["replay", "--session", file.to_str().unwrap()]).ok()
    );
    let listed = d.run(&["sessions", "list", &db, "--json"]).ok().to_string();
    assert!(listed.contains("\"id\":\"copy\""), "{listed}");
    assert_eq!(
        d.run(&["sessions", "migrate", &db]).ok(),
        format!("store {db}: schema version 1\n")
    );
}

#[test]
fn a_row_someone_else_wrote_refuses_its_session_and_no_other() {
    let (pg, db) = database_or_skip!("a_row_someone_else_wrote_refuses_its_session_and_no_other");
    for id in ["good", "bad"] {
        let (mut s, _) = Session::open(name(&db, id)).unwrap();
        s.append(prompt_host::session::NewEvent::message(
            prompt_host::session::USER_MESSAGE,
            prompt_host::session::MessageData::new(prompt_host::session::Message::user_text("hi")),
            prompt_host::session::SurfaceIntent::append(),
        ))
        .unwrap();
    }
    pg.psql(
        &db,
        "INSERT INTO prompt_host_events (session, seq, line) VALUES ('bad', 1, convert_to('{not json', 'UTF8'))",
    );
    let err = Session::open(name(&db, "bad")).unwrap_err().to_string();
    assert!(
        err.starts_with(&format!("session {db}#bad, seq 1: ")),
        "{err}"
    );
    let (good, _) = Session::open(name(&db, "good")).unwrap();
    assert_eq!(good.events().len(), 1);
}

#[test]
fn a_password_in_the_url_is_never_shown() {
    let (_, db) = database_or_skip!("a_password_in_the_url_is_never_shown");
    // The server trusts loopback connections, so the password is sent and ignored; a wrong
    // database name makes every message name the store.
    let with_password = db.replacen("postgres://postgres@", "postgres://postgres:s3cret-pw@", 1);
    let missing = format!("{}_missing#s", with_password);
    let err = Session::open(Path::new(&missing)).unwrap_err().to_string();
    assert!(!err.contains("s3cret-pw"), "{err}");
    assert!(err.contains(&format!("{db}_missing#s")), "{err}");
    let d = Deployment::new("");
    let run = d.run(&["replay", "--session", &missing]);
    assert_ne!(run.code, 0);
    assert!(!run.stderr.contains("s3cret-pw"), "{}", run.stderr);
    assert!(!run.stdout.contains("s3cret-pw"));
}

/// The server stopped mid-conversation: the step fails naming the store, nothing of it is
/// written, and once the server is back the next step works on a new connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_stopped_and_started_again_fails_one_step_and_loses_nothing() {
    let test = concat!(
        module_path!(),
        "::a_server_stopped_and_started_again_fails_one_step_and_loses_nothing"
    );
    let cluster = match OwnCluster::start("restart") {
        Ok(cluster) => cluster,
        Err(why) => return skip(test, &why),
    };
    let session = name(&cluster.url(), "s");
    let host = bare_host();
    let (mut log, _) = Session::open(&session).unwrap();
    host.step(&mut log, None, facts(), &ask("one"))
        .await
        .unwrap();
    let written = log.events().len();
    cluster.pg_ctl(&["stop", "-m", "fast", "-w"]).unwrap();
    let err = host
        .step(&mut log, None, facts(), &ask("two"))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(&format!(
            "session {}: writing event at seq {written} failed: ",
            session.display()
        )),
        "{err}"
    );
    assert_eq!(
        log.events().len(),
        written,
        "nothing of the failed step is kept"
    );
    cluster.pg_ctl(&["start", "-w"]).unwrap();
    let (_, step) = host
        .step(&mut log, None, facts(), &ask("two"))
        .await
        .unwrap();
    assert_eq!(step.step, 1);
    let (reread, _) = Session::read(&session).unwrap();
    assert_eq!(reread.len(), log.events().len());
}

/// A server that accepts the connection and never answers: the command fails within the
/// store's timeout, naming the store, instead of hanging.
#[test]
fn a_server_that_never_answers_fails_within_the_timeout() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // Accepted and held, never read from or written to.
    let held = std::thread::spawn(move || {
        let mut kept = Vec::new();
        for stream in listener.incoming().take(4) {
            kept.push(stream);
        }
        std::thread::sleep(std::time::Duration::from_secs(20));
    });
    let session = format!("postgres://app:pw@127.0.0.1:{port}/db#s");
    let started = std::time::Instant::now();
    let out = std::process::Command::new(crate::integration::support::cli::bin())
        .args(["replay", "--session", &session])
        .env("PROMPT_HOST_STORE_TIMEOUT_MS", "1500")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("session postgres://app@127.0.0.1:{port}/db#s: the database did not answer within 1500 ms")),
        "{stderr}"
    );
    assert!(!stderr.contains("pw@"), "{stderr}");
    // Bounded: well under the 30 s default (a hang would be the default or forever).
    assert!(started.elapsed() < std::time::Duration::from_secs(15));
    drop(held);
}
