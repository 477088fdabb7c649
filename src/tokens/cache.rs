//! A bounded, thread-safe memo of token counts keyed by a hash of the counted text.
//!
//! Frameworks pass the whole message list on every model call, so the same contents are counted
//! again and again; with this memo a list that grew by one message costs one count. The key is
//! two 64-bit hashes of the text under different seeds (foldhash's quality hasher; the length is
//! hashed in, and the encoding into the second), so two different texts share an entry only if
//! both hashes collide. Texts shorter than [`MIN_BYTES`] are counted directly (hashing and the
//! lock would cost about what counting does).
//!
//! Memory is bounded: the memo is split into [`SHARDS`] shards behind their own locks, each with
//! two generations; when a shard's current generation is full the older one is dropped and the
//! current one becomes the older (an entry found in the older generation moves back to the
//! current one). At most `capacity` entries are held in all, whatever is counted.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

use super::Encoding;

/// Texts shorter than this many bytes are not memoized.
pub const MIN_BYTES: usize = 16;
/// Shards of the memo (a power of two): threads counting in parallel rarely wait on each other.
pub const SHARDS: usize = 16;
/// Entries held by default (about 4 MiB of tables at most: 25 bytes a slot, hashbrown's slack).
pub const DEFAULT_CAPACITY: usize = 1 << 17;

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct Key {
    h1: u64,
    h2: u64,
}

type Table = HashMap<Key, u32, foldhash::fast::FixedState>;

#[derive(Default)]
pub(crate) struct Shard {
    current: Table,
    older: Table,
}

/// Bytes a table entry takes: the key and value plus hashbrown's control byte.
const ENTRY_BYTES: usize = std::mem::size_of::<(Key, u32)>() + 1;

/// What the memo holds and how it has been used (see [`CountCache::stats`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheStats {
    pub entries: usize,
    pub capacity: usize,
    /// Bytes allocated for the tables (their allocated slots, not only the used ones).
    pub bytes: usize,
    pub hits: u64,
    pub misses: u64,
}

/// The memo (one per process: [`global`]).
pub struct CountCache {
    shards: [Mutex<Shard>; SHARDS],
    /// Entries per generation per shard.
    per_generation: AtomicUsize,
    hits: AtomicU64,
    misses: AtomicU64,
}

const SEED_1: foldhash::quality::FixedState = foldhash::quality::FixedState::with_seed(0x9e37_79b9_7f4a_7c15);
const SEED_2: foldhash::quality::FixedState = foldhash::quality::FixedState::with_seed(0xc2b2_ae3d_27d4_eb4f);

