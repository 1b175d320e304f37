//! A cache file's bytes, mapped read-only from the descriptor that was checked instead of
//! read into fresh memory.
//!
//! Reading a megabytes-large artifact costs a page fault, a zeroed page and a copy per 4 KiB
//! of new memory, and `Component::deserialize` then copies the code once more into its
//! executable mapping: the two copies were most of a warm deployment load. A private,
//! read-only mapping of the file shares the page cache's pages instead, so only wasmtime's
//! copy is left. The mapping lives only until that copy is made (the [`Artifact`] is dropped
//! right after `Component::deserialize`).
//!
//! A mapped file that shrinks under the mapping raises `SIGBUS` on access. The cache's own
//! writers never shrink a file: they write a temporary file and rename it over the old one,
//! which leaves a mapping of the old file intact. Only another program writing into this
//! host's private cache directory in the instant between the check and the copy could, and
//! such a program can already change what the host runs.
//!
//! [`Artifact`]: super::Artifact

use std::fs::File;
use std::io;

/// The bytes of a file, mapped (Unix) or read (elsewhere).
pub(crate) struct Mapped {
    #[cfg(unix)]
    map: Option<(std::ptr::NonNull<libc::c_void>, usize)>,
    #[cfg(not(unix))]
    bytes: Vec<u8>,
}

// SAFETY: the mapping is private and read-only; nothing in this process writes to it, and it
// is unmapped only on drop, when no reference into it can remain.
unsafe impl Send for Mapped {}
unsafe impl Sync for Mapped {}

impl Mapped {
    /// The `len` bytes of `file` (its size as just taken from the same descriptor).
    #[cfg(unix)]
    pub(crate) fn of(file: &mut File, len: u64) -> io::Result<Self> {
        use std::os::fd::AsRawFd;
        if len == 0 {
            return Ok(Self { map: None });
        }
        let len = usize::try_from(len)
            .map_err(|_| io::Error::new(io::ErrorKind::OutOfMemory, "file too large to map"))?;
        // SAFETY: a fresh private read-only mapping of an open regular file; the pointer is
        // checked before use and unmapped exactly once, on drop.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                file.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr = std::ptr::NonNull::new(ptr).ok_or_else(|| io::Error::other("mmap gave null"))?;
        Ok(Self {
            map: Some((ptr, len)),
        })
    }

    /// The `len` bytes of `file`, read (no mapping on this platform).
    #[cfg(not(unix))]
    pub(crate) fn of(file: &mut File, len: u64) -> io::Result<Self> {
        Ok(Self {
            bytes: crate::fsutil::read_exact_size(file, len)?,
        })
    }

    /// The file's bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        #[cfg(unix)]
        match self.map {
            // SAFETY: `len` bytes mapped readable at `ptr` until `self` is dropped.
            Some((ptr, len)) => unsafe { std::slice::from_raw_parts(ptr.as_ptr().cast(), len) },
            None => &[],
        }
        #[cfg(not(unix))]
        &self.bytes
    }
}

#[cfg(unix)]
impl Drop for Mapped {
    fn drop(&mut self) {
        if let Some((ptr, len)) = self.map.take() {
            // SAFETY: the mapping made in `of`, unmapped once; no borrow of `bytes` outlives
            // `self`.
            unsafe {
                libc::munmap(ptr.as_ptr(), len);
            }
        }
    }
}
