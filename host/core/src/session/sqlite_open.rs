//! SQLite opens files by name, and a name can change between our check and its open. Two of
//! its opens would then block: the read-only retry it makes after a read-write open fails,
//! and any open of a FIFO for reading, wait for a writer that never comes. SQLite lets a
//! program replace the `open` its unix VFS calls (`xSetSystemCall`); ours opens without
//! blocking and refuses a FIFO or a block device, so whatever is swapped in at the path,
//! an open ends at once — with a file, or with SQLite's "unable to open database file".
//!
//! The replacement is process-wide and installed once, before the first connection: every
//! open of the store goes through [`install`] first.

use std::ffi::{c_char, c_int, CStr};
use std::sync::Once;

use rusqlite::ffi;

/// Replace the unix VFS's `open` with [`open_without_blocking`], once per process.
pub(crate) fn install() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        // SAFETY: `sqlite3_vfs_find` initialises SQLite and returns a pointer to a VFS
        // registered for the life of the process (or null). `xSetSystemCall` is called
        // before any connection of ours exists (every open waits for this `Once`), as
        // SQLite asks; the function installed has the signature SQLite calls `open` with.
        unsafe {
            let vfs = ffi::sqlite3_vfs_find(c"unix".as_ptr());
            let Some(vfs) = vfs.as_ref() else { return };
            let Some(set) = vfs.xSetSystemCall else {
                return;
            };
            let open: unsafe extern "C" fn(*const c_char, c_int, c_int) -> c_int =
                open_without_blocking;
            let rc = set(
                vfs as *const ffi::sqlite3_vfs as *mut ffi::sqlite3_vfs,
                c"open".as_ptr(),
                Some(std::mem::transmute::<
                    unsafe extern "C" fn(*const c_char, c_int, c_int) -> c_int,
                    unsafe extern "C" fn(),
                >(open)),
            );
            if rc != ffi::SQLITE_OK {
                log::warn!(
                    "SQLite's open could not be replaced (code {rc}); opens may block on a FIFO"
                );
            }
        }
    });
}

/// `open(2)` as SQLite's unix VFS calls it, but never blocking: opened with `O_NONBLOCK`,
/// then a FIFO or a block device is closed and refused (`ENXIO`), and anything else gets
/// its flags back as asked. Directories (opened to sync them), regular files and character
/// devices (`/dev/urandom`, `/dev/null`) are what SQLite opens.
unsafe extern "C" fn open_without_blocking(
    path: *const c_char,
    flags: c_int,
    mode: c_int,
) -> c_int {
    // SAFETY: SQLite passes a NUL-terminated path; `mode` is promoted as `open` takes it.
    let fd = unsafe { libc::open(path, flags | libc::O_NONBLOCK, mode as libc::c_uint) };
    if fd < 0 {
        return fd;
    }
    // SAFETY: `fd` is open; `stat` is plain data filled by `fstat`.
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd, &mut stat) } != 0 {
        let errno = std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO);
        return refuse(fd, errno);
    }
    let kind = stat.st_mode & libc::S_IFMT;
    if kind == libc::S_IFIFO || kind == libc::S_IFBLK {
        if !path.is_null() {
            // SAFETY: checked non-null; SQLite's paths are NUL-terminated.
            let name = unsafe { CStr::from_ptr(path) }.to_string_lossy();
            log::warn!("SQLite was about to open {name}, which is not a regular file: refused");
        }
        return refuse(fd, libc::ENXIO);
    }
    if flags & libc::O_NONBLOCK == 0 {
        // SAFETY: `fd` is open; F_SETFL takes the status flags.
        unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) };
    }
    fd
}

/// Close `fd` and fail the open with `errno`, as `open(2)` fails.
fn refuse(fd: c_int, errno: c_int) -> c_int {
    // SAFETY: `fd` was opened by this module and is closed once.
    unsafe {
        libc::close(fd);
        *libc::__errno_location() = errno;
    }
    -1
}
