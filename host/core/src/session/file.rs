//! The log file: regular files only, an exclusive advisory lock, whole-line durable appends,
//! torn-tail truncation.
//!
//! Durability contract: an append counts only after its line and newline went out in one
//! `write_all` and `sync_data` returned. A crash before that leaves at most a fragment without
//! a trailing newline, which the next open cuts off (or, when the fragment is a whole event
//! that only lacks its newline, completes). Complete lines are never rewritten.
//!
//! A log that does not exist yet is not created by opening it: the first append creates it,
//! so a step that is cancelled or fails before writing leaves no file behind. Until then
//! nothing is locked; the first append locks the file it creates, and refuses to write when
//! another program created a file at the path meanwhile (its content is not ours to extend).

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::error::OpenError;
use crate::fsutil;

/// An open, locked log file positioned for appends, or the path of one to create.
#[derive(Debug)]
pub(crate) struct LogFile {
    /// `None` until a log that did not exist is created by the first append.
    file: Option<File>,
    path: PathBuf,
    len: u64,
}

/// Why the first append could not create the log.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CreateError {
    /// Another process created a file at the path after the log was opened, and holds it or
    /// wrote to it: it is not ours to extend.
    #[error("another process created the file meanwhile")]
    Taken,
    /// Creating, locking or sizing it failed.
    #[error(transparent)]
    Io(#[from] io::Error),
}

impl LogFile {
    /// Open and lock `path`, and read its whole content. Anything but a regular file is
    /// refused before a byte is read or written. A missing file is not created (the first
    /// [`LogFile::append`] does that): its directory only has to exist.
    pub(crate) fn open(path: &Path) -> Result<(Self, Vec<u8>), OpenError> {
        let io_err = |source| OpenError::Io {
            path: path.to_path_buf(),
            error: source,
        };
        // O_APPEND: every write lands at the end even if the offset was disturbed.
        let (mut file, _) =
            match fsutil::open_regular(path, OpenOptions::new().read(true).append(true)) {
                Ok(opened) => opened,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    // A mistyped directory is reported now, not after a step's assembly.
                    check_parent_dir(path).map_err(io_err)?;
                    let missing = Self {
                        file: None,
                        path: path.to_path_buf(),
                        len: 0,
                    };
                    return Ok((missing, Vec::new()));
                }
                Err(e) => return Err(open_error(path, e)),
            };
        lock_exclusive_briefly_waiting(&file).map_err(|e| {
            if e.kind() == io::ErrorKind::WouldBlock {
                OpenError::Locked {
                    path: path.to_path_buf(),
                }
            } else {
                io_err(e)
            }
        })?;
        // The size once the lock is held: a previous holder may have appended until then.
        let len = file.metadata().map_err(io_err)?.len();
        let bytes = fsutil::read_exact_size(&mut file, len).map_err(io_err)?;
        Ok((
            Self {
                file: Some(file),
                path: path.to_path_buf(),
                len,
            },
            bytes,
        ))
    }

    /// Create and lock the log that did not exist at open. An empty file that appeared
    /// meanwhile (or that a dangling symbolic link now points to) is a new log, as at open;
    /// anything else is refused untouched.
    pub(crate) fn create(&mut self) -> Result<(), CreateError> {
        if self.file.is_some() {
            return Ok(());
        }
        let (file, _) = fsutil::open_regular(
            &self.path,
            OpenOptions::new().read(true).append(true).create(true),
        )?;
        lock_exclusive_briefly_waiting(&file).map_err(|e| {
            if e.kind() == io::ErrorKind::WouldBlock {
                CreateError::Taken
            } else {
                CreateError::Io(e)
            }
        })?;
        if file.metadata()?.len() != 0 {
            return Err(CreateError::Taken);
        }
        self.file = Some(file);
        self.len = 0;
        Ok(())
    }

    /// Cut the file back to `len` bytes (a torn tail) and make that durable.
    pub(crate) fn truncate(&mut self, len: u64) -> io::Result<()> {
        let file = self.file.as_mut().ok_or_else(not_created)?;
        file.set_len(len)?;
        file.sync_data()?;
        self.len = len;
        Ok(())
    }

    /// Append `bytes` durably to the file ([`LogFile::create`] made it exist). On failure
    /// the partial write is rolled back; `Err((error, rolled_back))` says whether that
    /// rollback succeeded.
    pub(crate) fn append(&mut self, bytes: &[u8]) -> Result<(), (io::Error, bool)> {
        let before = self.len;
        let Some(file) = self.file.as_mut() else {
            return Err((not_created(), true));
        };
        let result = file.write_all(bytes).and_then(|()| file.sync_data());
        match result {
            Ok(()) => {
                self.len = before + bytes.len() as u64;
                Ok(())
            }
            Err(e) => {
                let rolled_back = file.set_len(before).and_then(|()| file.sync_data()).is_ok();
                Err((e, rolled_back))
            }
        }
    }

    /// Make the file's directory entry durable (after creating the log).
    pub(crate) fn sync_parent_dir(&self) -> io::Result<()> {
        sync_parent_dir(&self.path)
    }
}

/// The error of an operation on a log that was not created yet (a caller's bug: appends
/// create it first).
fn not_created() -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, "the log file was not created yet")
}

fn open_error(path: &Path, e: io::Error) -> OpenError {
    match fsutil::not_regular(&e) {
        Some(not_regular) => OpenError::NotRegular {
            path: path.to_path_buf(),
            kind: not_regular.kind,
        },
        None => OpenError::Io {
            path: path.to_path_buf(),
            error: e,
        },
    }
}

/// `Ok` when the directory a new log would be created in exists and this process may create
/// files in it; else the error creating the file would give (no such directory, permission
/// denied, a read-only filesystem), so that it is reported at open and not after a step's
/// assembly.
fn check_parent_dir(path: &Path) -> io::Result<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !std::fs::metadata(parent)?.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::NotADirectory,
            format!("{} is not a directory", parent.display()),
        ));
    }
    writable_dir(parent)
}

#[cfg(unix)]
fn writable_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    // SAFETY: `c` is a valid NUL-terminated path for the duration of the call; `access`
    // only reads it.
    if unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(not(unix))]
fn writable_dir(_dir: &Path) -> io::Result<()> {
    Ok(())
}

/// How often, and how far apart, a refused lock is tried again before the log counts as
/// held: a child forked by another thread holds a copy of every descriptor, and with it the
/// lock, until it calls exec — an instant, not a writer.
const LOCK_RETRIES: u32 = 10;
const LOCK_RETRY_PAUSE: std::time::Duration = std::time::Duration::from_millis(5);

fn lock_exclusive_briefly_waiting(file: &File) -> io::Result<()> {
    let mut tries = 0;
    loop {
        match lock_exclusive(file) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock && tries < LOCK_RETRIES => {
                tries += 1;
                std::thread::sleep(LOCK_RETRY_PAUSE);
            }
            other => return other,
        }
    }
}

#[cfg(unix)]
fn lock_exclusive(file: &File) -> io::Result<()> {
    use std::os::unix::io::AsRawFd;
    // flock locks belong to the open file description, so a second open of the same log in
    // this process is refused too; the lock is released when the file is closed.
    // SAFETY: flock only reads the descriptor, which `file` keeps open for the call.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(not(unix))]
fn lock_exclusive(_file: &File) -> io::Result<()> {
    Ok(())
}

#[cfg(unix)]
fn sync_parent_dir(path: &Path) -> io::Result<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    File::open(parent)?.sync_all()
}

#[cfg(not(unix))]
fn sync_parent_dir(_path: &Path) -> io::Result<()> {
    Ok(())
}
