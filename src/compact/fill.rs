//! Filling a budget after a summary: where the raw recent tail starts ([`raw_start`], one search
//! with its options: at least N messages and T tokens, the most that fits a room, or a schedule
//! of steps), and how the texts of a round that does not fit whole share the room left
//! ([`equal_shares`], [`give_way`]). Every start is a cut point: a call is never split from its
//! result.

use super::select::cut_points_of;
use super::structure::{Pairing, Shape, preamble_len_of};

/// What the raw recent tail must be: one configuration of [`raw_start`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RawStart {
    /// The latest cut point after the preamble that keeps at least `messages` messages and
    /// `tokens` tokens raw; the preamble's end when none does.
    AtLeast { messages: usize, tokens: usize },
    /// The earliest cut point (the preamble's end included) whose tail fits `room` tokens: the
    /// most that fits; the number of messages when none does.
    Fits { room: i64 },
    /// A schedule of steps: summarize `first`, then `first + step`, `first + 2·step`, … (up to
    /// the whole) of the messages after the preamble; at each, the latest cut point after the
    /// preamble at or before that message (rounded half to even). The first whose tail fits
    /// `room` tokens; `None` when no step does.
    Steps { first: f64, step: f64, room: i64 },
}

/// Where the raw recent tail of `s` (each message's `tokens`) starts, as `how` asks. Only
/// [`RawStart::Steps`] can find nothing (`None`).
pub fn raw_start<S: Shape + ?Sized>(s: &S, tokens: &[usize], pairing: &Pairing, how: RawStart) -> Option<usize> {
    raw_start_at(
        &cut_points_of(s, pairing),
        preamble_len_of(s),
        s.message_count(),
        tokens,
        how,
    )
}

/// [`raw_start`] of `n` messages whose cut points (ascending, as [`cut_points_of`] gives them)
/// and preamble length are known already (a conversation keeps its cut points once asked for).
pub fn raw_start_at(cuts: &[usize], pre: usize, n: usize, tokens: &[usize], how: RawStart) -> Option<usize> {
    let mut tail = vec![0usize; n + 1];
    for i in (0..n).rev() {
        tail[i] = tail[i + 1] + tokens[i];
    }
    let fits = |c: usize, room: i64| i64::try_from(tail[c]).is_ok_and(|t| t <= room);
    match how {
        RawStart::AtLeast { messages, tokens } => Some(
            cuts.iter()
                .rev()
                .copied()
                .find(|&c| c > pre && n - c >= messages && tail[c] >= tokens)
                .unwrap_or(pre),
        ),
        RawStart::Fits { room } => Some(cuts.iter().copied().find(|&c| fits(c, room)).unwrap_or(n)),
        RawStart::Steps { first, step, room } => {
            let after = (n - pre) as f64;
            for k in 0u32.. {
                let share = first + f64::from(k) * step;
                if !share.is_finite() || share > 1.0 + 1e-9 {
                    return None;
                }
                let at = pre as f64 + (share * after).round_ties_even();
                let start = cuts.iter().rev().copied().find(|&c| c > pre && c as f64 <= at);
                if let Some(c) = start.filter(|&c| fits(c, room)) {
                    return Some(c);
                }
                if step <= 0.0 {
                    return None; // a schedule that does not move has one step
                }
            }
            None
        }
    }
}

/// Equal shares of `total` tokens over texts of `sizes` tokens, smallest first (water-filling):
/// a text under its share stays whole and what it leaves goes to the larger ones. Nothing when
/// `total` is not positive; the shares never sum to more than `total`.
pub fn equal_shares(sizes: &[usize], total: i64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by_key(|&k| sizes[k]); // stable: equal sizes keep their order
    let mut shares = vec![0; sizes.len()];
    let mut left = total;
    for (done, &k) in order.iter().enumerate() {
        if left <= 0 {
            break;
        }
        let even = left / i64::try_from(order.len() - done).unwrap_or(i64::MAX);
        let share = usize::try_from(even).unwrap_or(usize::MAX).min(sizes[k]);
        shares[k] = share;
        left -= i64::try_from(share).unwrap_or(i64::MAX);
    }
    shares
}

/// After the cut texts, counted apart, came out `over` tokens larger together: the largest cut
/// text (share under its size; the first of equals) gives up `over` tokens. False (shares
/// unchanged) when no text is cut or the largest would keep less than one token.
pub fn give_way(shares: &mut [usize], sizes: &[usize], over: usize) -> bool {
    let mut largest: Option<usize> = None;
    for k in 0..shares.len().min(sizes.len()) {
        if shares[k] < sizes[k] && largest.is_none_or(|l| shares[k] > shares[l]) {
            largest = Some(k);
        }
    }
    match largest {
        Some(l) if shares[l] > over => {
            shares[l] -= over;
            true
        }
        _ => false,
    }
}

#[cfg(test)]
#[path = "fill_tests.rs"]
mod tests;
