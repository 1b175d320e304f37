//! Opening a directory by a path that was made canonical earlier, refusing any symbolic
//! link put in its way since.
//!
//! A grant in host.toml is checked (made canonical, shown to the operator) when the file is
//! read, and opened when its plugin is loaded. Opening the path again would follow a
//! directory replaced by a symbolic link in between, to wherever the link points. A
//! canonical path has no symbolic link in it, so this walk opens it one component at a time,
//! each beneath the one before, with `O_NOFOLLOW`: a link anywhere in it is refused, named,
//! instead of followed. Each component is opened with `O_DIRECTORY | O_NONBLOCK`, so
//! nothing but a directory is ever opened and nothing can block.

use std::fs::File;
use std::io;
use std::path::{Component, Path, PathBuf};

#[cfg(unix)]
use super::FileKind;

/// Open the directory at the absolute, canonical `path` without following a symbolic link
/// in any of its components (see the module docs). A component that is a symbolic link is
/// refused with an error that names it; a path with `.` or `..`, or a relative one, is
/// refused as not canonical.
#[cfg(unix)]
pub fn open_dir_without_symlinks(path: &Path) -> io::Result<File> {
    use std::ffi::CString;
    use std::os::fd::{AsRawFd, FromRawFd};
    use std::os::unix::ffi::OsStrExt;

    let not_canonical = || {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} is not a canonical absolute path; refused",
                path.display()
            ),
        )
    };
    let mut components = path.components();
    if components.next() != Some(Component::RootDir) {
        return Err(not_canonical());
    }
    let mut dir = super::open_dir(Path::new("/"))?;
    let mut walked = PathBuf::from("/");
    let mut components = components.peekable();
    while let Some(component) = components.next() {
        let Component::Normal(name) = component else {
            return Err(not_canonical());
        };
        walked.push(name);
        let name = CString::new(name.as_bytes()).map_err(|_| not_canonical())?;
        // The directories on the way are only passed through: where the system can, they
        // are opened for that alone (`O_PATH`), so one this user may search but not list
        // (mode 0711, as home directories often are) is no obstacle, as it is not to a path.
        #[cfg(target_os = "linux")]
        let access = if components.peek().is_none() {
            libc::O_RDONLY
        } else {
            libc::O_PATH
        };
        #[cfg(not(target_os = "linux"))]
        let access = libc::O_RDONLY;
        let flags = access
            | libc::O_DIRECTORY
            | libc::O_NOFOLLOW
            | libc::O_NONBLOCK
            | libc::O_NOCTTY
            | libc::O_CLOEXEC;
        // SAFETY: `dir` is an open directory descriptor and `name` a NUL-terminated single
        // component; the returned descriptor, if any, is owned by the `File` made below.
        let fd = unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags) };
        if fd < 0 {
            let error = io::Error::last_os_error();
            return Err(match kind_beneath(&dir, &name) {
                Some(FileKind::Symlink) => io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "{} is a symbolic link, which was not there when the grant was checked; \
                         refused rather than followed",
                        walked.display()
                    ),
                ),
                Some(kind) => io::Error::new(
                    io::ErrorKind::NotADirectory,
                    format!("{} is {kind}, not a directory", walked.display()),
                ),
                None => error,
            });
        }
        // SAFETY: `fd` was just returned by `openat` and is owned by nothing else.
        dir = unsafe { File::from_raw_fd(fd) };
    }
    super::checked_dir(dir, path)
}

/// Where symbolic links cannot be told apart this way, the path is opened as
/// [`super::open_dir`] does.
#[cfg(not(unix))]
pub fn open_dir_without_symlinks(path: &Path) -> io::Result<File> {
    super::open_dir(path)
}

/// What `name` beneath `dir` is, without following it; `None` when that cannot be told.
#[cfg(unix)]
fn kind_beneath(dir: &File, name: &std::ffi::CStr) -> Option<FileKind> {
    use std::os::fd::AsRawFd;
    // SAFETY: an all-zero `stat` is a valid value for fstatat to fill.
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `dir` is an open descriptor, `name` NUL-terminated, `stat` writable.
    let rc = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            name.as_ptr(),
            &mut stat,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if rc != 0 {
        return None;
    }
    Some(match stat.st_mode & libc::S_IFMT {
        libc::S_IFLNK => FileKind::Symlink,
        libc::S_IFREG => FileKind::Regular,
        libc::S_IFDIR => FileKind::Directory,
        libc::S_IFIFO => FileKind::Fifo,
        libc::S_IFCHR => FileKind::CharDevice,
        libc::S_IFBLK => FileKind::BlockDevice,
        libc::S_IFSOCK => FileKind::Socket,
        _ => FileKind::Other,
    })
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn a_canonical_directory_opens_and_a_symlink_anywhere_in_it_is_refused_by_name() {
        let root = tempfile::tempdir().unwrap();
        let root_path = root.path().canonicalize().unwrap();
        let (real, other) = (root_path.join("real"), root_path.join("other"));
        std::fs::create_dir_all(real.join("inner")).unwrap();
        std::fs::create_dir_all(other.join("inner")).unwrap();
        std::fs::write(real.join("inner/which"), "real").unwrap();
        std::fs::write(other.join("inner/which"), "other").unwrap();

        let opened = open_dir_without_symlinks(&real.join("inner")).unwrap();
        assert!(opened.metadata().unwrap().is_dir());

        // The last component, then one in the middle, replaced by a link to `other`.
        std::fs::rename(real.join("inner"), real.join("inner.orig")).unwrap();
        std::os::unix::fs::symlink(other.join("inner"), real.join("inner")).unwrap();
        let error = open_dir_without_symlinks(&real.join("inner")).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "{} is a symbolic link, which was not there when the grant was checked; refused rather than followed",
                real.join("inner").display()
            )
        );
        std::fs::remove_file(real.join("inner")).unwrap();
        std::fs::rename(real.join("inner.orig"), real.join("inner")).unwrap();
        std::fs::rename(&real, root_path.join("real.orig")).unwrap();
        std::os::unix::fs::symlink(&other, &real).unwrap();
        let error = open_dir_without_symlinks(&real.join("inner")).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with(&format!("{} is a symbolic link", real.display())),
            "{error}"
        );

        // A file where a directory was, and paths that are not canonical.
        std::fs::write(root_path.join("file"), "x").unwrap();
        assert_eq!(
            open_dir_without_symlinks(&root_path.join("file"))
                .unwrap_err()
                .to_string(),
            format!(
                "{} is a regular file, not a directory",
                root_path.join("file").display()
            )
        );
        // A FIFO where the directory was is refused without waiting for a writer.
        let fifo = root_path.join("fifo");
        let name = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        assert_eq!(
            open_dir_without_symlinks(&fifo).unwrap_err().to_string(),
            format!("{} is a FIFO, not a directory", fifo.display())
        );
        for bad in ["relative/dir", "/tmp/../etc"] {
            let error = open_dir_without_symlinks(Path::new(bad)).unwrap_err();
            assert_eq!(error.kind(), io::ErrorKind::InvalidInput, "{bad}: {error}");
        }
    }
}
