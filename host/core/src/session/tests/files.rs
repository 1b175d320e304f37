//! What opening does with each shape of file: the format header, a legacy headerless log, a
//! header cut short, an unterminated last line (cut when torn, kept when complete), files
//! that are not session logs and paths that are not regular files. Every refusal leaves the
//! file byte for byte as it was.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use super::{temp_log, user, valid_lines};
use crate::fsutil::FileKind;
use crate::session::{NewEvent, OpenError, OpenReport, Session, FORMAT_VERSION, HEADER};

/// Open `path` on another thread so that an open that blocks fails the test instead of
/// hanging it.
fn open_within(path: &Path, limit: Duration) -> Result<(Session, OpenReport), OpenError> {
    let (tx, rx) = mpsc::channel();
    let owned = path.to_path_buf();
    std::thread::spawn(move || {
        let _ = tx.send(Session::open(owned));
    });
    rx.recv_timeout(limit)
        .unwrap_or_else(|_| panic!("opening {} blocked", path.display()))
}

/// Open `path`, expect a refusal whose text is `text`, and check the file is unchanged.
fn refused_untouched(path: &Path, text: &str) -> OpenError {
    let before = fs::read(path).unwrap();
    let err = open_within(path, Duration::from_secs(10)).unwrap_err();
    assert_eq!(err.to_string(), text);
    assert_eq!(
        fs::read(path).unwrap(),
        before,
        "{} was modified",
        path.display()
    );
    err
}

fn not_a_log(path: &Path) -> String {
    format!(
        "{} is not a prompt-host session log (its first line is neither the session-log header \
         nor a session event); refusing to modify it",
        path.display()
    )
}

fn header_line() -> String {
    format!("{HEADER}\n")
}

