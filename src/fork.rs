//! What a `fork` must not interrupt. A child of `fork` has only the thread that forked: a lock
//! another thread held at that moment stays held in the child for ever, and so does a lazy
//! initialisation under way (the child's first count waited for an encoding another thread was
//! building). [`try_quiesce`] takes the core's locks that are held for long (an encoding's build) or
//! often (the count memo's shards, the thread pool's slot), so that a fork made
//! while its guard lives finds every one of them free in the child, where the guard is dropped
//! too. Python's `os.register_at_fork` tries it before each `os.fork` until it succeeds (`src/python/fork.rs`).
//!
//! Locks held only for an instant inside dependencies (the regex crate's cache pool) are not
//! covered: a fork from a process whose other threads are counting stays a small risk, as it is
//! for any library that uses threads (Python warns of it from 3.12 on).

use std::sync::{Mutex, MutexGuard, TryLockError};

use crate::tokens::cache::{self, Shard};

/// The locks taken by [`try_quiesce`], let go when dropped.
pub struct Quiet {
    // Field order is drop order: the reverse of the order taken.
    _shards: Vec<MutexGuard<'static, Shard>>,
    _pool: MutexGuard<'static, crate::parallel::Slot>,
    _building: MutexGuard<'static, ()>,
}

/// The core's shared locks (an encoding's build, the thread pool's slot, the count memo's
/// shards), when every one is free now; None when one is held (nothing is kept then). Nothing
/// waits: a caller holding the GIL must not wait for a lock whose holder may be waiting for the
/// GIL (`src/python/fork.rs` lets the GIL go between tries).
pub fn try_quiesce() -> Option<Quiet> {
    let building = crate::tokens::bpe::try_building()?;
    let pool = crate::parallel::try_hold()?;
    let shards = cache::global().try_hold()?;
    Some(Quiet {
        _shards: shards,
        _pool: pool,
        _building: building,
    })
}

/// `lock` taken when free now (a poisoned lock is taken as it is: the locks [`try_quiesce`]
/// takes guard nothing a panic could leave half-changed).
pub(crate) fn try_lock<T>(lock: &Mutex<T>) -> Option<MutexGuard<'_, T>> {
    match lock.try_lock() {
        Ok(guard) => Some(guard),
        Err(TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
        Err(TryLockError::WouldBlock) => None,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn quiesce_then_release_leaves_everything_usable() {
        let quiet = super::try_quiesce().expect("nothing else holds the locks");
        assert!(super::try_quiesce().is_none(), "held while the guard lives");
        drop(quiet);
        let texts = vec!["a text long enough to be remembered by the memo"; 64];
        let n = crate::tokens::Encoding::O200k.count_many_cached(&texts);
        assert_eq!(n.len(), 64);
        drop(super::try_quiesce().expect("let go when dropped"));
        assert_eq!(crate::parallel::install(|| 1 + 1), 2);
    }
}
