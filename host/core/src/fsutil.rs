//! Opening and reading files that must be regular files.
//!
//! A path from a command line, a config file or a request may name a FIFO (opening it for
//! reading blocks until a writer appears), a device (`/dev/zero` never ends, `/dev/full`
//! fails every write), a directory or a socket. [`open_regular`] opens without blocking,
//! checks the opened descriptor with `fstat` and refuses anything that is not a regular
//! file before a single byte is read or written; [`read_regular`] adds a size limit, so a
//! file too large for memory is refused instead of read.
//!
//! The type is checked on the descriptor, not on the path, so a file swapped between a
//! check and the open cannot slip through. Symbolic links are followed: a link to a regular
//! file is a regular file.
//!
//! This is the one place the host opens what it did not create: session logs and the
//! compile cache through [`open_regular`] and [`read_regular`] (the cache's directory and
//! key also through [`check_private`]), granted directories through [`open_dir`] when a
//! plugin is loaded (through [`open_dir_without_symlinks`] when the grant was made canonical
//! when checked), and paths a plugin names beneath them through [`open_beneath`]. None of
//! them can block, and none can be redirected after its check: each checks the descriptor it
//! opened.

mod no_symlinks;

pub use no_symlinks::open_dir_without_symlinks;

use std::fmt;
use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use thiserror::Error;

/// The type of a file that is not a regular file (or is), as named in errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A regular file.
    Regular,
    /// A directory.
    Directory,
    /// A named pipe.
    Fifo,
    /// A character device (`/dev/zero`, `/dev/full`, a terminal).
    CharDevice,
    /// A block device.
    BlockDevice,
    /// A Unix-domain socket.
    Socket,
    /// A symbolic link (only seen when links are not followed).
    Symlink,
    /// Anything else.
    Other,
}

impl FileKind {
    /// The kind of the file `metadata` describes.
    pub fn of(metadata: &Metadata) -> Self {
        let ty = metadata.file_type();
        if ty.is_file() {
            return Self::Regular;
        }
        if ty.is_dir() {
            return Self::Directory;
        }
        if ty.is_symlink() {
            return Self::Symlink;
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileTypeExt;
            if ty.is_fifo() {
                return Self::Fifo;
            }
            if ty.is_char_device() {
                return Self::CharDevice;
            }
            if ty.is_block_device() {
                return Self::BlockDevice;
            }
            if ty.is_socket() {
                return Self::Socket;
            }
        }
        Self::Other
    }
}

impl fmt::Display for FileKind {
    /// With the article: "a FIFO", "a directory".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Regular => "a regular file",
            Self::Directory => "a directory",
            Self::Fifo => "a FIFO",
            Self::CharDevice => "a character device",
            Self::BlockDevice => "a block device",
            Self::Socket => "a socket",
            Self::Symlink => "a symbolic link",
            Self::Other => "not a file of a known type",
        })
    }
}

/// The path names something other than a regular file. Displays as
/// `<path> is a FIFO, not a regular file`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{} is {kind}, not a regular file", path.display())]
pub struct NotRegularFile {
    /// The path as given.
    pub path: PathBuf,
    /// What it is instead.
    pub kind: FileKind,
}

/// Open `path` with `options` only if it is a regular file, returning the file and the
/// `fstat` metadata of the opened descriptor.
///
/// The open never blocks (`O_NONBLOCK`, cleared again before returning) and never makes a
/// terminal the controlling one (`O_NOCTTY`); these replace any `custom_flags` set on
/// `options`. Anything that is not a regular file is closed unread and unwritten and
/// refused with an error of kind [`io::ErrorKind::InvalidInput`] whose inner error is a
/// [`NotRegularFile`] (see [`not_regular`]); that error names the path. An open that fails
/// on a path that is not a regular file (a directory opened for writing) gets the same
/// error; every other failure is the operating system's error, unchanged (it does not name
/// the path: callers add it, as they do for any `io::Error`).
///
/// `truncate(true)` in `options` can only ever truncate a regular file: the kernel ignores
/// `O_TRUNC` for FIFOs and devices and refuses it for directories.
pub fn open_regular(path: &Path, options: &OpenOptions) -> io::Result<(File, Metadata)> {
    let mut options = options.clone();
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    let file = match options.open(path) {
        Ok(file) => file,
        Err(e) => {
            // Say what the path is when that explains the failure (EISDIR, ENXIO on a FIFO
            // without a reader); only for the message, the open has already failed.
            return Err(match std::fs::metadata(path) {
                Ok(meta) if !meta.is_file() => not_regular_error(path, FileKind::of(&meta)),
                _ => e,
            });
        }
    };
    let metadata = file.metadata()?;
    if !metadata.is_file() {
        return Err(not_regular_error(path, FileKind::of(&metadata)));
    }
    #[cfg(unix)]
    clear_nonblocking(&file)?;
    Ok((file, metadata))
}

