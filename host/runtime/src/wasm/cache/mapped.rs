//! A cache file's bytes, mapped read-only from the descriptor that was checked instead of
//! read into fresh memory.
//!
//! Reading a megabytes-large artifact costs a page fault, a zeroed page and a copy per 4 KiB
//! of new memory, and `Component::deserialize` then copies the code once more into its
//! executable mapping: the two copies were most of a warm deployment load. A private,
//! read-only mapping of the file shares the page cache's pages instead. It is what the HMAC
//! or the trailer is checked on, and what `Component::deserialize` copies from where the code
//! cannot run from the file itself (`in_place.rs`). The mapping lives only until the
//! component is made (the [`Artifact`] is dropped right after).
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

/// The bytes of a file, mapped read-only (private).
pub(crate) struct Mapped {
    /// `None` for an empty file (a zero-length mapping is refused by the kernel).
    map: Option<memmap2::Mmap>,
}

impl Mapped {
    /// The `len` bytes of `file` (its size as just taken from the same descriptor).
    pub(crate) fn of(file: &mut File, len: u64) -> io::Result<Self> {
        if len == 0 {
            return Ok(Self { map: None });
        }
        let len = usize::try_from(len)
            .map_err(|_| io::Error::new(io::ErrorKind::OutOfMemory, "file too large to map"))?;
        // SAFETY: a private read-only mapping of a regular file of the cache directory, which
        // belongs to this user and only this host writes, by rename (never in place; see the
        // module docs). The mapping lives only until the component is made.
        let map = unsafe { memmap2::MmapOptions::new().len(len).map(&*file)? };
        Ok(Self { map: Some(map) })
    }

    /// The file's bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        self.map.as_deref().unwrap_or(&[])
    }
}
