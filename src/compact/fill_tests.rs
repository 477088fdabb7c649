use super::*;
use crate::compact::select::recent_suffix_of;
use crate::compact::structure::safe_cuts_of;
use crate::compact::testing::{call, chat, xorshift};
use crate::compact::trim::{KeepRequest, plan_keep};
use crate::model::Message;
use serde_json::{Value, json};

/// A random conversation: a system prompt, then user requests, assistant turns with tool calls
/// and their results (sometimes a user message between a call and its result, sometimes a call
/// never answered), and a random token count per message.
fn generated(next: &mut impl FnMut() -> u64) -> (Vec<Message>, Vec<usize>) {
    let mut v = vec![json!({"role": "system", "content": "s"})];
    let mut id = 0;
    for _ in 0..next() % 8 {
        v.push(json!({"role": "user", "content": "ask"}));
        for _ in 0..next() % 4 {
            let calls = next() % 3;
            let ids: Vec<String> = (0..calls).map(|k| format!("c{}", id + k)).collect();
            id += calls;
            if ids.is_empty() {
                v.push(json!({"role": "assistant", "content": "text"}));
                continue;
            }
            let tool_calls: Vec<Value> = ids.iter().map(|i| call(i)).collect();
            v.push(json!({"role": "assistant", "content": null, "tool_calls": tool_calls}));
            if next() % 7 == 0 {
                v.push(json!({"role": "user", "content": "between"}));
            }
            for (k, i) in ids.iter().enumerate() {
                if k > 0 || next() % 9 != 0 {
                    v.push(json!({"role": "tool", "tool_call_id": i, "content": "r"}));
                }
            }
        }
    }
    let tokens = (0..v.len()).map(|_| usize::try_from(next() % 200).unwrap()).collect();
    (chat(Value::Array(v)), tokens)
}

fn tail(tokens: &[usize], from: usize) -> usize {
    tokens[from..].iter().sum()
}

#[test]
fn cut_points_are_safe_group_and_round_starts() {
    let m = chat(json!([
        {"role": "system", "content": "s"},
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": null, "tool_calls": [call("1"), call("2")]},
        {"role": "tool", "tool_call_id": "1", "content": "r1"},
        {"role": "tool", "tool_call_id": "2", "content": "r2"},
        {"role": "assistant", "content": "done"},
        {"role": "user", "content": "b"},
        {"role": "assistant", "content": "ok"},
    ]));
    let p = Pairing::of(&m);
    assert_eq!(cut_points_of(&m[..], &p), vec![1, 2, 5, 6, 7]);
    let tokens = [5, 10, 10, 100, 100, 10, 10, 10];
    let at_least = |messages, tokens_| RawStart::AtLeast {
        messages,
        tokens: tokens_,
    };
    assert_eq!(raw_start(&m[..], &tokens, &p, at_least(2, 0)), Some(6));
    assert_eq!(raw_start(&m[..], &tokens, &p, at_least(3, 0)), Some(5));
    assert_eq!(raw_start(&m[..], &tokens, &p, at_least(0, 21)), Some(5));
    assert_eq!(raw_start(&m[..], &tokens, &p, at_least(0, 31)), Some(2));
    assert_eq!(raw_start(&m[..], &tokens, &p, at_least(9, 0)), Some(1)); // none: the preamble's end
    assert_eq!(raw_start(&m[..], &tokens, &p, RawStart::Fits { room: 30 }), Some(5));
    assert_eq!(raw_start(&m[..], &tokens, &p, RawStart::Fits { room: 239 }), Some(5));
    assert_eq!(raw_start(&m[..], &tokens, &p, RawStart::Fits { room: 240 }), Some(2));
    assert_eq!(raw_start(&m[..], &tokens, &p, RawStart::Fits { room: 250 }), Some(1));
    assert_eq!(raw_start(&m[..], &tokens, &p, RawStart::Fits { room: 9 }), Some(8)); // nothing fits
    assert_eq!(raw_start(&m[..], &tokens, &p, RawStart::Fits { room: -1 }), Some(8));
}