/// Open the directory at `path` for reading (listing it, opening files beneath it) without
/// blocking: `O_DIRECTORY` refuses anything that is not a directory before it is opened (a
/// FIFO cannot make the open wait), and the type is checked again on the descriptor. The
/// handle then designates that directory whatever later happens to the path: renaming it,
/// or putting a symbolic link in its place, does not redirect it.
pub fn open_dir(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_DIRECTORY | libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    checked_dir(options.open(path)?, path)
}

/// `dir`, opened from `path`, when its descriptor is a directory's; else an error naming
/// `path` and what it is.
fn checked_dir(dir: File, path: &Path) -> io::Result<File> {
    let metadata = dir.metadata()?;
    if !metadata.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::NotADirectory,
            format!(
                "{} is {}, not a directory",
                path.display(),
                FileKind::of(&metadata)
            ),
        ));
    }
    Ok(dir)
}

/// What [`open_beneath`] opened.
#[derive(Debug)]
pub enum Beneath {
    /// A directory (for listing and opening beneath).
    Directory(File),
    /// A regular file, blocking again for its reads.
    Regular(File),
}

/// Open `path` for reading beneath the directory `dir` (a handle, never a path): `..` and
/// symbolic links cannot lead out of it (cap-std's resolution; `openat2(RESOLVE_BENEATH)`
/// where the kernel has it), the last component is followed only when `follow` says so, and
/// the open cannot block (`O_NONBLOCK`, checked on the opened descriptor, like
/// [`open_regular`]): anything but a directory or a regular file is closed unread and
/// refused with a [`NotRegularFile`] error naming `path`.
pub fn open_beneath(dir: &File, path: &Path, follow: bool) -> io::Result<Beneath> {
    use cap_fs_ext::{
        FollowSymlinks, OpenOptionsFollowExt, OpenOptionsMaybeDirExt, OpenOptionsSyncExt,
    };
    let mut options = cap_primitives::fs::OpenOptions::new();
    options
        .read(true)
        .maybe_dir(true)
        .nonblock(true)
        .follow(if follow {
            FollowSymlinks::Yes
        } else {
            FollowSymlinks::No
        });
    #[cfg(unix)]
    {
        use cap_primitives::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOCTTY);
    }
    let file = cap_primitives::fs::open(dir, path, &options)?;
    let metadata = file.metadata()?;
    if metadata.is_dir() {
        return Ok(Beneath::Directory(file));
    }
    if !metadata.is_file() {
        return Err(not_regular_error(path, FileKind::of(&metadata)));
    }
    #[cfg(unix)]
    clear_nonblocking(&file)?;
    Ok(Beneath::Regular(file))
}

/// What other users may do with a file the host trusts (its cache directory, its key).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Others {
    /// Nothing beyond reading and searching (a directory others must not write into).
    MayRead,
    /// Nothing at all (a secret).
    Nothing,
}

