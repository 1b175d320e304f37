//! Bounded reads of the few files under `.git` this plugin looks at. Every path is checked
//! with `metadata()` before it is opened and again through the open handle, so a FIFO or a
//! device is never opened for reading (that could block the call); every read goes through
//! `Read::take`, so a file that is not what git writes costs at most its cap + 1 byte.

use std::fs::{self, File};
use std::io::{BufRead, BufReader, ErrorKind, Read};
use std::path::Path;

use prompt_plugin::Error;

/// Cap on `HEAD`, a loose ref, a `.git` file and `commondir`: git writes one short line.
pub const SMALL_FILE_BYTES: usize = 4096;

/// Cap on how much of `packed-refs` is searched.
pub const PACKED_REFS_BYTES: usize = 1 << 20;

/// What a path holds.
pub enum Entry<T> {
    /// Nothing (also: a path through a component that is not a directory).
    Missing,
    /// A directory.
    Directory,
    /// A regular file, read.
    File(T),
}

fn io_error(path: &Path, e: std::io::Error) -> Error {
    if e.kind() == ErrorKind::PermissionDenied {
        Error::failed(format!("reading {} was denied: {e}", path.display()))
    } else {
        Error::failed(format!("cannot read {}: {e}", path.display()))
    }
}

fn not_regular(path: &Path) -> Error {
    Error::failed(format!(
        "{} is not a regular file; refusing to read it",
        path.display()
    ))
}

/// Open `path` if it is a regular file; anything else that exists and is not a directory (a
/// FIFO, a device, a socket) is refused without being opened.
fn open(path: &Path) -> Result<Entry<File>, Error> {
    let meta = match fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
            return Ok(Entry::Missing)
        }
        Err(e) => return Err(io_error(path, e)),
    };
    if meta.is_dir() {
        return Ok(Entry::Directory);
    }
    if !meta.is_file() {
        return Err(not_regular(path));
    }
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Entry::Missing),
        Err(e) => return Err(io_error(path, e)),
    };
    // It may have been replaced between the look-up and the open.
    if !file.metadata().map_err(|e| io_error(path, e))?.is_file() {
        return Err(not_regular(path));
    }
    Ok(Entry::File(file))
}

/// A small git file as text, at most [`SMALL_FILE_BYTES`]; a longer one is an error.
pub fn small(path: &Path) -> Result<Entry<String>, Error> {
    let file = match open(path)? {
        Entry::File(file) => file,
        Entry::Missing => return Ok(Entry::Missing),
        Entry::Directory => return Ok(Entry::Directory),
    };
    let mut bytes = Vec::new();
    file.take(SMALL_FILE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(path, e))?;
    if bytes.len() > SMALL_FILE_BYTES {
        return Err(Error::failed(format!(
            "{} is larger than {SMALL_FILE_BYTES} bytes; git writes one short line there",
            path.display()
        )));
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| Error::failed(format!("{} is not UTF-8 text", path.display())))?;
    Ok(Entry::File(text))
}

/// The first line of `packed-refs` at `path` for which `find` returns a value, searching at
/// most [`PACKED_REFS_BYTES`]. `Ok(None)` when the file is missing or holds no match; an
/// error when the cap is reached first, or `path` is a directory or not a regular file.
pub fn find_line<T>(path: &Path, find: impl Fn(&str) -> Option<T>) -> Result<Option<T>, Error> {
    let file = match open(path)? {
        Entry::File(file) => file,
        Entry::Missing => return Ok(None),
        Entry::Directory => return Err(not_regular(path)),
    };
    let mut reader = BufReader::new(file.take(PACKED_REFS_BYTES as u64 + 1));
    let mut line = Vec::new();
    let mut total = 0usize;
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| io_error(path, e))?;
        if n == 0 {
            return Ok(None);
        }
        total += n;
        if total > PACKED_REFS_BYTES {
            return Err(Error::failed(format!(
                "{} is larger than {PACKED_REFS_BYTES} bytes and the ref was not in that part",
                path.display()
            )));
        }
        // Ref names and object ids are ASCII; a line that is not UTF-8 matches nothing.
        if let Some(found) = std::str::from_utf8(&line).ok().and_then(&find) {
            return Ok(Some(found));
        }
    }
}