#[test]
fn steps_take_the_first_share_whose_cut_point_fits() {
    let m = chat(json!([
        {"role": "system", "content": "s"},
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "1"},
        {"role": "user", "content": "b"},
        {"role": "assistant", "content": "2"},
        {"role": "user", "content": "c"},
        {"role": "assistant", "content": "3"},
        {"role": "user", "content": "d"},
        {"role": "assistant", "content": "4"},
        {"role": "user", "content": "e"},
        {"role": "assistant", "content": "5"},
    ]));
    let p = Pairing::of(&m);
    let tokens = [0, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10];
    let steps = |first, room| RawStart::Steps { first, step: 0.1, room };
    // 30% of 10 messages: message 4, whose latest cut point is 4 (tail 70 tokens).
    assert_eq!(raw_start(&m[..], &tokens, &p, steps(0.3, 70)), Some(4));
    // 50 tokens: 40% (message 5) is a cut point whose tail is 60, 50% (message 6) fits.
    assert_eq!(raw_start(&m[..], &tokens, &p, steps(0.3, 50)), Some(6));
    // 25% of 10 is 2.5, rounded half to even: message 3.
    assert_eq!(raw_start(&m[..], &tokens, &p, steps(0.25, 1000)), Some(3));
    // No step leaves a tail that fits: 100% is message 11, whose latest cut point is 10.
    assert_eq!(raw_start(&m[..], &tokens, &p, steps(0.3, 5)), None);
    assert_eq!(raw_start(&m[..], &tokens, &p, steps(0.3, 10)), Some(10));
    // Never the preamble's end (0% is message 1: the next step's), and a schedule that does
    // not move is one step.
    assert_eq!(raw_start(&m[..], &tokens, &p, steps(0.0, 1000)), Some(2));
    let still = RawStart::Steps {
        first: 0.3,
        step: 0.0,
        room: 50,
    };
    assert_eq!(raw_start(&m[..], &tokens, &p, still), None);
}

#[test]
fn raw_starts_are_cut_points_that_meet_their_option_and_move_with_it() {
    let mut next = xorshift(0x51ed_270b_27a1_4c0d);
    for _ in 0..400 {
        let (m, tokens) = generated(&mut next);
        let pairing = Pairing::of(&m);
        let n = m.len();
        let safe = safe_cuts_of(&m[..], &pairing);
        let cuts = cut_points_of(&m[..], &pairing);
        let pre = 1.min(n);
        // At least N messages and T tokens: the latest such cut point, later as N and T shrink.
        let mut last = n;
        for least in 0..=n {
            let r = raw_start(
                &m[..],
                &tokens,
                &pairing,
                RawStart::AtLeast {
                    messages: least,
                    tokens: 0,
                },
            )
            .unwrap();
            assert!(safe[r] && r <= last);
            assert!(r == pre || (cuts.contains(&r) && n - r >= least));
            assert!(cuts.iter().all(|&c| c <= r || n - c < least));
            last = r;
        }
        let least = usize::try_from(next() % 600).unwrap();
        let r = raw_start(
            &m[..],
            &tokens,
            &pairing,
            RawStart::AtLeast {
                messages: 0,
                tokens: least,
            },
        )
        .unwrap();
        assert!(r == pre || tail(&tokens, r) >= least);
        // The most that fits a room: the earliest fitting cut point, earlier as the room grows.
        let mut last = n;
        for room in (-5..900).step_by(37) {
            let r = raw_start(&m[..], &tokens, &pairing, RawStart::Fits { room }).unwrap();
            assert!((r == n || safe[r]) && r <= last);
            let fits = |c: usize| i64::try_from(tail(&tokens, c)).unwrap() <= room;
            assert!(r == n || (cuts.contains(&r) && fits(r)));
            assert!(cuts.iter().all(|&c| c >= r || !fits(c)));
            last = r;
        }
        // Steps: a cut point after the preamble that fits, no later as the room grows.
        let first = f64::from(u32::try_from(next() % 10).unwrap()) / 10.0;
        let mut last: Option<usize> = None;
        for room in (0..900).step_by(41) {
            let r = raw_start(&m[..], &tokens, &pairing, RawStart::Steps { first, step: 0.1, room });
            if let Some(r) = r {
                assert!(safe[r] && r > pre && cuts.contains(&r));
                assert!(tail(&tokens, r) <= usize::try_from(room).unwrap());
                assert!(last.is_none_or(|l| r <= l));
            } else {
                assert!(
                    last.is_none(),
                    "a larger room found nothing where a smaller found a start"
                );
            }
            last = r.or(last);
        }
    }
}

