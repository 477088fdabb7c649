//! The candidate pairs of a long piece's merge: positions in buckets by rank, the lowest bucket
//! found in three steps.

use super::{MEMO_BITS, NO_RANK, RANK_BITS};

/// A position in [`Bpe::merge_long`](super::Bpe::merge_long): u32 or usize.
pub(super) trait Index: Copy + Eq + Ord {
    const NONE: Self;
    /// Above this many entries the queue stops before its next pass.
    const LIMIT: usize;
    fn new(i: usize) -> Self;
    fn get(self) -> usize;
}

impl Index for u32 {
    const NONE: u32 = u32::MAX;
    const LIMIT: usize = (u32::MAX / 2) as usize;
    fn new(i: usize) -> u32 {
        debug_assert!(i < u32::MAX as usize, "see MAX_U32_PIECE");
        i as u32
    }
    fn get(self) -> usize {
        self as usize
    }
}

impl Index for usize {
    const NONE: usize = usize::MAX;
    const LIMIT: usize = usize::MAX / 2;
    fn new(i: usize) -> usize {
        i
    }
    fn get(self) -> usize {
        self
    }
}

/// Ranks of both encodings are below this (three levels of 64-bit words), with one value to
/// spare (the memo's NO_RANK).
pub(super) const MAX_RANKS: usize = 1 << RANK_BITS;

/// Positions in buckets by rank: each bucket a list (newest first) in one arena, and which
/// buckets are non-empty in three levels of bits, so that the lowest is found in three steps.
pub(super) struct RankQueue<I> {
    /// Bit `v` is set when `mid[v]` is not zero.
    top: u64,
    /// Bit `w % 64` of `mid[w / 64]` is set when `low[w]` is not zero.
    mid: Vec<u64>,
    /// Bit `r % 64` of `low[r / 64]` is set when rank `r`'s bucket is not empty.
    low: Vec<u64>,
    /// Per rank with its bit set: the index in `entries` of its newest position.
    head: Vec<I>,
    /// (position, index of the entry before it in the same bucket, or NONE).
    pub(super) entries: Vec<(I, I)>,
    /// Pair ranks by the pair's tokens ([`Bpe::pair_rank`](super::Bpe::pair_rank)), for the encoding `memo_owner`.
    pub(super) memo: Vec<u64>,
    memo_owner: u64,
}

impl<I: Index> RankQueue<I> {
    pub(super) fn new() -> RankQueue<I> {
        RankQueue {
            top: 0,
            mid: vec![0; MAX_RANKS / 64 / 64],
            low: vec![0; MAX_RANKS / 64],
            // Read only where a bit is set, so zeros (no page touched until used) will do.
            head: vec![I::new(0); MAX_RANKS],
            entries: Vec::new(),
            memo: vec![u64::MAX; 1 << MEMO_BITS],
            memo_owner: u64::MAX,
        }
    }

    /// Empties the queue (a no-op unless a merge stopped halfway) for a merge of encoding `owner`
    /// that pushes about `pushes` entries; the memo is kept if it is that encoding's.
    pub(super) fn clear(&mut self, owner: u64, pushes: usize) {
        if self.top != 0 {
            self.top = 0;
            self.mid.fill(0);
            self.low.fill(0);
        }
        if self.memo_owner != owner {
            self.memo.fill(u64::MAX);
            self.memo_owner = owner;
        }
        self.entries.clear();
        self.entries.reserve(pushes);
    }

    /// Lets go of the entries' memory unless it is small (kept for the next piece).
    pub(super) fn trim(&mut self) {
        if self.entries.capacity() > 1 << 16 {
            self.entries = Vec::new();
        }
    }

    pub(super) fn push_valid(&mut self, rank: u32, position: I) {
        if rank != NO_RANK {
            self.push(rank, position);
        }
    }

    pub(super) fn push(&mut self, rank: u32, position: I) {
        let r = rank as usize;
        let (w, bit) = (r / 64, 1u64 << (r % 64));
        let before = if self.low[w] & bit == 0 {
            self.low[w] |= bit;
            self.mid[w / 64] |= 1 << (w % 64);
            self.top |= 1 << (w / 64);
            I::NONE
        } else {
            self.head[r]
        };
        self.head[r] = I::new(self.entries.len());
        self.entries.push((position, before));
    }

    /// Takes the lowest rank's bucket: its positions into `bucket` in ascending order.
    pub(super) fn pop(&mut self, bucket: &mut Vec<I>) -> Option<u32> {
        if self.top == 0 {
            return None;
        }
        let v = self.top.trailing_zeros() as usize;
        let w = v * 64 + self.mid[v].trailing_zeros() as usize;
        let r = w * 64 + self.low[w].trailing_zeros() as usize;
        self.low[w] &= self.low[w] - 1;
        if self.low[w] == 0 {
            self.mid[v] &= self.mid[v] - 1;
            if self.mid[v] == 0 {
                self.top &= self.top - 1;
            }
        }
        bucket.clear();
        let mut at = self.head[r];
        while at != I::NONE {
            let (position, before) = self.entries[at.get()];
            bucket.push(position);
            at = before;
        }
        // Pushed mostly left to right: reversed, mostly sorted already.
        bucket.reverse();
        bucket.sort_unstable();
        Some(r as u32)
    }
}
