//! Counts remembered by text: a prompt is mostly the same from one step to the next, and
//! counting a 40 KB prompt again costs milliseconds where hashing and comparing it costs
//! microseconds.
//!
//! Keyed by a 64-bit hash of the text, each entry keeps the text itself and a hit compares
//! it, so a collision (chosen by a plugin or not) is a miss, never a wrong count. The cache
//! is bounded in entries and in bytes held; when either bound would be passed it starts
//! over, which keeps it simple and its memory known.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::Mutex;

/// The most texts remembered.
pub const MAX_CACHED_TEXTS: usize = 4096;
/// The most bytes of text remembered (the texts are kept to compare on a hit).
pub const MAX_CACHED_BYTES: usize = 64 << 20;

/// Remembered counts, shared by every caller of one tokenizer.
pub(super) struct CountCache {
    hasher: foldhash::quality::RandomState,
    inner: Mutex<Entries>,
}

#[derive(Default)]
struct Entries {
    by_hash: HashMap<u64, (Box<str>, usize)>,
    bytes: usize,
    hits: u64,
    misses: u64,
}

/// How a cache has done since it was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CacheStats {
    /// Counts answered from the cache.
    pub hits: u64,
    /// Counts made by the tokenizer.
    pub misses: u64,
    /// Texts remembered now.
    pub texts: usize,
    /// Bytes of text remembered now.
    pub bytes: usize,
}

impl CountCache {
    pub(super) fn new() -> Self {
        Self {
            hasher: foldhash::quality::RandomState::default(),
            inner: Mutex::new(Entries::default()),
        }
    }

    /// The count of `text`: remembered, or made by `count` and remembered.
    pub(super) fn count<E>(
        &self,
        text: &str,
        count: impl FnOnce(&str) -> Result<usize, E>,
    ) -> Result<usize, E> {
        let key = self.hasher.hash_one(text);
        if let Some(found) = self.lock().hit(key, text) {
            return Ok(found);
        }
        // Counted without the lock: another thread's count of another text goes on.
        let tokens = count(text)?;
        self.lock().insert(key, text, tokens);
        Ok(tokens)
    }

    pub(super) fn stats(&self) -> CacheStats {
        let entries = self.lock();
        CacheStats {
            hits: entries.hits,
            misses: entries.misses,
            texts: entries.by_hash.len(),
            bytes: entries.bytes,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        // The entries stay consistent whatever panicked while they were held: every change
        // is one insert or one clear.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Entries {
    fn hit(&mut self, key: u64, text: &str) -> Option<usize> {
        match self.by_hash.get(&key) {
            Some((kept, tokens)) if **kept == *text => {
                self.hits += 1;
                Some(*tokens)
            }
            _ => {
                self.misses += 1;
                None
            }
        }
    }

    fn insert(&mut self, key: u64, text: &str, tokens: usize) {
        if text.len() > MAX_CACHED_BYTES {
            return;
        }
        if self.by_hash.len() >= MAX_CACHED_TEXTS || self.bytes + text.len() > MAX_CACHED_BYTES {
            self.by_hash.clear();
            self.bytes = 0;
        }
        if let Some((old, _)) = self.by_hash.insert(key, (text.into(), tokens)) {
            self.bytes -= old.len();
        }
        self.bytes += text.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn by_chars(text: &str) -> Result<usize, std::convert::Infallible> {
        Ok(text.chars().count())
    }

    #[test]
    fn a_text_is_counted_once_and_a_changed_text_again() {
        let cache = CountCache::new();
        assert_eq!(cache.count("abc", by_chars), Ok(3));
        assert_eq!(
            cache.count("abc", |_| -> Result<usize, ()> { Err(()) }),
            Ok(3)
        );
        assert_eq!(cache.count("abcd", by_chars), Ok(4));
        let stats = cache.stats();
        assert_eq!(
            (stats.hits, stats.misses, stats.texts, stats.bytes),
            (1, 2, 2, 7)
        );
    }

    #[test]
    fn a_hash_collision_is_a_miss_never_a_wrong_count() {
        let cache = CountCache::new();
        let key = cache.hasher.hash_one("abc");
        // Another text stored under the same key, as a collision would store it.
        cache.lock().insert(key, "xyzzy", 99);
        assert_eq!(cache.count("abc", by_chars), Ok(3));
    }

    #[test]
    fn the_bounds_start_the_cache_over() {
        let mut entries = Entries::default();
        for i in 0..MAX_CACHED_TEXTS as u64 {
            entries.insert(i, "x", 1);
        }
        assert_eq!(entries.by_hash.len(), MAX_CACHED_TEXTS);
        entries.insert(u64::MAX, "y", 1);
        assert_eq!((entries.by_hash.len(), entries.bytes), (1, 1));
        let big = "z".repeat(MAX_CACHED_BYTES / 2 + 1);
        entries.insert(1, &big, 1);
        entries.insert(2, &big, 1);
        assert_eq!((entries.by_hash.len(), entries.bytes), (1, big.len()));
        entries.insert(3, &"w".repeat(MAX_CACHED_BYTES + 1), 1);
        assert_eq!(
            entries.by_hash.len(),
            1,
            "a text past the byte bound is not kept"
        );
    }
}
