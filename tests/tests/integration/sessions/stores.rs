//! One store contract, every backend: the same conversations give byte-identical requests and
//! replays in a log file and in a SQLite database; two writers on one SQLite session, through
//! the library and through two `serve` processes, lose nothing and interleave nothing.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::integration::support::cli::Deployment;
use crate::integration::support::serve::Served;
use prompt_host::session::route::{RouteName, RouteSpec};
use prompt_host::session::{
    AppendError, AssistantReply, Message, MessageData, NewEvent, Session, SurfaceIntent, ToolCall,
    ToolResult, ASSISTANT_MESSAGE, SYSTEM_MESSAGE, USER_MESSAGE,
};
use prompt_host::{Facts, Host, HostError, PromptConfig, RuntimeConfig, StepOptions};

fn host() -> Host {
    let prompt = PromptConfig::default()
        .include_harness_identity(false)
        .persona("You help on {{model}}.");
    Host::new(prompt, RuntimeConfig::default()).unwrap()
}

/// Every request one conversation produced, each step's replay, and the final replays of
/// every step: a conversation of each route, with tool calls, a tool error, a retry and a
/// step whose route changes.
pub(crate) async fn conversation(name: &Path) -> Vec<String> {
    let host = host();
    let (mut log, _) = Session::open(name).unwrap();
    let mut out = Vec::new();
    let facts = || Facts::new().with("model", "m1");
    let mut steps = 0;
    for (turn, route) in RouteName::ALL.iter().enumerate() {
        let spec = RouteSpec::new(*route)
            .model("m1")
            .option("max_tokens", json!(256));
        let options = StepOptions::default()
            .route(spec.clone())
            .user_texts(vec![format!("Question {turn}?")]);
        let (rendered, step) = host.step(&mut log, None, facts(), &options).await.unwrap();
        out.push(serde_json::to_string(&step.request).unwrap());
        steps += 1;
        let id = format!("call-{turn}");
        host.append_assistant(
            &mut log,
            &AssistantReply::default()
                .with_text("Looking.")
                .with_tool_calls(vec![ToolCall::new(&id, "ls", json!({"path": "."}))]),
        )
        .unwrap();
        host.append_tool_result(
            &mut log,
            &ToolResult {
                call_id: id,
                content: "no such directory".into(),
                is_error: turn == 1,
            },
        )
        .unwrap();
        let options = StepOptions::default().route(spec);
        let (_, step) = host.step(&mut log, None, facts(), &options).await.unwrap();
        out.push(serde_json::to_string(&step.request).unwrap());
        let (_, retried) = host
            .retry(&mut log, None, &rendered, facts(), &options)
            .unwrap();
        out.push(serde_json::to_string(&retried.request).unwrap());
        steps += 2;
        host.append_assistant(&mut log, &AssistantReply::text(format!("Answer {turn}.")))
            .unwrap();
    }
    // A cancelled step writes nothing, in every store.
    let before = log.events().len();
    let token = prompt_host::prompt::CancelToken::new();
    token.cancel();
    let never = StepOptions::default().user_texts(vec!["never".into()]);
    let cancelled = host
        .step(&mut log, None, facts().signal(token), &never)
        .await;
    assert!(cancelled.is_err(), "a cancelled step fails");
    assert_eq!(log.events().len(), before, "a cancelled step wrote nothing");
    // A system update in history (another model, the route told to take it there), and a
    // reply to it.
    let moved = StepOptions::default()
        .in_history(true)
        .user_texts(vec!["On another model?".into()]);
    let (_, step) = host
        .step(&mut log, None, Facts::new().with("model", "m2"), &moved)
        .await
        .unwrap();
    out.push(serde_json::to_string(&step.request).unwrap());
    steps += 1;
    host.append_assistant(&mut log, &AssistantReply::text("Moved."))
        .unwrap();
    // A summary replacing everything after the system head (node 0 is rewritten only by a
    // system message), the system node in history among it: the next step projects over
    // the shortened surface, and replay rebuilds every step before and after.
    let end = log
        .events()
        .iter()
        .rfind(|e| e.kind == ASSISTANT_MESSAGE)
        .unwrap()
        .seq;
    let sources: Vec<u64> = log
        .surface()
        .nodes()
        .into_iter()
        .filter(|seq| *seq <= end)
        .skip(1)
        .collect();
    assert!(
        sources
            .iter()
            .any(|seq| log.events()[*seq as usize].kind == SYSTEM_MESSAGE),
        "the summary shadows a system node"
    );
    log.append(NewEvent::message(
        USER_MESSAGE,
        MessageData::new(Message::user_text("Summary: turn 0 listed a directory.")),
        SurfaceIntent::replace(sources[0], end, sources.clone()),
    ))
    .unwrap();
    let after = StepOptions::default().user_texts(vec!["After the summary?".into()]);
    let (_, step) = host.step(&mut log, None, facts(), &after).await.unwrap();
    out.push(serde_json::to_string(&step.request).unwrap());
    steps += 1;
    for step in 0..steps {
        let (_, request) = host.replay(&log, Some(step)).unwrap();
        out.push(serde_json::to_string(&request).unwrap());
    }
    out
}

