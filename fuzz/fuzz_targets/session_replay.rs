//! Session-log replay: any file content either opens (a torn tail cut off, an unterminated
//! event or header completed) or is refused — with a line-numbered error, as not a session
//! log, or as another format version — and left untouched; never a panic. What opens replays
//! to the same state a second time with nothing left to repair, and a log that opened still
//! accepts an append.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use prompt_host::session::{Message, MessageData, NewEvent, OpenError, Session, SurfaceIntent};

fn path() -> &'static PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        // /dev/shm when present: the log's fsyncs stay cheap.
        let shm = PathBuf::from("/dev/shm");
        let dir = if shm.is_dir() {
            shm
        } else {
            std::env::temp_dir()
        };
        dir.join(format!(
            "prompt-host-fuzz-session-{}.jsonl",
            std::process::id()
        ))
    })
}

fuzz_target!(|data: &[u8]| {
    let path = path();
    std::fs::write(path, data).expect("write the log");
    match Session::open(path) {
        Ok((session, report)) => {
            let events = session.events().to_vec();
            let surface = session.surface().clone();
            drop(session);
            let (mut again, second) = Session::open(path).expect("a log that opened reopens");
            assert_eq!(second.events, report.events);
            assert_eq!(second.recovered_torn_bytes, 0);
            assert!(!second.completed_last_event);
            assert_eq!(second.completed_header_bytes, 0);
            assert_eq!(second.legacy, report.legacy);
            assert_eq!(again.events(), events.as_slice());
            assert_eq!(again.surface(), &surface);
            let user = NewEvent::message(
                prompt_host::session::USER_MESSAGE,
                MessageData::new(Message::user_text("after replay")),
                SurfaceIntent::append(),
            );
            // A valid append may still be refused by the surface rules (e.g. a log whose
            // surface forbids it), but never with an I/O error.
            if let Err(e) = again.append(user) {
                assert!(e.event_error().is_some(), "{e}");
            }
        }
        Err(e) => {
            match e {
                OpenError::Line { line, .. } => assert!(line >= 1),
                OpenError::NotALog { .. }
                | OpenError::UnsupportedVersion { .. }
                | OpenError::InvalidHeader { .. } => {}
                e => panic!("unexpected open error: {e}"),
            }
            // A refused file is left as it was.
            assert_eq!(std::fs::read(path).expect("read the log"), data);
        }
    }
});
