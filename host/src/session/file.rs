//! The log file: regular files only, an exclusive advisory lock, whole-line durable appends,
//! torn-tail truncation.
//!
//! Durability contract: an append counts only after its line and newline went out in one
//! `write_all` and `sync_data` returned. A crash before that leaves at most a fragment without
//! a trailing newline, which the next open cuts off (or, when the fragment is a whole event
//! that only lacks its newline, completes). Complete lines are never rewritten.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::error::OpenError;
use crate::fsutil;

/// An open, locked log file positioned for appends.
#[derive(Debug)]
pub(crate) struct LogFile {
    file: File,
    path: PathBuf,
    len: u64,
}

impl LogFile {
    /// Open (creating if missing) and lock `path`, and read its whole content. Anything but
    /// a regular file is refused before a byte is read or written.
    pub(crate) fn open(path: &Path) -> Result<(Self, Vec<u8>), OpenError> {
        let io_err = |source| OpenError::Io {
            path: path.to_path_buf(),
            source,
        };
        // O_APPEND: every write lands at the end even if the offset was disturbed.
        let (mut file, _) = fsutil::open_regular(
            path,
            OpenOptions::new().read(true).append(true).create(true),
        )
        .map_err(|e| match fsutil::not_regular(&e) {
            Some(not_regular) => OpenError::NotRegular {
                path: path.to_path_buf(),
                kind: not_regular.kind,
            },
            None => io_err(e),
        })?;
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
                file,
                path: path.to_path_buf(),
                len,
            },
            bytes,
        ))
    }

    /// The log path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Cut the file back to `len` bytes (a torn tail) and make that durable.
    pub(crate) fn truncate(&mut self, len: u64) -> io::Result<()> {
        self.file.set_len(len)?;
        self.file.sync_data()?;
        self.len = len;
        Ok(())
    }

    /// Append `bytes` durably. On failure the partial write is rolled back;
    /// `Err((error, rolled_back))` says whether that rollback succeeded.
    pub(crate) fn append(&mut self, bytes: &[u8]) -> Result<(), (io::Error, bool)> {
        let before = self.len;
        let result = self
            .file
            .write_all(bytes)
            .and_then(|()| self.file.sync_data());
        match result {
            Ok(()) => {
                self.len = before + bytes.len() as u64;
                Ok(())
            }
            Err(e) => {
                let rolled_back = self
                    .file
                    .set_len(before)
                    .and_then(|()| self.file.sync_data())
                    .is_ok();
                Err((e, rolled_back))
            }
        }
    }

    /// Make the file's directory entry durable (after creating the log).
    pub(crate) fn sync_parent_dir(&self) -> io::Result<()> {
        sync_parent_dir(&self.path)
    }
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