fn sqlite(dir: &Path, id: &str) -> PathBuf {
    PathBuf::from(format!("sqlite:{}#{id}", dir.join("sessions.db").display()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_gives_the_same_requests_and_replays_in_a_file_and_in_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let in_file = conversation(&dir.path().join("s.jsonl")).await;
    let in_sqlite = conversation(&sqlite(dir.path(), "s")).await;
    assert_eq!(in_file.len(), 11 + 11);
    for (i, (file, db)) in in_file.iter().zip(&in_sqlite).enumerate() {
        assert_eq!(file, db, "request {i}");
    }
    // The SQLite session reopened: every step replays as it was sent.
    let host = host();
    let (log, report) = Session::open(sqlite(dir.path(), "s")).unwrap();
    assert_eq!(report.events, log.events().len());
    for step in 0..11 {
        let (_, request) = host.replay(&log, Some(step)).unwrap();
        assert_eq!(
            serde_json::to_string(&request).unwrap(),
            in_file[11 + step as usize]
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_behind_another_writer_is_told_conflict_and_steps_after_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let name = sqlite(dir.path(), "agent 7");
    let host = host();
    let facts = || Facts::new().with("model", "m1");
    let (mut first, _) = Session::open(&name).unwrap();
    let (mut second, _) = Session::open(&name).unwrap();
    let ask = |q: &str| StepOptions::default().user_texts(vec![q.to_string()]);
    host.step(&mut first, None, facts(), &ask("one"))
        .await
        .unwrap();
    let events = first.events().len() as u64;
    let err = host
        .step(&mut second, None, facts(), &ask("two"))
        .await
        .unwrap_err();
    match &err {
        HostError::Session {
            error: AppendError::Conflict {
                expected, actual, ..
            },
            ..
        } => assert_eq!((*expected, *actual), (0, events)),
        other => panic!("{other}"),
    }
    assert_eq!(
        err.to_string(),
        format!("session {}: another writer appended first (this writer expected seq 0, the session is at seq {events}); nothing was written (open the session again to continue)", name.display())
    );
    let (mut second, _) = Session::open(&name).unwrap();
    let (_, step) = host
        .step(&mut second, None, facts(), &ask("two"))
        .await
        .unwrap();
    assert_eq!(step.step, 1);
    let (reopened, _) = Session::open(&name).unwrap();
    assert_eq!(reopened.events(), second.events());
}

/// Two `serve` processes step one SQLite session in a tight loop, each from its own thread:
/// every answered step is in the store once with its user message, seqs are contiguous, a
/// step's events are never interleaved with another's, and every refusal is a `conflict`
/// naming the session, after which the server goes on from what the other wrote.
#[test]
fn two_serve_processes_racing_on_one_sqlite_session_never_fork_it() {
    race_two_servers(|d| sqlite(d.path("").as_path(), "shared"));
}

/// Two `serve` processes stepping the session `name` names in a tight loop, each from its
/// own thread (see the test above).
pub(crate) fn race_two_servers(name: impl Fn(&Deployment) -> PathBuf) {
    let d = Deployment::new("[prompt]\ninclude_harness_identity = false\npersona = \"Terse.\"\n");
    let name = name(&d);
    let session = name.display().to_string();
    const STEPS: usize = 40;
    let answered: Vec<(Vec<String>, u64)> = std::thread::scope(|scope| {
        let runs: Vec<_> = (0..2)
            .map(|server| {
                let (d, session) = (&d, session.clone());
                scope.spawn(move || {
                    let mut s = Served::start(
                        &["--config", d.config().to_str().unwrap()],
                        &d.path("cache"),
                    );
                    let (mut answered, mut conflicts) = (Vec::new(), 0u64);
                    for i in 0..STEPS {
                        let text = format!("server {server} step {i}");
                        let reply = s.call(
                            "step",
                            json!({"session": session, "user": [text], "facts": {"model": "m"}}),
                        );
                        match reply.get("error") {
                            None => answered.push(text),
                            Some(error) => {
                                assert_eq!(error["data"]["kind"], "conflict", "{error}");
                                assert_eq!(
                                    error["data"]["session"],
                                    Value::String(session.clone())
                                );
                                assert!(
                                    error["data"]["actual"].as_u64()
                                        > error["data"]["expected"].as_u64(),
                                    "{error}"
                                );
                                conflicts += 1;
                            }
                        }
                    }
                    (answered, conflicts)
                })
            })
            .collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    });
    let alone = Host::new(
        PromptConfig::default()
            .include_harness_identity(false)
            .persona("Terse."),
        RuntimeConfig::default(),
    )
    .unwrap();
    check_race(&name, &answered, 2 * STEPS as u64, (&alone, "m"));
}

/// Two hosts in this process, each with its own session handle, stepping the session
/// `name` names from their own threads, as two replicas embedding the library would: a
/// host told `conflict` catches up (`refresh`) and goes on.
pub(crate) fn race_two_hosts(name: &Path) {
    const STEPS: usize = 40;
    let answered: Vec<(Vec<String>, u64)> = std::thread::scope(|scope| {
        let runs: Vec<_> = (0..2)
            .map(|writer| {
                scope.spawn(move || {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .unwrap();
                    let host = host();
                    let (mut log, _) = Session::open(name).unwrap();
                    let (mut answered, mut conflicts) = (Vec::new(), 0u64);
                    for i in 0..STEPS {
                        let text = format!("host {writer} step {i}");
                        let options = StepOptions::default().user_texts(vec![text.clone()]);
                        let facts = Facts::new().with("model", "m1");
                        match runtime.block_on(host.step(&mut log, None, facts, &options)) {
                            Ok(_) => answered.push(text),
                            Err(HostError::Session {
                                error:
                                    AppendError::Conflict {
                                        expected, actual, ..
                                    },
                                ..
                            }) => {
                                assert!(actual > expected);
                                conflicts += 1;
                                log.refresh().unwrap();
                            }
                            Err(other) => panic!("{other}"),
                        }
                    }
                    (answered, conflicts)
                })
            })
            .collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    });
    check_race(name, &answered, 2 * STEPS as u64, (&host(), "m1"));
}

#[test]
fn two_hosts_in_one_process_racing_on_one_sqlite_session_never_fork_it() {
    let dir = tempfile::tempdir().unwrap();
    race_two_hosts(&sqlite(dir.path(), "shared"));
}

/// What two writers racing on `name` must leave: seqs contiguous, no step inside another,
/// every acknowledged step in the store exactly once and no other, and every attempt either
/// acknowledged or answered `conflict`; and every step replays as the accepted steps taken
/// alone, in the store's order, by one writer (`alone`: a host as the writers', and the
/// model fact they gave) replay.
fn check_race(name: &Path, answered: &[(Vec<String>, u64)], attempts: u64, alone: (&Host, &str)) {
    let (log, _) = Session::open(name).unwrap();
    for (i, event) in log.events().iter().enumerate() {
        assert_eq!(event.seq, i as u64);
    }
    // Each step is step/start … step/end with nothing between from another step.
    let kinds: Vec<&str> = log.events().iter().map(|e| e.kind.as_str()).collect();
    let mut open = false;
    for kind in &kinds {
        match *kind {
            prompt_host::session::STEP_START => {
                assert!(!open, "a step began inside another: {kinds:?}");
                open = true;
            }
            prompt_host::session::STEP_END => open = false,
            _ => {}
        }
    }
    let lines: Vec<String> = log
        .events()
        .iter()
        .map(|e| String::from_utf8(e.to_line().unwrap()).unwrap())
        .collect();
    let mut total = 0;
    for (texts, _) in answered {
        for text in texts {
            let quoted = serde_json::to_string(text).unwrap();
            let found = lines.iter().filter(|l| l.contains(&quoted)).count();
            assert_eq!(found, 1, "{text} is in the log {found} times");
            total += 1;
        }
    }
    let steps = kinds
        .iter()
        .filter(|k| **k == prompt_host::session::STEP_START)
        .count();
    assert_eq!(steps, total);
    let conflicts: u64 = answered.iter().map(|(_, c)| c).sum();
    assert_eq!(total as u64 + conflicts, attempts);
    eprintln!("{total} steps answered, {conflicts} conflicts");
    // The accepted steps, in the store's order, taken alone by one writer in a log file.
    let (host, model) = alone;
    let order: Vec<String> = log
        .events()
        .iter()
        .filter(|e| e.kind == USER_MESSAGE)
        .map(|e| {
            let line = String::from_utf8(e.to_line().unwrap()).unwrap();
            answered
                .iter()
                .flat_map(|(texts, _)| texts)
                .find(|t| line.contains(&serde_json::to_string(t).unwrap()))
                .unwrap()
                .clone()
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let (mut solo, _) = Session::open(dir.path().join("alone.jsonl")).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for text in &order {
        let options = StepOptions::default().user_texts(vec![text.clone()]);
        let facts = Facts::new().with("model", model);
        runtime
            .block_on(host.step(&mut solo, None, facts, &options))
            .unwrap();
    }
    for step in 0..order.len() as u64 {
        let (_, raced) = host.replay(&log, Some(step)).unwrap();
        let (_, single) = host.replay(&solo, Some(step)).unwrap();
        assert_eq!(
            serde_json::to_string(&raced).unwrap(),
            serde_json::to_string(&single).unwrap(),
            "step {step} replays as the accepted steps alone"
        );
    }
}

/// Servers that take turns on one session are never behind: each request first catches up
/// with what the other wrote, so turns never conflict and every replay is current.
#[test]
fn serve_processes_taking_turns_catch_up_without_conflicts() {
    let d = Deployment::new("[prompt]\ninclude_harness_identity = false\npersona = \"Terse.\"\n");
    let session = sqlite(d.path("").as_path(), "turns").display().to_string();
    let start = || {
        Served::start(
            &["--config", d.config().to_str().unwrap()],
            &d.path("cache"),
        )
    };
    let mut servers = [start(), start()];
    for round in 0..5u64 {
        for (i, server) in servers.iter_mut().enumerate() {
            let step = server.ok(
                "step",
                json!({"session": session, "user": [format!("round {round} from {i}")], "facts": {"model": "m"}}),
            );
            assert_eq!(step["step"], json!(round * 2 + i as u64));
            server.ok(
                "append_assistant",
                json!({"session": session, "text": "ok"}),
            );
        }
        let replayed = servers[0].ok("request", json!({"session": session}));
        assert_eq!(replayed["step"], json!(round * 2 + 1));
    }
}

/// `retry` re-renders this server's newest step; once another server stepped after it, the
/// session's newest step is that one's, and retrying it would redo another writer's step.
#[test]
fn a_retry_after_another_server_stepped_is_refused_with_nothing_written() {
    let d = Deployment::new("[prompt]\ninclude_harness_identity = false\npersona = \"Terse.\"\n");
    let session = sqlite(d.path("").as_path(), "retry").display().to_string();
    let start = || {
        Served::start(
            &["--config", d.config().to_str().unwrap()],
            &d.path("cache"),
        )
    };
    let (mut a, mut b) = (start(), start());
    let step = json!({"session": session, "user": ["hi"], "facts": {"model": "m"}});
    a.ok("step", step.clone());
    // A retry right after its own step is what retry is for.
    let retried = a.ok(
        "retry",
        json!({"session": session, "facts": {"model": "m2"}}),
    );
    assert_eq!(retried["step"], json!(1));
    b.ok("step", step);
    let (before, _) = Session::read(std::path::Path::new(&session)).unwrap();
    let message = a.err(
        "retry",
        json!({"session": session, "facts": {"model": "m2"}}),
    );
    assert_eq!(
        message,
        format!("session {session}: another writer stepped since this server's step 1 (the session's newest step is 2); nothing to retry: call step")
    );
    let (after, _) = Session::read(std::path::Path::new(&session)).unwrap();
    assert_eq!(before.len(), after.len(), "nothing was written");
    // A step catches up and goes on.
    let next = a.ok(
        "step",
        json!({"session": session, "user": ["again"], "facts": {"model": "m"}}),
    );
    assert_eq!(next["step"], json!(3));
}