#[test]
fn equal_shares_fill_from_the_smallest() {
    assert_eq!(equal_shares(&[10, 100, 1000], 600), vec![10, 100, 490]);
    assert_eq!(equal_shares(&[1000, 100, 10], 600), vec![490, 100, 10]);
    assert_eq!(equal_shares(&[500, 500, 500], 1000), vec![333, 333, 334]);
    assert_eq!(equal_shares(&[5, 7], 100), vec![5, 7]);
    assert_eq!(equal_shares(&[5, 7], 0), vec![0, 0]);
    assert_eq!(equal_shares(&[5, 7], -40), vec![0, 0]);
    assert_eq!(equal_shares(&[], 40), Vec::<usize>::new());
}

#[test]
fn equal_shares_never_exceed_sizes_or_the_total_and_grow_with_it() {
    let mut next = xorshift(0x2545_f491_4f6c_dd1d);
    for _ in 0..500 {
        let sizes: Vec<usize> = (0..next() % 9)
            .map(|_| usize::try_from(next() % 3000).unwrap())
            .collect();
        let sum: usize = sizes.iter().sum();
        let mut before = vec![0; sizes.len()];
        for total in (-100..i64::try_from(sum).unwrap() + 200).step_by(97) {
            let shares = equal_shares(&sizes, total);
            assert!(shares.iter().zip(&sizes).all(|(s, z)| s <= z));
            assert!(i64::try_from(shares.iter().sum::<usize>()).unwrap() <= total.max(0));
            // Every cut text gets at least what any whole one keeps, less the rounding.
            let cut_least = shares.iter().zip(&sizes).filter(|(s, z)| s < z).map(|(s, _)| *s).min();
            if let Some(least) = cut_least.filter(|_| total >= 0) {
                assert!(shares.iter().zip(&sizes).all(|(s, z)| s < z || *s <= least + 1));
                assert_eq!(shares.iter().sum::<usize>(), usize::try_from(total).unwrap());
            }
            assert!(
                shares.iter().zip(&before).all(|(s, b)| s + 1 >= *b),
                "{sizes:?} {total}"
            );
            before = shares;
        }
        assert_eq!(equal_shares(&sizes, i64::try_from(sum).unwrap()), sizes);
    }
}

#[test]
fn the_largest_cut_text_gives_way() {
    let sizes = [100, 100, 10];
    let mut shares = vec![40, 40, 10];
    assert!(give_way(&mut shares, &sizes, 15));
    assert_eq!(shares, vec![25, 40, 10]); // the first of equals
    assert!(give_way(&mut shares, &sizes, 39));
    assert_eq!(shares, vec![25, 1, 10]);
    assert!(!give_way(&mut shares, &sizes, 25)); // it would keep nothing
    assert_eq!(shares, vec![25, 1, 10]);
    let mut whole = vec![100, 100, 10];
    assert!(!give_way(&mut whole, &sizes, 1)); // nothing is cut
}

