//! The SQLite store: the log's rules on rows, appends conditional on the seq the writer saw,
//! all-or-nothing batches, hostile ids and rows written by someone else.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rusqlite::{params, Connection};

use super::*;

fn temp_db() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sessions.db");
    (dir, db)
}

/// The rows of session `id`, as the database holds them.
fn rows(db: &Path, id: &str) -> Vec<(i64, Vec<u8>)> {
    let conn = Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare("SELECT seq, line FROM events WHERE session = ?1 ORDER BY seq")
        .unwrap();
    stmt.query_map(params![id], |row| Ok((row.get(0)?, row.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn appends_are_rows_that_read_back_as_the_same_session() {
    let (_dir, db) = temp_db();
    let (mut session, report) = Session::open_sqlite(&db, "a").unwrap();
    assert_eq!(report.events, 0);
    assert!(session.is_shared());
    session
        .append(system("You are terse.", SurfaceIntent::append()))
        .unwrap();
    session.append(user("hello")).unwrap();
    session
        .append_all([user("one"), user("two")])
        .expect("a batch");
    assert_eq!(session.durable_writes(), 3);
    let written: Vec<Vec<u8>> = session
        .events()
        .iter()
        .map(|e| e.to_line().unwrap())
        .collect();
    drop(session);

    let stored = rows(&db, "a");
    assert_eq!(
        stored.iter().map(|(seq, _)| *seq).collect::<Vec<_>>(),
        [0, 1, 2, 3]
    );
    assert_eq!(
        stored.into_iter().map(|(_, line)| line).collect::<Vec<_>>(),
        written
    );
    let name = format!("sqlite:{}#a", db.display());
    let (again, report) = Session::open(&name).unwrap();
    assert_eq!(report.events, 4);
    assert_eq!(again.path(), Path::new(&name));
    let reread: Vec<Vec<u8>> = again
        .events()
        .iter()
        .map(|e| e.to_line().unwrap())
        .collect();
    assert_eq!(reread, written);
    assert_eq!(again.surface().len(), 4);
}

#[test]
fn a_writer_that_is_behind_gets_a_conflict_and_writes_nothing() {
    let (_dir, db) = temp_db();
    let (mut first, _) = Session::open_sqlite(&db, "s").unwrap();
    let (mut second, _) = Session::open_sqlite(&db, "s").unwrap();
    first.append(user("first")).unwrap();
    let err = second.append(user("second")).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "session sqlite:{}#s: another writer appended first (this writer expected seq 0, the session is at seq 1); nothing was written (open the session again to continue)",
            db.display()
        )
    );
    assert!(matches!(
        err,
        AppendError::Conflict {
            expected: 0,
            actual: 1,
            ..
        }
    ));
    // A batch conflicts whole, and the loser's memory is as it was.
    assert!(matches!(
        second.append_all([user("a"), user("b")]),
        Err(AppendError::Conflict { .. })
    ));
    assert!(second.events().is_empty());
    assert_eq!(rows(&db, "s").len(), 1);

    // Reloaded, it continues after the other writer's event.
    let (mut second, report) = Session::open_sqlite(&db, "s").unwrap();
    assert_eq!(report.events, 1);
    second.append(user("second")).unwrap();
    assert_eq!(rows(&db, "s").len(), 2);
    assert!(matches!(
        first.append(user("late")),
        Err(AppendError::Conflict {
            expected: 1,
            actual: 2,
            ..
        })
    ));
}

#[test]
fn a_refused_event_or_batch_writes_no_row() {
    let (_dir, db) = temp_db();
    let (mut session, _) = Session::open_sqlite(&db, "s").unwrap();
    session.append(user("kept")).unwrap();
    let bad = with_intent(user("bad"), SurfaceIntent::replace(7, 9, vec![7, 8, 9]));
    assert!(session.append(bad.clone()).is_err());
    assert!(session.append_all([user("fine"), bad]).is_err());
    assert_eq!(rows(&db, "s").len(), 1);
    assert_eq!(session.events().len(), 1);
    session.append(user("next")).unwrap();
    assert_eq!(rows(&db, "s").len(), 2);
}

#[test]
fn hostile_ids_are_stored_and_read_back_exactly_and_sessions_stay_apart() {
    let (_dir, db) = temp_db();
    let ids = [
        "'; DROP TABLE events; --",
        "\"quoted\" and 'single'",
        "a#b#c",
        "ünïcødé 🙂",
        &"x".repeat(MAX_SESSION_ID),
    ];
    for (n, id) in ids.iter().enumerate() {
        let (mut session, _) = Session::open_sqlite(&db, id).unwrap();
        for i in 0..=n {
            session.append(user(&format!("{id} {i}"))).unwrap();
        }
    }
    for (n, id) in ids.iter().enumerate() {
        let (session, report) = Session::open(format!("sqlite:{}#{id}", db.display())).unwrap();
        assert_eq!(report.events, n + 1, "{id}");
        assert_eq!(rows(&db, id).len(), n + 1);
        let text = session.events()[n].to_line().unwrap();
        assert!(
            String::from_utf8(text)
                .unwrap()
                .contains(&serde_json::to_string(&format!("{id} {n}")).unwrap()),
            "{id}"
        );
    }
    for id in ["", "nul\0", "new\nline"] {
        assert!(matches!(
            Session::open_sqlite(&db, id),
            Err(OpenError::Name(NameError::BadId { .. }))
        ));
    }
    assert!(Session::open_sqlite(&db, &"x".repeat(MAX_SESSION_ID + 1)).is_err());
}

#[test]
fn a_row_someone_else_wrote_refuses_its_session_by_seq_and_no_other() {
    let (_dir, db) = temp_db();
    for id in ["good", "bad", "gap"] {
        let (mut session, _) = Session::open_sqlite(&db, id).unwrap();
        session.append(user("hello")).unwrap();
    }
    let conn = Connection::open(&db).unwrap();
    conn.execute(
        "INSERT INTO events (session, seq, line) VALUES ('bad', 1, ?1)",
        params![b"{not json".to_vec()],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO events (session, seq, line) VALUES ('gap', 2, ?1)",
        params![b"{}".to_vec()],
    )
    .unwrap();
    let err = Session::open_sqlite(&db, "bad").unwrap_err().to_string();
    let prefix = format!("session sqlite:{}#bad, seq 1: ", db.display());
    assert!(err.starts_with(&prefix), "{err}");
    assert_eq!(
        Session::open_sqlite(&db, "gap").unwrap_err().to_string(),
        format!(
            "session sqlite:{}#gap: its rows are not contiguous: seq 1 is missing (the next row is seq 2)",
            db.display()
        )
    );
    let (good, _) = Session::open_sqlite(&db, "good").unwrap();
    assert_eq!(good.events().len(), 1);
}

#[test]
fn a_database_of_a_newer_schema_or_not_a_database_is_refused_untouched() {
    let (dir, db) = temp_db();
    {
        let conn = Connection::open(&db).unwrap();
        conn.pragma_update(None, "application_id", 0x5048_7373)
            .unwrap();
        conn.pragma_update(None, "user_version", 2).unwrap();
    }
    assert_eq!(
        Session::open_sqlite(&db, "s").unwrap_err().to_string(),
        format!(
            "session sqlite:{}#s: the database's schema is version 2; this prompt-host reads version 1",
            db.display()
        )
    );
    // Another program's database, and one with nothing but another application's id.
    let theirs = dir.path().join("theirs.db");
    Connection::open(&theirs)
        .unwrap()
        .execute_batch("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('mine');")
        .unwrap();
    let marked = dir.path().join("marked.db");
    Connection::open(&marked)
        .unwrap()
        .pragma_update(None, "application_id", 7)
        .unwrap();
    for other in [&theirs, &marked] {
        let before = fs::read(other).unwrap();
        assert_eq!(
            Session::open_sqlite(other, "s").unwrap_err().to_string(),
            format!("session sqlite:{}#s: the database is not a prompt-host session store (it holds other tables or another application's id); refusing to modify it", other.display())
        );
        assert_eq!(fs::read(other).unwrap(), before);
    }
    let text = dir.path().join("notes.txt");
    fs::write(&text, "a text file, not a database\n".repeat(200)).unwrap();
    let before = fs::read(&text).unwrap();
    let err = Session::open_sqlite(&text, "s").unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "session sqlite:{}#s: file is not a database",
            text.display()
        )
    );
    assert_eq!(fs::read(&text).unwrap(), before);
    // Reading a session never creates its database.
    let missing = dir.path().join("missing.db");
    assert_eq!(
        Session::read(format!("sqlite:{}#s", missing.display()))
            .unwrap_err()
            .to_string(),
        format!(
            "session sqlite:{}#s: the database does not exist",
            missing.display()
        )
    );
    assert!(!missing.exists());
}