impl CountCache {
    /// A memo holding at most `capacity` entries (0 turns memoizing off).
    pub fn new(capacity: usize) -> CountCache {
        CountCache {
            shards: std::array::from_fn(|_| Mutex::new(Shard::default())),
            per_generation: AtomicUsize::new(Self::per_generation(capacity)),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    fn per_generation(capacity: usize) -> usize {
        capacity / (2 * SHARDS)
    }

    fn lock(&self, shard: usize) -> MutexGuard<'_, Shard> {
        // A panic while the lock was held leaves a shard whose tables are still consistent
        // (inserts are single calls), so a poisoned lock is used as it is.
        self.shards[shard]
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn key(enc: Encoding, text: &str) -> Key {
        Key {
            h1: SEED_1.hash_one(text.as_bytes()),
            h2: SEED_2.hash_one((enc, text.as_bytes())),
        }
    }

    /// The shard of `key`, from bits the table does not use first (hashbrown reads the top 7 and
    /// the low bits).
    fn shard_of(key: &Key) -> usize {
        #[allow(clippy::cast_possible_truncation)]
        let shard = (key.h2 >> 32) as usize % SHARDS;
        shard
    }

    /// Every shard, locked, when all are free now (see [`crate::fork`]).
    pub(crate) fn try_hold(&self) -> Option<Vec<MutexGuard<'_, Shard>>> {
        self.shards.iter().map(crate::fork::try_lock).collect()
    }

    /// The remembered count of `key`, if any.
    fn lookup(&self, key: &Key, per_generation: usize) -> Option<usize> {
        let mut s = self.lock(Self::shard_of(key));
        if let Some(&n) = s.current.get(key) {
            self.hits.fetch_add(1, Ordering::Relaxed);
            return Some(n as usize);
        }
        if let Some(n) = s.older.remove(key) {
            self.hits.fetch_add(1, Ordering::Relaxed);
            Self::insert(&mut s, *key, n, per_generation);
            return Some(n as usize);
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        None
    }

    fn remember(&self, key: Key, n: usize, per_generation: usize) {
        // A count past u32 (a text of more than 4 G tokens) is simply not remembered.
        if let Ok(stored) = u32::try_from(n) {
            Self::insert(&mut self.lock(Self::shard_of(&key)), key, stored, per_generation);
        }
    }

    /// The count of `text` under `enc`: memoized, or `count(text)` remembered.
    pub fn count(&self, enc: Encoding, text: &str, count: impl FnOnce(&str) -> usize) -> usize {
        let per_generation = self.per_generation.load(Ordering::Relaxed);
        if text.len() < MIN_BYTES || per_generation == 0 {
            return count(text);
        }
        let key = Self::key(enc, text);
        if let Some(n) = self.lookup(&key, per_generation) {
            return n;
        }
        // Counted without the lock: other threads keep using the shard meanwhile.
        let n = count(text);
        self.remember(key, n, per_generation);
        n
    }

    /// The counts of `texts` under `enc`: the memoized ones looked up, the others counted all at
    /// once by `count` (which may use every core) and remembered.
    pub fn count_many(&self, enc: Encoding, texts: &[&str], count: impl FnOnce(&[&str]) -> Vec<usize>) -> Vec<usize> {
        let per_generation = self.per_generation.load(Ordering::Relaxed);
        let mut out = vec![0; texts.len()];
        let mut missing: Vec<(usize, Option<Key>)> = Vec::new();
        for (i, text) in texts.iter().enumerate() {
            if text.len() < MIN_BYTES || per_generation == 0 {
                missing.push((i, None));
                continue;
            }
            let key = Self::key(enc, text);
            match self.lookup(&key, per_generation) {
                Some(n) => out[i] = n,
                None => missing.push((i, Some(key))),
            }
        }
        if missing.is_empty() {
            return out;
        }
        let batch: Vec<&str> = missing.iter().map(|&(i, _)| texts[i]).collect();
        for (&(i, key), n) in missing.iter().zip(count(&batch)) {
            out[i] = n;
            if let Some(key) = key {
                self.remember(key, n, per_generation);
            }
        }
        out
    }

    fn insert(s: &mut Shard, key: Key, n: u32, per_generation: usize) {
        if s.current.len() >= per_generation {
            s.older = std::mem::take(&mut s.current);
            // The older generation keeps its allocation bounded: shrink it to what it holds.
            s.older.shrink_to_fit();
        }
        s.current.insert(key, n);
    }

    /// Drop every entry and set the capacity (entries held at most, over all shards; 0 turns
    /// memoizing off). The hit and miss counters are kept.
    pub fn reset(&self, capacity: usize) {
        self.per_generation
            .store(Self::per_generation(capacity), Ordering::Relaxed);
        for shard in 0..SHARDS {
            let mut s = self.lock(shard);
            s.current = Table::default();
            s.older = Table::default();
        }
    }

    pub fn stats(&self) -> CacheStats {
        let mut entries = 0;
        let mut bytes = 0;
        for shard in 0..SHARDS {
            let s = self.lock(shard);
            entries += s.current.len() + s.older.len();
            bytes += (s.current.capacity() + s.older.capacity()) * ENTRY_BYTES;
        }
        CacheStats {
            entries,
            capacity: self.per_generation.load(Ordering::Relaxed) * 2 * SHARDS,
            bytes,
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
        }
    }
}

/// The process's memo, used by [`Encoding::count_cached`].
pub fn global() -> &'static CountCache {
    static CACHE: OnceLock<CountCache> = OnceLock::new();
    CACHE.get_or_init(|| CountCache::new(DEFAULT_CAPACITY))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(i: usize) -> String {
        format!("message number {i} with enough text to be memoized")
    }

    #[test]
    fn remembers_and_counts_hits() {
        let cache = CountCache::new(1024);
        let calls = std::cell::Cell::new(0);
        let count = |t: &str| {
            calls.set(calls.get() + 1);
            Encoding::O200k.count(t)
        };
        let t = text(1);
        let first = cache.count(Encoding::O200k, &t, count);
        let second = cache.count(Encoding::O200k, &t, count);
        assert_eq!(first, Encoding::O200k.count(&t));
        assert_eq!(first, second);
        assert_eq!(calls.get(), 1);
        // Another encoding is another entry.
        cache.count(Encoding::Cl100k, &t, |t| Encoding::Cl100k.count(t));
        let s = cache.stats();
        assert_eq!((s.entries, s.hits, s.misses), (2, 1, 2));
    }

    #[test]
    fn many_at_once_counts_only_what_is_new() {
        let cache = CountCache::new(1024);
        let texts: Vec<String> = (0..10).map(text).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let exact: Vec<usize> = refs.iter().map(|t| Encoding::O200k.count(t)).collect();
        assert_eq!(
            cache.count_many(Encoding::O200k, &refs[..9], |b| Encoding::O200k.count_many(b)),
            exact[..9]
        );
        let mut counted = 0;
        let all = cache.count_many(Encoding::O200k, &refs, |b| {
            counted = b.len();
            Encoding::O200k.count_many(b)
        });
        assert_eq!((all, counted), (exact, 1));
    }

    #[test]
    fn short_texts_are_not_remembered() {
        let cache = CountCache::new(1024);
        cache.count(Encoding::O200k, "short", |t| Encoding::O200k.count(t));
        assert_eq!(cache.stats().entries, 0);
    }

    #[test]
    fn stays_within_capacity_and_stays_exact() {
        let cache = CountCache::new(64);
        for round in 0..3 {
            for i in 0..1000 {
                let t = text(i);
                assert_eq!(
                    cache.count(Encoding::O200k, &t, |t| Encoding::O200k.count(t)),
                    Encoding::O200k.count(&t),
                    "round {round}"
                );
                assert!(cache.stats().entries <= 64);
            }
        }
        assert!(cache.stats().bytes > 0);
    }

    #[test]
    fn zero_capacity_turns_it_off_and_reset_empties() {
        let cache = CountCache::new(1024);
        cache.count(Encoding::O200k, &text(1), |t| Encoding::O200k.count(t));
        assert_eq!(cache.stats().entries, 1);
        cache.reset(0);
        assert_eq!(cache.stats().entries, 0);
        cache.count(Encoding::O200k, &text(1), |t| Encoding::O200k.count(t));
        assert_eq!(cache.stats().entries, 0);
        assert_eq!(cache.stats().capacity, 0);
    }

    #[test]
    fn threads_share_it() {
        let cache = CountCache::new(4096);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for i in 0..200 {
                        let t = text(i);
                        assert_eq!(
                            cache.count(Encoding::O200k, &t, |t| Encoding::O200k.count(t)),
                            Encoding::O200k.count(&t)
                        );
                    }
                });
            }
        });
        assert_eq!(cache.stats().entries, 200);
    }
}
