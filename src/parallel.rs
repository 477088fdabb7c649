//! The core's thread pool: rayon's, built anew in a process forked from one that used it. A child
//! of `fork` has only the thread that forked: work handed to the parent's pool would wait for
//! workers that do not exist (Python's `multiprocessing` forks by default on Linux before 3.14).
//! Every parallel section of the core runs through [`install`] (or [`spawn`]).

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rayon::ThreadPool;

/// The pool and the process it was built in.
static POOL: Mutex<Slot> = Mutex::new(None);

/// The pool and the process it was built in, once built.
pub(crate) type Slot = Option<(u32, Arc<ThreadPool>)>;

/// This process's pool: built at first use, and again in a forked child (the parent's is left
/// alone there: its threads are not the child's). The lock is held only to read or set the slot,
/// never while a pool is built (spawning its threads): a child forked meanwhile would inherit the
/// lock held by a thread it does not have, and wait for it at its first parallel section.
fn pool() -> Arc<ThreadPool> {
    let pid = std::process::id();
    if let Some(pool) = held(pid) {
        return pool;
    }
    let built = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .thread_name(|i| format!("agentcontext-{i}"))
            .build()
            .expect("the core's thread pool could not be built"),
    );
    let mut slot = POOL.lock().unwrap_or_else(PoisonError::into_inner);
    match slot.as_ref() {
        // Another thread's pool was set meanwhile: that one is used, this one dropped (its
        // threads end) once the lock is let go.
        Some((owner, pool)) if *owner == pid => Arc::clone(pool),
        _ => {
            if let Some((_, parents)) = slot.take() {
                // Dropping it would signal threads that are not in this process.
                std::mem::forget(parents);
            }
            *slot = Some((pid, Arc::clone(&built)));
            built
        }
    }
}

/// The pool's slot, locked, when free now (see [`crate::fork`]).
pub(crate) fn try_hold() -> Option<MutexGuard<'static, Slot>> {
    crate::fork::try_lock(&POOL)
}

/// The pool set for process `pid`, if there is one.
fn held(pid: u32) -> Option<Arc<ThreadPool>> {
    let slot = POOL.lock().unwrap_or_else(PoisonError::into_inner);
    match slot.as_ref() {
        Some((owner, pool)) if *owner == pid => Some(Arc::clone(pool)),
        _ => None,
    }
}

/// Run `op` in this process's pool (rayon's parallel iterators and `join` inside it use its
/// threads); directly when called from one of them.
pub fn install<R: Send>(op: impl FnOnce() -> R + Send) -> R {
    if rayon::current_thread_index().is_some() {
        return op(); // on a worker: a nested section uses the pool it runs in
    }
    pool().install(op)
}

/// Run `op` on this process's pool, without waiting for it.
pub fn spawn(op: impl FnOnce() + Send + 'static) {
    pool().spawn(op);
}

#[cfg(test)]
mod tests {
    use rayon::prelude::*;

    #[test]
    fn sections_run_on_the_pool_and_nest() {
        let sums: Vec<usize> = super::install(|| {
            (0..64usize)
                .into_par_iter()
                .map(|i| super::install(|| (0..i).into_par_iter().sum::<usize>()))
                .collect()
        });
        assert_eq!(
            sums,
            (0..64usize).map(|i| i * i.saturating_sub(1) / 2).collect::<Vec<_>>()
        );
        let (tx, rx) = std::sync::mpsc::channel();
        super::spawn(move || tx.send(rayon::current_thread_index().is_some()).unwrap());
        assert!(rx.recv().unwrap());
    }
}