#[test]
fn a_session_imported_from_a_log_file_has_the_same_lines_and_a_copy_back_too() {
    let (dir, db) = temp_db();
    let file = dir.path().join("s.jsonl");
    let (mut log, _) = Session::open(&file).unwrap();
    log.append(system("You are terse.", SurfaceIntent::append()))
        .unwrap();
    log.append(user("hello")).unwrap();
    log.append(with_intent(
        user("summary"),
        SurfaceIntent::replace(1, 1, vec![1]),
    ))
    .unwrap();
    drop(log);
    let (events, report) = Session::read(&file).unwrap();
    assert_eq!(report.events, 3);
    let (mut stored, _) = Session::open_sqlite(&db, "copy").unwrap();
    assert_eq!(stored.import_events(events.clone()).unwrap(), 0..3);
    // Importing again does not continue the session: refused, nothing written.
    let err = stored.import_events(events.clone()).unwrap_err();
    assert_eq!(
        err.event_error().unwrap().to_string(),
        "session event seq 0 is not contiguous; expected 3"
    );
    let back = dir.path().join("back.jsonl");
    let (copied, _) = Session::read(format!("sqlite:{}#copy", db.display())).unwrap();
    let (mut log, _) = Session::open(&back).unwrap();
    log.import_events(copied).unwrap();
    drop(log);
    assert_eq!(fs::read(&back).unwrap(), fs::read(&file).unwrap());
}

