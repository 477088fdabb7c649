//! Where [`super::truncate`] cuts: head and tail ends in chars, bytes and lines on line
//! boundaries, token-budget fitting by lines then binary search, and the final shrink to fit.

use super::{MIN_LINE_CUT_SHARE, Retrieval, Size, Truncation, Unit, compose, marker};
use crate::tokens::Encoding;

/// The byte index where a head of at most `room` units ends.
pub(super) fn cut_head(text: &str, room: usize, unit: Unit) -> usize {
    if room == 0 {
        return 0;
    }
    let end = match unit {
        Unit::Bytes => floor_char_boundary(text, room.min(text.len())),
        Unit::Chars => text.char_indices().nth(room).map_or(text.len(), |(i, _)| i),
        Unit::Lines => {
            return text
                .match_indices('\n')
                .nth(room - 1)
                .map_or(text.len(), |(i, _)| i + 1);
        }
        Unit::Tokens(_) => unreachable!("token budgets are fitted by fit_tokens"),
    };
    if end == text.len() {
        return end;
    }
    // Prefer to end after a line break, if that keeps enough of the room.
    match text[..end].rfind('\n') {
        Some(nl) if (nl + 1) as f64 >= end as f64 * MIN_LINE_CUT_SHARE => nl + 1,
        _ => end,
    }
}

/// The byte index where a tail of at most `room` units starts.
pub(super) fn cut_tail(text: &str, room: usize, unit: Unit) -> usize {
    if room == 0 {
        return text.len();
    }
    let start = match unit {
        Unit::Bytes => ceil_char_boundary(text, text.len().saturating_sub(room)),
        Unit::Chars => text.char_indices().rev().nth(room - 1).map_or(0, |(i, _)| i),
        Unit::Lines => {
            // The last `room` lines: skip a final line break, then find `room` more.
            let body = text.strip_suffix('\n').unwrap_or(text);
            return body.rmatch_indices('\n').nth(room - 1).map_or(0, |(i, _)| i + 1);
        }
        Unit::Tokens(_) => unreachable!("token budgets are fitted by fit_tokens"),
    };
    if start == 0 {
        return 0;
    }
    let kept = text.len() - start;
    // Prefer to start at the beginning of a line, if that keeps enough of the room.
    match text[start..].find('\n') {
        Some(nl) if (kept - nl - 1) as f64 >= kept as f64 * MIN_LINE_CUT_SHARE && start + nl + 1 < text.len() => {
            start + nl + 1
        }
        _ => start,
    }
}

fn floor_char_boundary(text: &str, mut i: usize) -> usize {
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char_boundary(text: &str, mut i: usize) -> usize {
    while !text.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// Whether `text` fits `limit` tokens, without tokenizing all of a text that is obviously larger.
pub(super) fn fits_tokens(text: &str, limit: usize, enc: Encoding) -> bool {
    // No token is longer than ~128 bytes and none is shorter than one byte; a text over
    // 128 * limit bytes cannot fit, and counting it whole would be wasted work.
    if text.len() > limit.saturating_mul(128) {
        return false;
    }
    enc.count(text) <= limit
}

/// Find head end and tail start for token budgets by walking lines from each end and counting
/// only the lines that are kept (plus one), then splitting the last line by binary search.
/// Returns head end, tail start and an upper bound on the tokens of both (the sum of what was
/// counted piece by piece).
pub(super) fn fit_tokens(text: &str, head_room: usize, tail_room: usize, enc: Encoding) -> (usize, usize, usize) {
    let (head_end, head_used) = fit_head_tokens(text, head_room, enc);
    let (tail_start, tail_used) = fit_tail_tokens(&text[head_end..], tail_room, enc);
    (head_end, tail_start + head_end, head_used + tail_used)
}

fn fit_head_tokens(text: &str, room: usize, enc: Encoding) -> (usize, usize) {
    let mut used = 0;
    let mut end = 0;
    for line in text.split_inclusive('\n') {
        let n = enc.count(line);
        if used + n > room {
            // Part of this line, unless whole lines already fill enough of the room.
            if end > 0 && used as f64 >= room as f64 * MIN_LINE_CUT_SHARE {
                return (end, used);
            }
            return (end + largest_prefix(line, room - used, enc), room);
        }
        used += n;
        end += line.len();
    }
    (end, used)
}

fn fit_tail_tokens(text: &str, room: usize, enc: Encoding) -> (usize, usize) {
    let mut used = 0;
    let mut start = text.len();
    for line in text.rsplit_terminator('\n') {
        // Each line with its line break (the last line may have none).
        let line_start = start.saturating_sub(line.len() + usize::from(start < text.len() || text.ends_with('\n')));
        let piece = &text[line_start..start];
        let n = enc.count(piece);
        if used + n > room {
            if start < text.len() && used as f64 >= room as f64 * MIN_LINE_CUT_SHARE {
                return (start, used);
            }
            return (line_start + largest_suffix(piece, room - used, enc), room);
        }
        used += n;
        start = line_start;
    }
    (start, used)
}

/// The byte length of the longest prefix of `s` that fits `room` tokens (binary search over
/// character boundaries, counting only the candidate prefix).
fn largest_prefix(s: &str, room: usize, enc: Encoding) -> usize {
    let bounds: Vec<usize> = s.char_indices().map(|(i, _)| i).chain([s.len()]).collect();
    let (mut lo, mut hi) = (0usize, bounds.len() - 1);
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if enc.count(&s[..bounds[mid]]) <= room {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    bounds[lo]
}

/// The byte offset where the longest suffix of `s` that fits `room` tokens starts.
fn largest_suffix(s: &str, room: usize, enc: Encoding) -> usize {
    let bounds: Vec<usize> = s.char_indices().map(|(i, _)| i).chain([s.len()]).collect();
    let (mut lo, mut hi) = (0usize, bounds.len() - 1);
    // Find the smallest index whose suffix fits.
    while lo < hi {
        let mid = usize::midpoint(lo, hi);
        if enc.count(&s[bounds[mid]..]) <= room {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    bounds[lo]
}

pub(super) fn shrink_to_tokens(text: &str, r: &mut Truncation, limit: usize, enc: Encoding, retrieval: &Retrieval) {
    for _ in 0..64 {
        if enc.count(&r.text) <= limit {
            return;
        }
        let (mut head_end, mut tail_start) = (r.head_bytes, text.len() - r.tail_bytes);
        if r.head_bytes >= r.tail_bytes && head_end > 0 {
            head_end = text[..head_end - 1].rfind('\n').map_or(0, |i| i + 1);
            head_end = head_end.min(floor_char_boundary(text, r.head_bytes * 9 / 10));
        } else if tail_start < text.len() {
            tail_start = match text[tail_start..].find('\n') {
                Some(i) if tail_start + i + 1 < text.len() => tail_start + i + 1,
                _ => ceil_char_boundary(text, tail_start + (text.len() - tail_start) / 10 + 1),
            };
        } else {
            break;
        }
        let omitted = Size::of(&text[head_end..tail_start]);
        let tokens = r.omitted_tokens.map(|_| enc.count(&text[head_end..tail_start]));
        let mark = marker(omitted, tokens, retrieval);
        r.text = compose(text, head_end, tail_start, &mark);
        r.head_bytes = head_end;
        r.tail_bytes = text.len() - tail_start;
        r.omitted = omitted;
        r.omitted_tokens = tokens;
    }
}