/// `Ok` when the file `metadata` describes (taken from an open descriptor) belongs to the
/// user running this process and gives other users no more than `others` allows; else why
/// not, naming the owner or the mode. Another user who created the host's cache directory
/// first, or can write into it, could plant code the host would run.
pub fn check_private(metadata: &Metadata, others: Others) -> Result<(), String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        // SAFETY: geteuid has no preconditions and cannot fail.
        let me = unsafe { libc::geteuid() };
        if metadata.uid() != me {
            return Err(format!(
                "it belongs to uid {}, not to this user (uid {me})",
                metadata.uid()
            ));
        }
        let mode = metadata.mode() & 0o7777;
        let refused = match others {
            Others::MayRead => 0o022,
            Others::Nothing => 0o077,
        };
        if mode & refused != 0 {
            let what = match others {
                Others::MayRead => "writable by other users",
                Others::Nothing => "readable or writable by other users",
            };
            return Err(format!("it is {what} (mode {mode:04o})"));
        }
    }
    #[cfg(not(unix))]
    let _ = (metadata, others);
    Ok(())
}

/// The [`NotRegularFile`] inside an error from [`open_regular`], if that is what it is.
pub fn not_regular(error: &io::Error) -> Option<&NotRegularFile> {
    error.get_ref()?.downcast_ref::<NotRegularFile>()
}

fn not_regular_error(path: &Path, kind: FileKind) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        NotRegularFile {
            path: path.to_path_buf(),
            kind,
        },
    )
}

/// Make `file` blocking again (after a non-blocking open).
#[cfg(unix)]
pub fn clear_nonblocking(file: &File) -> io::Result<()> {
    use std::os::unix::io::AsRawFd;
    let fd = file.as_raw_fd();
    // SAFETY: fcntl with F_GETFL/F_SETFL only reads and sets the status flags of `fd`, which
    // `file` keeps open for the duration of both calls.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Why [`read_regular`] read nothing. Every variant names the file.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The path is not a regular file; nothing was read from it.
    #[error(transparent)]
    NotRegular(#[from] NotRegularFile),
    /// The file is larger than the caller's limit (or grew past it while being read).
    #[error("{} is larger than {limit} bytes, the most it may hold", path.display())]
    TooLarge {
        /// The path as given.
        path: PathBuf,
        /// The limit in bytes.
        limit: u64,
    },
    /// Opening or reading failed.
    #[error("cannot read {}: {error}", path.display())]
    Io {
        /// The path as given.
        path: PathBuf,
        /// The I/O error.
        error: io::Error,
    },
}

impl ReadError {
    /// The path the error is about.
    pub fn path(&self) -> &Path {
        match self {
            Self::NotRegular(e) => &e.path,
            Self::TooLarge { path, .. } | Self::Io { path, .. } => path,
        }
    }
}

/// Read the whole of the regular file at `path`, refusing it unread when it is not a regular
/// file or when it holds more than `max_bytes` bytes. At most `max_bytes + 1` bytes are ever
/// read, so a file that grows while being read cannot exhaust memory either.
pub fn read_regular(path: &Path, max_bytes: u64) -> Result<Vec<u8>, ReadError> {
    let io_error = |source| ReadError::Io {
        path: path.to_path_buf(),
        error: source,
    };
    let too_large = || ReadError::TooLarge {
        path: path.to_path_buf(),
        limit: max_bytes,
    };
    let (file, metadata) =
        open_regular(path, OpenOptions::new().read(true)).map_err(|e| match not_regular(&e) {
            Some(not_regular) => ReadError::NotRegular(not_regular.clone()),
            None => io_error(e),
        })?;
    if metadata.len() > max_bytes {
        return Err(too_large());
    }
    // The size is a hint (files under /proc report 0); the limit is the bound.
    let mut bytes = Vec::with_capacity(metadata.len() as usize);
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io_error)?;
    if bytes.len() as u64 > max_bytes {
        return Err(too_large());
    }
    Ok(bytes)
}

/// [`read_regular`] for a UTF-8 text file; invalid UTF-8 is a [`ReadError::Io`] of kind
/// [`io::ErrorKind::InvalidData`].
pub fn read_regular_to_string(path: &Path, max_bytes: u64) -> Result<String, ReadError> {
    let bytes = read_regular(path, max_bytes)?;
    String::from_utf8(bytes).map_err(|_| ReadError::Io {
        path: path.to_path_buf(),
        error: io::Error::new(
            io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        ),
    })
}