/// Writers on their own connections append to one session in a tight loop, each reloading
/// after a conflict: every acknowledged append is in the store once, seqs are contiguous, and
/// every event is one a writer was told was written.
#[test]
fn writers_racing_on_one_session_lose_nothing_and_duplicate_nothing() {
    let (_dir, db) = temp_db();
    let db = Arc::new(db);
    let conflicts = Arc::new(AtomicU64::new(0));
    const WRITERS: usize = 4;
    const APPENDS: usize = 25;
    let handles: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (db, conflicts) = (Arc::clone(&db), Arc::clone(&conflicts));
            std::thread::spawn(move || {
                let mut acknowledged = Vec::new();
                let (mut session, _) = Session::open_sqlite(&*db, "shared").unwrap();
                while acknowledged.len() < APPENDS {
                    let text = format!("writer {w} append {}", acknowledged.len());
                    match session.append(user(&text)) {
                        Ok(event) => acknowledged.push((event.seq, text)),
                        Err(AppendError::Conflict { .. }) => {
                            conflicts.fetch_add(1, Ordering::Relaxed);
                            session = Session::open_sqlite(&*db, "shared").unwrap().0;
                        }
                        Err(other) => panic!("{other}"),
                    }
                }
                acknowledged
            })
        })
        .collect();
    let mut acknowledged: Vec<(u64, String)> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    acknowledged.sort();
    let (session, _) = Session::open_sqlite(&*db, "shared").unwrap();
    assert_eq!(session.events().len(), WRITERS * APPENDS);
    let stored: Vec<(u64, String)> = session
        .events()
        .iter()
        .map(|e| {
            let line = String::from_utf8(e.to_line().unwrap()).unwrap();
            let text = acknowledged
                .iter()
                .find(|(seq, _)| *seq == e.seq)
                .map(|(_, t)| t.clone())
                .unwrap_or_default();
            assert!(line.contains(&text), "seq {} holds {line}", e.seq);
            (e.seq, text)
        })
        .collect();
    assert_eq!(stored, acknowledged);
    assert_eq!(
        acknowledged.iter().map(|(s, _)| *s).collect::<Vec<_>>(),
        (0..(WRITERS * APPENDS) as u64).collect::<Vec<_>>()
    );
    eprintln!(
        "{} conflicts for {} appends",
        conflicts.load(Ordering::Relaxed),
        WRITERS * APPENDS
    );
}