#[test]
fn a_new_log_starts_with_the_header_and_events_still_start_at_seq_0() {
    let (_dir, path) = temp_log();
    let (mut session, report) = Session::open(&path).unwrap();
    assert_eq!(report, OpenReport::default());
    // Opening creates nothing: the file comes with its first event.
    assert!(!path.exists());
    assert_eq!(HEADER, r#"{"prompt-host":"session-log","version":1}"#);
    assert_eq!(FORMAT_VERSION, 1);
    assert_eq!(session.append(user("a")).unwrap().seq, 0);
    drop(session);
    let text = fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], HEADER);
    assert!(lines[1].starts_with(r#"{"type":"user/message","seq":0,"#));
    let (session, report) = Session::open(&path).unwrap();
    assert_eq!(report.events, 1);
    assert!(!report.legacy);
    assert_eq!(session.events()[0].seq, 0);
}

#[test]
fn a_new_log_that_nothing_was_appended_to_is_left_as_it_was() {
    let (dir, path) = temp_log();
    let (session, _) = Session::open(&path).unwrap();
    drop(session);
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    fs::write(&path, b"").unwrap();
    let (session, _) = Session::open(&path).unwrap();
    drop(session);
    assert_eq!(fs::read(&path).unwrap(), b"");
    // A refused append writes nothing either.
    let (mut session, _) = Session::open(dir.path().join("other.jsonl")).unwrap();
    let refused = NewEvent::log("vendor/x", serde_json::json!({}));
    assert!(session.append(refused).is_err());
    drop(session);
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn a_missing_log_in_a_missing_directory_is_refused_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nowhere").join("s.jsonl");
    let err = Session::open(&path).unwrap_err();
    assert!(
        matches!(&err, OpenError::Io { error: source, .. } if source.kind() == std::io::ErrorKind::NotFound),
        "{err}"
    );
}

#[test]
fn a_file_another_process_created_after_open_is_not_appended_to() {
    let (dir, path) = temp_log();
    let (mut session, _) = Session::open(&path).unwrap();
    fs::write(&path, b"someone else's notes\n").unwrap();
    let err = session.append(user("a")).unwrap_err();
    assert!(
        matches!(err, crate::session::AppendError::CreatedMeanwhile { .. }),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        format!(
            "session log {}: another process created the log after this session opened it; \
             nothing was written (open the log again)",
            path.display()
        )
    );
    assert_eq!(fs::read(&path).unwrap(), b"someone else's notes\n");
    // The same when the other process holds the new file (locked), even empty.
    let other = dir.path().join("held.jsonl");
    let (mut late, _) = Session::open(&other).unwrap();
    let (mut first, _) = Session::open(&other).unwrap();
    assert_eq!(first.append(user("first")).unwrap().seq, 0);
    let err = late.append(user("late")).unwrap_err();
    assert!(
        matches!(err, crate::session::AppendError::CreatedMeanwhile { .. }),
        "{err}"
    );
    drop(first);
    assert_eq!(fs::read_to_string(&other).unwrap().lines().count(), 2);
    // An empty file that appeared meanwhile is a new log, as at open.
    let empty = dir.path().join("empty.jsonl");
    let (mut session, _) = Session::open(&empty).unwrap();
    fs::write(&empty, b"").unwrap();
    assert_eq!(session.append(user("a")).unwrap().seq, 0);
    drop(session);
    assert!(fs::read_to_string(&empty)
        .unwrap()
        .starts_with(&header_line()));
}

#[test]
fn an_empty_existing_file_becomes_a_new_log() {
    let (_dir, path) = temp_log();
    fs::write(&path, b"").unwrap();
    let (mut session, report) = Session::open(&path).unwrap();
    assert_eq!(report, OpenReport::default());
    assert_eq!(fs::read(&path).unwrap(), b"");
    session.append(user("a")).unwrap();
    drop(session);
    let text = fs::read_to_string(&path).unwrap();
    assert!(text.starts_with(&header_line()), "{text}");
    assert_eq!(text.lines().count(), 2);
}

#[test]
fn a_torn_fragment_after_the_header_is_cut_and_reported() {
    let (_dir, path) = temp_log();
    let lines = valid_lines(&path, 2);
    let good = lines.join("\n") + "\n";
    let fragment = r#"{"type":"user/message","seq":2,"ti"#;
    fs::write(&path, format!("{good}{fragment}")).unwrap();
    let (mut session, report) = Session::open(&path).unwrap();
    assert_eq!(report.recovered_torn_bytes, fragment.len());
    assert_eq!(report.events, 2);
    assert!(!report.completed_last_event);
    assert_eq!(fs::read_to_string(&path).unwrap(), good);
    assert_eq!(
        report.notices(&path),
        [format!(
            "session log {}: recovered from a torn last line ({} bytes cut off)",
            path.display(),
            fragment.len()
        )]
    );
    assert_eq!(session.append(user("next")).unwrap().seq, 2);
    // Any bytes that are not complete JSON are a torn append, whatever they are.
    drop(session);
    let good = fs::read_to_string(&path).unwrap();
    fs::write(&path, format!("{good}my notes")).unwrap();
    let (_, report) = Session::open(&path).unwrap();
    assert_eq!((report.events, report.recovered_torn_bytes), (3, 8));
    assert_eq!(fs::read_to_string(&path).unwrap(), good);
}

#[test]
fn a_complete_event_without_its_newline_is_kept_and_the_newline_added() {
    let (_dir, path) = temp_log();
    let lines = valid_lines(&path, 3);
    let unterminated = lines.join("\n");
    fs::write(&path, &unterminated).unwrap();
    let (mut session, report) = Session::open(&path).unwrap();
    assert_eq!(report.events, 3);
    assert_eq!(report.recovered_torn_bytes, 0);
    assert!(report.completed_last_event);
    assert_eq!(
        report.notices(&path),
        [format!(
            "session log {}: the last event (seq 2) lacked its final newline; kept it and added \
             the newline",
            path.display()
        )]
    );
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        unterminated.clone() + "\n"
    );
    assert_eq!(session.append(user("next")).unwrap().seq, 3);
    drop(session);
    let (session, report) = Session::open(&path).unwrap();
    assert_eq!(
        report,
        OpenReport {
            events: 4,
            ..OpenReport::default()
        }
    );
    assert_eq!(
        session.event(2).unwrap().message().unwrap().simple_text(),
        Some("m2")
    );
}

#[test]
fn an_unterminated_complete_line_that_is_not_the_next_event_is_refused_untouched() {
    let (_dir, path) = temp_log();
    let lines = valid_lines(&path, 2);
    let good = lines.join("\n") + "\n";
    // Complete JSON is never a torn append: it is an edit, and an edit is not cut.
    for (tail, reason) in [
        (
            lines[1].clone(),
            "session event seq 0 is not contiguous; expected 2",
        ),
        (
            r#"{"a":1}"#.to_string(),
            "malformed session event: \"type\" must be a string",
        ),
    ] {
        fs::write(&path, format!("{good}{tail}")).unwrap();
        refused_untouched(
            &path,
            &format!("session log {}, line 4: {reason}", path.display()),
        );
    }
}