/// Read exactly `len` bytes from the current position of `file` (a regular file whose size
/// was just taken with `fstat`), failing instead of reading on when the file turns out to be
/// longer or shorter: it changed while being read, which only a writer that ignores the
/// caller's lock can do. Memory use is bounded by `len`.
pub fn read_exact_size(file: &mut File, len: u64) -> io::Result<Vec<u8>> {
    let capacity = usize::try_from(len)
        .map_err(|_| io::Error::new(io::ErrorKind::OutOfMemory, "file too large for memory"))?;
    let mut bytes = Vec::with_capacity(capacity);
    (&mut *file).take(len).read_to_end(&mut bytes)?;
    let mut probe = [0u8; 1];
    let grew = loop {
        match file.read(&mut probe) {
            Ok(n) => break n > 0,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    };
    if bytes.len() as u64 != len || grew {
        return Err(io::Error::other(format!(
            "the file changed size while being read (it was {len} bytes); another program is \
             writing to it"
        )));
    }
    Ok(bytes)
}

/// Create `dir` (and missing parents) readable by this user only; an existing one is left
/// as it is (and judged by whoever opens it).
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// Open a new file at `path` for writing, private to this user, failing if one exists.
pub fn create_private_file(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use super::*;

    fn mkfifo(path: &Path) {
        use std::os::unix::ffi::OsStrExt;
        let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
        // SAFETY: `c` is a valid NUL-terminated path for the duration of the call.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }

    #[test]
    fn a_regular_file_opens_and_reads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        std::fs::write(&path, b"hello").unwrap();
        let (_, meta) = open_regular(&path, OpenOptions::new().read(true)).unwrap();
        assert_eq!(meta.len(), 5);
        assert_eq!(read_regular(&path, 5).unwrap(), b"hello");
        assert_eq!(read_regular_to_string(&path, 100).unwrap(), "hello");
        let err = read_regular(&path, 4).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "{} is larger than 4 bytes, the most it may hold",
                path.display()
            )
        );
        assert_eq!(err.path(), path);
    }

    #[test]
    fn special_files_are_refused_unread_and_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        mkfifo(&fifo);
        let cases: [(&Path, &str); 4] = [
            (&fifo, "a FIFO"),
            (Path::new("/dev/zero"), "a character device"),
            (Path::new("/dev/null"), "a character device"),
            (dir.path(), "a directory"),
        ];
        for (path, kind) in cases {
            let expected = format!("{} is {kind}, not a regular file", path.display());
            let err = read_regular(path, 1 << 20).unwrap_err();
            assert_eq!(err.to_string(), expected);
            assert!(matches!(err, ReadError::NotRegular(_)));
            for options in [
                OpenOptions::new().read(true).clone(),
                OpenOptions::new().read(true).append(true).clone(),
                OpenOptions::new().write(true).clone(),
            ] {
                let err = open_regular(path, &options).unwrap_err();
                assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{path:?}: {err}");
                assert_eq!(not_regular(&err).unwrap().to_string(), expected);
                assert_eq!(err.to_string(), expected);
            }
        }
    }

    #[test]
    fn a_missing_file_is_the_os_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = read_regular(&dir.path().join("missing"), 10).unwrap_err();
        assert!(
            matches!(&err, ReadError::Io { error: source, .. } if source.kind() == io::ErrorKind::NotFound),
            "{err}"
        );
        assert!(err.to_string().starts_with("cannot read "), "{err}");
    }

    #[test]
    fn read_exact_size_notices_growth() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"abcdef").unwrap();
        let mut file = File::open(&path).unwrap();
        assert_eq!(read_exact_size(&mut file, 6).unwrap(), b"abcdef");
        let mut file = File::open(&path).unwrap();
        let err = read_exact_size(&mut file, 4).unwrap_err();
        assert!(err.to_string().contains("changed size"), "{err}");
        let mut file = File::open(&path).unwrap();
        assert!(read_exact_size(&mut file, 8).is_err());
    }
}