#[cfg(unix)]
#[test]
fn a_fifo_or_a_symbolic_link_at_the_database_path_is_refused_without_blocking() {
    let (dir, _) = temp_db();
    let fifo = dir.path().join("fifo.db");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: `c` is a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let err = Session::open_sqlite(&fifo, "s").unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "session sqlite:{0}#s: {0} is a FIFO, not a regular file",
            fifo.display()
        )
    );
    assert!(Session::read(format!("sqlite:{}#s", fifo.display())).is_err());

    // A link to a real store: refused, and the store is untouched.
    let real = dir.path().join("real.db");
    Session::open_sqlite(&real, "s")
        .unwrap()
        .0
        .append(user("hi"))
        .unwrap();
    let link = dir.path().join("link.db");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let err = Session::open_sqlite(&link, "s").unwrap_err().to_string();
    assert!(
        err.starts_with(&format!("session sqlite:{}#s: ", link.display())),
        "{err}"
    );
    assert_eq!(rows(&real, "s").len(), 1);
}

/// The database path swapped, in a tight loop, between the store, a FIFO and a symbolic
/// link while sessions are read from it: every read ends (opened, or refused), none blocks.
#[cfg(unix)]
#[test]
fn a_database_path_swapped_with_a_fifo_or_a_link_never_blocks_a_reader() {
    use std::sync::atomic::AtomicBool;
    use std::time::Duration;

    let (dir, db) = temp_db();
    {
        let (mut s, _) = Session::open_sqlite(&db, "s").unwrap();
        s.append(user("hi")).unwrap();
    }
    let aside = dir.path().join("aside.db");
    let fifo = dir.path().join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: `c` is a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&aside, &link).unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (stop, db, aside, fifo, link) = (stop.clone(), db.clone(), aside, fifo, link);
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                std::fs::rename(&db, &aside).unwrap();
                std::fs::rename(&fifo, &db).unwrap();
                std::fs::rename(&db, &fifo).unwrap();
                std::fs::rename(&link, &db).unwrap();
                std::fs::rename(&db, &link).unwrap();
                std::fs::rename(&aside, &db).unwrap();
            }
        })
    };
    let name = format!("sqlite:{}#s", db.display());
    let (mut opened, mut refused) = (0, 0);
    for _ in 0..2000 {
        let (tx, rx) = std::sync::mpsc::channel();
        let name = name.clone();
        std::thread::spawn(move || {
            let _ = tx.send(Session::read(name).map(|r| r.0.len()));
        });
        match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(Ok(n)) => {
                assert_eq!(n, 1);
                opened += 1;
            }
            Ok(Err(_)) => refused += 1,
            Err(_) => panic!("a read blocked for 30 s ({opened} opened, {refused} refused)"),
        }
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    eprintln!("{opened} opened, {refused} refused");
    assert_eq!(rows(&db, "s").len(), 1, "the store is as it was");
}

/// SQLite opens files beside the database by name (`-wal`, `-shm`, `-journal`): a FIFO
/// put at any of them makes the open fail at once, naming the session, and blocks nothing.
#[cfg(unix)]
#[test]
fn a_fifo_beside_the_database_is_refused_without_blocking() {
    use std::time::Duration;

    for suffix in ["-wal", "-shm", "-journal"] {
        let (dir, db) = temp_db();
        Session::open_sqlite(&db, "s")
            .unwrap()
            .0
            .append(user("hi"))
            .unwrap();
        let beside = dir.path().join(format!("sessions.db{suffix}"));
        let _ = std::fs::remove_file(&beside);
        let c = std::ffi::CString::new(beside.to_str().unwrap()).unwrap();
        // SAFETY: `c` is a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let (tx, rx) = std::sync::mpsc::channel();
        let name = format!("sqlite:{}#s", db.display());
        let read_name = name.clone();
        std::thread::spawn(move || {
            let read = Session::read(read_name).map(|r| r.0.len());
            let opened = Session::open_sqlite(&db, "s").map(|_| ());
            let _ = tx.send((read, opened));
        });
        let (read, opened) = rx
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("an open blocked on a FIFO at {suffix}"));
        // Whether SQLite would have read it or waited on it, the open is refused.
        let expected = format!("session {name}: unable to open database file");
        assert_eq!(read.unwrap_err().to_string(), expected, "{suffix}");
        assert_eq!(opened.unwrap_err().to_string(), expected, "{suffix}");
        drop(dir);
    }
}