#[test]
fn files_that_are_not_session_logs_are_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, &[u8]); 9] = [
        ("notes.txt", b"my notes"),
        ("notes-nl.txt", b"my notes\nmore notes\n"),
        ("config.json", b"{\"a\": 1}\n"),
        ("array.json", b"[1,2,3]"),
        (
            "other-tool.jsonl",
            b"{\"prompt-host\":\"something-else\",\"version\":1}\n",
        ),
        ("binary", b"\x7fELF\x02\x01\x01\x00\x00\x00"),
        ("zeros", &[0u8; 64]),
        (
            "blank-first-line",
            b"\n{\"type\":\"user/message\",\"seq\":0}\n",
        ),
        (
            "bom",
            b"\xef\xbb\xbf{\"prompt-host\":\"session-log\",\"version\":1}\n",
        ),
    ];
    for (name, bytes) in cases {
        let path = dir.path().join(name);
        fs::write(&path, bytes).unwrap();
        let err = refused_untouched(&path, &not_a_log(&path));
        assert!(matches!(err, OpenError::NotALog { .. }), "{name}");
    }
}

#[test]
fn a_future_format_version_is_refused_untouched() {
    let (_dir, path) = temp_log();
    let lines = valid_lines(&path, 2);
    let expected = format!(
        "session log {} is format version 2; this prompt-host reads version 1",
        path.display()
    );
    let v2 = r#"{"prompt-host":"session-log","version":2}"#;
    let with_events = format!("{v2}\n{}\n{}\n", lines[1], lines[2]);
    for content in [with_events.as_str(), v2, &format!("{v2}\n")] {
        fs::write(&path, content).unwrap();
        let err = refused_untouched(&path, &expected);
        assert!(
            matches!(err, OpenError::UnsupportedVersion { version: 2, .. }),
            "{err}"
        );
    }
    // A header that is ours but names no valid version.
    for bad in [
        r#"{"prompt-host":"session-log"}"#,
        r#"{"prompt-host":"session-log","version":0}"#,
        r#"{"prompt-host":"session-log","version":"1"}"#,
        r#"{"prompt-host":"session-log","version":1.5}"#,
    ] {
        fs::write(&path, format!("{bad}\n")).unwrap();
        refused_untouched(
            &path,
            &format!(
                "session log {}, line 1: invalid session-log header: \"version\" must be a \
                 positive integer",
                path.display()
            ),
        );
    }
}

/// The lines of a headerless log, as releases before the format header wrote it.
fn legacy_log(path: &Path, n: usize) -> String {
    let lines = valid_lines(path, n);
    assert_eq!(lines[0], HEADER);
    lines[1..].join("\n") + "\n"
}

#[test]
fn a_legacy_headerless_log_is_accepted_and_never_rewritten() {
    let (_dir, path) = temp_log();
    let legacy = legacy_log(&path, 3);
    fs::write(&path, &legacy).unwrap();
    let (mut session, report) = Session::open(&path).unwrap();
    assert_eq!(
        report,
        OpenReport {
            events: 3,
            legacy: true,
            ..OpenReport::default()
        }
    );
    assert!(report.notices(&path).is_empty());
    assert_eq!(fs::read_to_string(&path).unwrap(), legacy);
    assert_eq!(session.append(user("new")).unwrap().seq, 3);
    drop(session);
    let text = fs::read_to_string(&path).unwrap();
    assert!(text.starts_with(&legacy), "the old lines were rewritten");
    assert!(!text.contains("prompt-host"), "a header was added: {text}");
    assert_eq!(text.lines().count(), 4);
    let (_, report) = Session::open(&path).unwrap();
    assert_eq!((report.events, report.legacy), (4, true));

    // The recovery rules are the same for it.
    let (_dir2, path) = temp_log();
    let legacy = legacy_log(&path, 2);
    fs::write(&path, format!("{legacy}{{\"type\":\"us")).unwrap();
    let (_, report) = Session::open(&path).unwrap();
    assert_eq!((report.events, report.recovered_torn_bytes), (2, 11));
    assert_eq!(fs::read_to_string(&path).unwrap(), legacy);
    let unterminated = legacy.trim_end_matches('\n');
    fs::write(&path, unterminated).unwrap();
    let (_, report) = Session::open(&path).unwrap();
    assert!(report.completed_last_event && report.legacy);
    assert_eq!(fs::read_to_string(&path).unwrap(), legacy);
    // A single legacy event without its newline is the whole file: still recognised.
    let first = legacy.lines().next().unwrap();
    fs::write(&path, first).unwrap();
    let (_, report) = Session::open(&path).unwrap();
    assert_eq!(
        (report.events, report.completed_last_event, report.legacy),
        (1, true, true)
    );
    assert_eq!(fs::read_to_string(&path).unwrap(), format!("{first}\n"));
}