/// The ladder's drop as it was written in Python: the suffix that fits beside a marker; the
/// latest request `q` when that suffix leaves it out, with the longest suffix that fits beside
/// it and two markers; `None` (the oversized rung) when either does not fit.
fn reference_drop(
    m: &[Message],
    tokens: &[usize],
    p: &Pairing,
    limit: usize,
    marker: usize,
    q: Option<usize>,
) -> Option<(Vec<usize>, Option<usize>)> {
    let pre = crate::compact::structure::preamble_len(m);
    let system: usize = tokens[..pre].iter().sum();
    if system + marker > limit {
        // The preamble and the marker alone are over: nothing fits beside them (not even the
        // messages these histories count 0 tokens).
        return None;
    }
    let s = recent_suffix_of(m, tokens, p, limit.saturating_sub(marker).saturating_sub(system));
    if s.overflow.is_some() {
        return None;
    }
    let q = q.filter(|&q| pre <= q && q < s.start);
    let Some(q) = q else {
        return Some(((0..pre).chain(s.start..m.len()).collect(), None));
    };
    let rest = recent_suffix_of(
        m,
        tokens,
        p,
        limit.saturating_sub(tokens[q] + 2 * marker).saturating_sub(system),
    );
    if rest.overflow.is_some() || rest.start <= q {
        return None;
    }
    Some(((0..pre).chain([q]).chain(rest.start..m.len()).collect(), Some(q)))
}

#[test]
fn keeping_the_request_never_splits_a_call_fits_and_matches_the_drop() {
    let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
    let marker = 30;
    for _ in 0..400 {
        let (m, tokens) = generated(&mut next);
        let p = Pairing::of(&m);
        let n = m.len();
        let total: usize = tokens.iter().sum();
        let q = crate::compact::request::latest_request(&m).map(|(i, _)| i);
        let mut before: Option<Vec<usize>> = None;
        for limit in (0..total + 2 * marker).step_by(23) {
            let drop = KeepRequest {
                at: q,
                beside: marker,
                cut: false,
                strict: false,
            };
            let got = plan_keep(&m[..], &tokens, &p, (limit, marker), drop, |_| 0).ok();
            if total + marker > limit {
                let want = reference_drop(&m, &tokens, &p, limit, marker, q);
                assert_eq!(got.as_ref().map(|t| (t.keep.clone(), t.apart)), want, "limit {limit}");
            }
            let strict = KeepRequest { strict: true, ..drop };
            let Ok(plan) = plan_keep(&m[..], &tokens, &p, (limit, marker), strict, |_| 0) else {
                assert!(before.is_none(), "a larger budget refused what a smaller one kept");
                continue;
            };
            let kept: Vec<bool> = (0..n).map(|i| plan.keep.contains(&i)).collect();
            for c in &p.calls {
                if let Some(r) = c.result {
                    assert_eq!(kept[c.at.0], kept[r.0], "a call split from its result at {limit}");
                }
            }
            let used: usize = plan.keep.iter().map(|&i| tokens[i]).sum();
            assert!(used + marker + plan.apart.map_or(0, |_| marker) <= limit || plan.keep.len() == n);
            assert!(plan.keep.windows(2).all(|w| w[0] < w[1]));
            if let Some(b) = &before {
                assert!(b.iter().all(|i| plan.keep.contains(i)), "a larger budget kept less");
            }
            before = Some(plan.keep);
        }
    }
}

#[test]
fn a_conversations_kept_cut_points_give_the_raw_starts_of_a_fresh_search() {
    use crate::conversation::Conversation;
    use crate::model::Format;
    use crate::tokens::Encoding;
    let mut next = xorshift(0x0dd_c0ffee);
    for _ in 0..200 {
        let (m, tokens) = generated(&mut next);
        let pairing = Pairing::of(&m);
        let conv = Conversation::from_messages(Format::OpenAiChat, Encoding::Approximate, m.clone());
        let pre = crate::compact::structure::preamble_len(&m);
        let room = i64::try_from(next() % 600).unwrap();
        for how in [
            RawStart::Fits { room },
            RawStart::AtLeast {
                messages: usize::try_from(next() % 6).unwrap(),
                tokens: usize::try_from(next() % 300).unwrap(),
            },
            RawStart::Steps {
                first: 0.25,
                step: 0.25,
                room,
            },
        ] {
            let kept = raw_start_at(conv.cut_points(), pre, m.len(), &tokens, how);
            assert_eq!(kept, raw_start(&m[..], &tokens, &pairing, how));
        }
    }
}