#[test]
fn a_legacy_log_with_an_invalid_first_event_names_line_1_and_is_untouched() {
    let (_dir, path) = temp_log();
    let legacy = legacy_log(&path, 2);
    let shifted = legacy.lines().nth(1).unwrap().to_string() + "\n";
    fs::write(&path, &shifted).unwrap();
    refused_untouched(
        &path,
        &format!(
            "session log {}, line 1: session event seq 1 is not contiguous; expected 0",
            path.display()
        ),
    );
}

#[test]
fn a_header_cut_short_at_creation_is_completed() {
    let header = header_line();
    for cut in 1..header.len() {
        let (_dir, path) = temp_log();
        fs::write(&path, &header[..cut]).unwrap();
        let (mut session, report) = Session::open(&path).unwrap();
        assert_eq!(
            report,
            OpenReport {
                completed_header_bytes: header.len() - cut,
                ..OpenReport::default()
            },
            "cut at {cut}"
        );
        assert_eq!(fs::read_to_string(&path).unwrap(), header, "cut at {cut}");
        session.append(user("a")).unwrap();
        if cut == header.len() - 1 {
            assert_eq!(
                report.notices(&path),
                [format!(
                    "session log {}: completed a header line cut short when the log was \
                     created (1 byte added)",
                    path.display()
                )]
            );
        }
    }
    // A version-1 header written differently, complete but unterminated, gets its newline.
    let (_dir, path) = temp_log();
    let spaced = r#"{ "version": 1, "prompt-host": "session-log" }"#;
    fs::write(&path, spaced).unwrap();
    let (_, report) = Session::open(&path).unwrap();
    assert_eq!(report.completed_header_bytes, 1);
    assert_eq!(fs::read_to_string(&path).unwrap(), format!("{spaced}\n"));
}

#[test]
fn a_header_followed_by_only_a_torn_first_event_keeps_the_header() {
    let (_dir, path) = temp_log();
    fs::write(&path, header_line() + r#"{"type":"user/mes"#).unwrap();
    let (_, report) = Session::open(&path).unwrap();
    assert_eq!((report.events, report.recovered_torn_bytes), (0, 17));
    assert_eq!(fs::read_to_string(&path).unwrap(), header_line());
}

#[cfg(unix)]
fn mkfifo(path: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: `c` is a valid NUL-terminated path for the duration of the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

#[cfg(unix)]
#[test]
fn fifos_devices_and_directories_are_refused_without_blocking_or_reading() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    let sub = dir.path().join("dir");
    fs::create_dir(&sub).unwrap();
    let cases: Vec<(PathBuf, FileKind, &str)> = vec![
        (fifo.clone(), FileKind::Fifo, "a FIFO"),
        (
            "/dev/zero".into(),
            FileKind::CharDevice,
            "a character device",
        ),
        (
            "/dev/full".into(),
            FileKind::CharDevice,
            "a character device",
        ),
        (
            "/dev/null".into(),
            FileKind::CharDevice,
            "a character device",
        ),
        (sub.clone(), FileKind::Directory, "a directory"),
    ];
    for (path, kind, text) in cases {
        if !path.exists() {
            eprintln!("SKIPPED: {} does not exist here", path.display());
            continue;
        }
        let err = open_within(&path, Duration::from_secs(10)).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "session log {} is {text}, not a regular file",
                path.display()
            )
        );
        assert!(
            matches!(&err, OpenError::NotRegular { kind: k, .. } if *k == kind),
            "{err}"
        );
    }
    // Still a FIFO, still empty, the directory still empty.
    use std::os::unix::fs::FileTypeExt;
    assert!(fs::metadata(&fifo).unwrap().file_type().is_fifo());
    assert_eq!(fs::read_dir(&sub).unwrap().count(), 0);
    // A symlink to a regular file is a regular file.
    let (_dir2, real) = temp_log();
    let link = dir.path().join("link.jsonl");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let (mut session, _) = Session::open(&link).unwrap();
    session.append(user("via the link")).unwrap();
    drop(session);
    assert_eq!(fs::read_to_string(&real).unwrap().lines().count(), 2);
}
