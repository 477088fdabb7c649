//! `trim_messages`: fit a whole list into a token budget by keeping the system messages, the
//! latest real user request and the longest recent suffix that fits, never separating a tool
//! call from its result.
//!
//! The request is what the kept turns answer: a list without it leaves the model without the
//! task, and one that opens with the assistant is rejected by Anthropic. So the latest real user
//! request ([`super::request::latest_ask`]: not only tool results, not a task notification or an
//! interruption marker; a summary of earlier history when no request follows it) is always
//! kept — verbatim when it fits beside the last round after it, else cut to head + marker +
//! tail — or the budget is refused.

use crate::budget::{self, Strategy, Unit};
use crate::conversation::Conversation;
use crate::error::Error;
use crate::model::{Body, Message};
use crate::tokens::Encoding;

use super::clear::ClearOptions;
use super::repair::repair_request;
use super::request::latest_ask;
use super::select::recent_suffix_of;
use super::structure::{Pairing, Shape, groups_of, preamble_len_of, safe_cuts_of};
use super::surgery::{self, Protection};

/// The least a cut request's text keeps (tokens, its marker included) before the budget is
/// refused instead.
pub const MIN_REQUEST_TOKENS: usize = 64;

/// Share of a cut request's room that goes to its head (the rest to its tail).
const REQUEST_HEAD_SHARE: f64 = 0.6;

/// What to keep of a list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrimPlan {
    /// Indices of the kept messages, in order.
    pub keep: Vec<usize>,
    /// The latest request cut to fit: its index and the tokens the whole message may take.
    pub shrink: Option<(usize, usize)>,
    /// The request kept apart from the recent suffix (the messages between them left out).
    pub apart: Option<usize>,
}

impl TrimPlan {
    fn all(n: usize) -> Self {
        TrimPlan {
            keep: (0..n).collect(),
            shrink: None,
            apart: None,
        }
    }

    fn suffix(pre: usize, start: usize, n: usize) -> Self {
        TrimPlan {
            keep: (0..pre).chain(start..n).collect(),
            shrink: None,
            apart: None,
        }
    }
}

/// The request [`plan_keep`] keeps beside the recent suffix, and how.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeepRequest {
    /// The message to keep (the latest ask); `None`, or one outside the history after the
    /// preamble: only the suffix.
    pub at: Option<usize>,
    /// Tokens left free beside the request when it is kept apart (a marker after it, say).
    pub beside: usize,
    /// Whether the request is cut when the last round after it does not fit beside it whole (else
    /// the budget is refused).
    pub cut: bool,
    /// Whether a request inside a tool interaction refuses the budget (else it is kept apart as
    /// any other).
    pub strict: bool,
}

/// Whether `total` tokens fit `max_tokens` with `reserve` of it kept free (a reserve of all of it
/// or more leaves room for nothing: no sum that stops at the largest number says it fits).
pub fn fits(total: usize, reserve: usize, max_tokens: usize) -> bool {
    reserve <= max_tokens && total <= max_tokens - reserve
}

fn refuse(limit: usize, needed: usize, what: String) -> Error {
    Error::TrimBudget { limit, needed, what }
}

/// Which messages fit `max_tokens` less `reserve`, given each message's `tokens`: the preamble,
/// the latest request and the longest recent suffix that fits beside them (see the module).
///
/// # Errors
/// [`Error::TrimBudget`] when the preamble, the request cut to [`MIN_REQUEST_TOKENS`] (plus the
/// message's other tokens) and the last round after it do not fit together.
pub fn plan<S: Shape + ?Sized>(
    messages: &S,
    tokens: &[usize],
    pairing: &Pairing,
    max_tokens: usize,
    reserve: usize,
    overhead: impl Fn(usize) -> usize,
) -> Result<TrimPlan, Error> {
    let request = KeepRequest {
        at: latest_ask(messages, preamble_len_of(messages)).map(|(i, _)| i),
        beside: 0,
        cut: true,
        strict: true,
    };
    plan_keep(messages, tokens, pairing, (max_tokens, reserve), request, overhead)
}

/// The preamble, `request` and the longest recent suffix that fit `budget` (`max_tokens`,
/// `reserve`) together: the suffix alone when it holds the request (or there is none), else the
/// request kept apart with the longest suffix after it that fits beside it (cut as `request` says
/// when not even the last round does). [`plan`] is this with the latest ask, cut when needed.
///
/// # Errors
/// [`Error::TrimBudget`] when the last round does not fit, or the request and the last round
/// after it do not fit together (cut to [`MIN_REQUEST_TOKENS`] when `request.cut`).
pub fn plan_keep<S: Shape + ?Sized>(
    messages: &S,
    tokens: &[usize],
    pairing: &Pairing,
    (max_tokens, reserve): (usize, usize),
    request: KeepRequest,
    overhead: impl Fn(usize) -> usize,
) -> Result<TrimPlan, Error> {
    let n = messages.message_count();
    let total: usize = tokens.iter().sum();
    if fits(total, reserve, max_tokens) {
        return Ok(TrimPlan::all(n));
    }
    let pre = preamble_len_of(messages);
    let fixed = tokens[..pre].iter().sum::<usize>().saturating_add(reserve);
    // (With the preamble and reserve alone over, no room is left: not even for messages counted
    // 0 tokens, which "fit" a room of none.)
    let over = fixed > max_tokens;
    let available = max_tokens.saturating_sub(fixed);
    let suffix = recent_suffix_of(messages, tokens, pairing, available);
    let Some(u) = request.at.filter(|u| (pre..n).contains(u)) else {
        // No request to keep: the longest suffix that fits.
        if let Some(overflow) = suffix.overflow {
            let round = tokens[overflow].iter().sum::<usize>();
            return Err(refuse(
                max_tokens,
                fixed.saturating_add(round),
                format!("the system messages and reserved output ({fixed}) and the last round, never split ({round})"),
            ));
        }
        if over {
            return Err(refuse(
                max_tokens,
                fixed,
                format!("the system messages and reserved output ({fixed})"),
            ));
        }
        return Ok(TrimPlan::suffix(pre, suffix.start, n));
    };
    if suffix.overflow.is_none() && suffix.start <= u && !over {
        return Ok(TrimPlan::suffix(pre, suffix.start, n));
    }
    let safe = safe_cuts_of(messages, pairing);
    if request.strict && (!safe[u] || (u + 1 < n && !safe[u + 1])) {
        // The request sits inside a tool interaction (an Anthropic user message with a call's
        // result and the user's words, or invalid order): it cannot be kept apart from what
        // surrounds it, and dropping it is not an option. What works is a suffix from the latest
        // group start before it that cuts no call from its result.
        let from = groups_of(messages)
            .iter()
            .map(|g| g.start)
            .filter(|&s| s <= u && safe[s])
            .max()
            .unwrap_or(pre);
        let rest = tokens[from..].iter().sum::<usize>();
        let what = if from < u {
            "everything from the tool interaction holding the latest user request on"
        } else {
            "everything from the latest user request on"
        };
        return Err(refuse(
            max_tokens,
            fixed.saturating_add(rest),
            format!("the system messages and reserved output ({fixed}) and {what} ({rest})"),
        ));
    }
    if carries_results(pairing, u) {
        let room = (max_tokens, fixed, available);
        return keep_interaction(messages, tokens, pairing, &safe, room, (pre, u), request.beside);
    }
    // The request, then the longest suffix after it that fits beside it.
    let after = recent_suffix_of(
        messages,
        tokens,
        pairing,
        available.saturating_sub(tokens[u] + request.beside),
    );
    if after.overflow.is_none() && after.start > u && !over {
        let keep = (0..pre).chain(std::iter::once(u)).chain(after.start..n).collect();
        return Ok(TrimPlan {
            keep,
            shrink: None,
            apart: Some(u),
        });
    }
    let tail = after.overflow.map_or(n, |r| r.start).max(u + 1);
    shrink_request(
        tokens,
        (max_tokens, fixed, available),
        (pre, u, tail),
        request,
        overhead,
    )
}

/// Whether message `u` holds the results of calls before it (an Anthropic user message with
/// `tool_result` blocks and text): then it is kept with them, never alone ([`keep_interaction`]).
fn carries_results(pairing: &Pairing, u: usize) -> bool {
    pairing
        .calls
        .iter()
        .any(|c| c.at.0 < u && c.result.is_some_and(|r| r.0 == u))
}

/// Request `u` carries the results of calls before it: the preamble, the messages from the latest
/// safe cut before `u` to the first one after it, and the longest suffix after them that fits
/// beside them with `beside` tokens free; refused (never cut: the message is not plain text) when
/// not even the last round after them does.
fn keep_interaction<S: Shape + ?Sized>(
    messages: &S,
    tokens: &[usize],
    pairing: &Pairing,
    safe: &[bool],
    (max_tokens, fixed, available): (usize, usize, usize),
    (pre, u): (usize, usize),
    beside: usize,
) -> Result<TrimPlan, Error> {
    let n = tokens.len();
    let from = (pre..=u).rev().find(|&s| safe[s]).unwrap_or(pre);
    let to = (u + 1..=n).find(|&s| safe[s]).unwrap_or(n);
    let block: usize = tokens[from..to].iter().sum();
    let after = recent_suffix_of(messages, tokens, pairing, available.saturating_sub(block + beside));
    if after.overflow.is_none() && after.start >= to && block + beside <= available && fixed <= max_tokens {
        let keep = (0..pre).chain(from..to).chain(after.start..n).collect();
        return Ok(TrimPlan {
            keep,
            shrink: None,
            apart: Some(u),
        });
    }
    let tail = after.overflow.map_or(n, |r| r.start).max(to);
    let tail_tokens: usize = tokens[tail..].iter().sum();
    Err(refuse(
        max_tokens,
        fixed
            .saturating_add(block)
            .saturating_add(beside)
            .saturating_add(tail_tokens),
        format!(
            "the system messages and reserved output ({fixed}), the latest user request with the results it carries \
             and their calls ({block}) and the last round after them ({tail_tokens})"
        ),
    ))
}

/// Even the last round after request `u` (from `tail`) does not fit beside it whole: the preamble,
/// `u` cut to the room left and the messages from `tail`, when `request.cut` and `u` can keep its
/// least beside them.
fn shrink_request(
    tokens: &[usize],
    (max_tokens, fixed, available): (usize, usize, usize),
    (pre, u, tail): (usize, usize, usize),
    request: KeepRequest,
    overhead: impl Fn(usize) -> usize,
) -> Result<TrimPlan, Error> {
    let tail_tokens: usize = tokens[tail..].iter().sum();
    let least = overhead(u) + MIN_REQUEST_TOKENS.min(tokens[u] - overhead(u));
    let available = available.saturating_sub(request.beside);
    if !request.cut || tail_tokens + least > available || fixed > max_tokens {
        let request = if !request.cut {
            "never cut"
        } else if overhead(u) >= tokens[u] {
            "not plain text, so never cut"
        } else {
            "cut to its least"
        };
        let what = format!(
            "the system messages and reserved output ({fixed}), the latest user request ({request}: {least}) and the \
             last round after it ({tail_tokens})"
        );
        return Err(refuse(
            max_tokens,
            fixed.saturating_add(tail_tokens).saturating_add(least),
            what,
        ));
    }
    let room = available - tail_tokens;
    let keep = (0..pre).chain(std::iter::once(u)).chain(tail..tokens.len()).collect();
    Ok(TrimPlan {
        keep,
        shrink: (room < tokens[u]).then_some((u, room)),
        apart: Some(u),
    })
}

/// `text` cut to head + marker + tail within `limit` tokens of `encoding`.
///
/// # Errors
/// [`Error::BudgetTooSmall`] when `limit` cannot hold the marker.
pub fn cut_request(text: &str, limit: usize, encoding: Encoding) -> Result<String, Error> {
    let options = budget::Options::default();
    let strategy = Strategy::HeadTail {
        head_share: REQUEST_HEAD_SHARE,
    };
    Ok(budget::truncate(text, limit, Unit::Tokens(encoding), strategy, &options)?.text)
}

/// The text of a message made of one text block, the only shape a request is cut in.
fn single_text(m: &Message) -> Option<&str> {
    match &*m.blocks {
        [b] => match &b.body {
            Body::Text { text } => Some(text),
            _ => None,
        },
        _ => None,
    }
}

/// `trim_messages` over a parsed conversation: repaired first when no provider would accept it
/// ([`repair_request`]); when it does not fit, clear old tool results
/// (when `clear` gives the protection and options to clear with), then keep what [`plan`] says.
///
/// # Errors
/// [`Error::TrimBudget`] as [`plan`], also when the request must be cut but is not one text.
pub fn trim(
    conv: &Conversation,
    max_tokens: usize,
    reserve: usize,
    clear: Option<(Protection, &ClearOptions)>,
) -> Result<Vec<Message>, Error> {
    // A list no provider accepts (a call without its result, a result without its call) is
    // repaired first: what is sent is always pair-valid.
    let repaired;
    let conv = match repair_request(conv.messages()) {
        Some(messages) => {
            repaired = Conversation::from_messages(conv.format(), conv.encoding(), messages);
            &repaired
        }
        None => conv,
    };
    if fits(conv.total_tokens(), reserve, max_tokens) {
        return Ok(conv.messages().to_vec());
    }
    let cleared;
    let conv = match clear {
        Some((protection, options)) => {
            cleared = surgery::clear(conv, protection, options).0;
            if fits(cleared.total_tokens(), reserve, max_tokens) {
                return Ok(cleared.messages().to_vec());
            }
            &cleared
        }
        None => conv,
    };
    let messages = conv.messages();
    let totals = conv.totals();
    let pairing = Pairing::of(messages);
    let enc = conv.encoding();
    let overhead = |i: usize| single_text(&messages[i]).map_or(totals[i], |t| totals[i].saturating_sub(enc.count(t)));
    let plan = plan(messages, &totals, &pairing, max_tokens, reserve, overhead)?;
    let mut out: Vec<Message> = plan.keep.iter().map(|&i| messages[i].clone()).collect();
    if let Some((u, room)) = plan.shrink {
        let Some(text) = single_text(&messages[u]) else {
            return Err(refuse(
                max_tokens,
                max_tokens + totals[u] - room,
                "the latest user request, which is not plain text and cannot be cut".to_owned(),
            ));
        };
        let cut = cut_request(text, room - overhead(u), enc)?;
        let at = plan.keep.iter().position(|&i| i == u).expect("the request is kept");
        let mut m = messages[u].clone();
        let mut blocks = m.blocks.to_vec();
        blocks[0].body = Body::Text { text: cut };
        m.blocks = blocks.into();
        out[at] = m;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::testing::{call, chat, xorshift};
    use crate::model::{Format, Role};
    use serde_json::{Value, json};

    fn conv(v: Value) -> Conversation {
        Conversation::from_messages(Format::OpenAiChat, Encoding::O200k, chat(v))
    }

    /// A system prompt, one request, then `rounds` tool rounds of `size` words each.
    fn agent(request: &str, rounds: usize, size: usize) -> Conversation {
        let mut v = vec![
            json!({"role": "system", "content": "You are a coding agent."}),
            json!({"role": "user", "content": request}),
        ];
        for i in 0..rounds {
            let id = format!("c{i}");
            v.push(json!({"role": "assistant", "content": null, "tool_calls": [call(&id)]}));
            v.push(json!({"role": "tool", "tool_call_id": id, "content": "word ".repeat(size)}));
        }
        conv(Value::Array(v))
    }

    fn requests(out: &[Message]) -> Vec<&str> {
        out.iter()
            .filter(|m| m.role == Role::User)
            .filter_map(single_text)
            .collect()
    }

    #[test]
    fn keeps_the_request_when_the_suffix_after_it_is_all_that_fits() {
        let c = agent("fix the bug in foo.py", 3, 300);
        let budget = c.total_tokens() / 2;
        let out = trim(&c, budget, 0, None).unwrap();
        assert_eq!(out[0].role, Role::System);
        assert_eq!(requests(&out), vec!["fix the bug in foo.py"]);
        assert_eq!(out[1].role, Role::User);
        assert_eq!(out[2].role, Role::Assistant);
        let kept = Conversation::from_messages(Format::OpenAiChat, Encoding::O200k, out.clone());
        assert!(kept.total_tokens() <= budget);
        assert!(crate::compact::validate(&out).is_empty());
        // The last round is kept; the ones in between are dropped.
        assert_eq!(out.len(), 4);
    }

    #[test]
    fn cuts_a_request_too_large_to_keep_whole() {
        let request = format!("START {} END", "please read this carefully ".repeat(400));
        let c = agent(&request, 2, 50);
        let budget = 400;
        let out = trim(&c, budget, 0, None).unwrap();
        let kept = Conversation::from_messages(Format::OpenAiChat, Encoding::O200k, out.clone());
        assert!(kept.total_tokens() <= budget, "{}", kept.total_tokens());
        let text = requests(&out)[0];
        assert!(
            text.starts_with("START please") && text.ends_with("carefully  END"),
            "{text}"
        );
        assert!(text.contains("omitted"));
        assert_eq!(out.last().unwrap().role, Role::Tool);
        assert!(crate::compact::validate(&out).is_empty());
    }

    #[test]
    fn refuses_a_budget_that_cannot_hold_the_request_and_the_last_round() {
        let c = agent("fix it", 2, 400);
        let err = trim(&c, 300, 0, None).unwrap_err();
        assert!(matches!(err, Error::TrimBudget { limit: 300, .. }), "{err}");
        assert!(err.to_string().contains("latest user request"), "{err}");
    }

    #[test]
    fn fits_whole_and_plain_suffixes_are_unchanged() {
        let c = agent("fix it", 2, 10);
        assert_eq!(trim(&c, 10_000, 0, None).unwrap().len(), c.len());
        let v = json!([
            {"role": "user", "content": "a ".repeat(500)},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "b"},
            {"role": "assistant", "content": "done"},
        ]);
        let c = conv(v);
        let out = trim(&c, 100, 0, None).unwrap();
        assert_eq!(requests(&out), vec!["b"]);
        assert_eq!(out.len(), 2);
    }

    #[test]
    fn the_latest_request_is_always_kept_or_the_budget_refused() {
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        for _ in 0..200 {
            let rounds = usize::try_from(next() % 6).unwrap();
            let size = usize::try_from(next() % 300).unwrap() + 1;
            let words = usize::try_from(next() % 500).unwrap() + 1;
            let request = format!("R {}Z", "ask ".repeat(words));
            let c = agent(&request, rounds, size);
            let budget = usize::try_from(next() % (c.total_tokens() as u64 + 50)).unwrap();
            match trim(&c, budget, 0, None) {
                Ok(out) => {
                    let kept = Conversation::from_messages(Format::OpenAiChat, Encoding::O200k, out.clone());
                    assert!(kept.total_tokens() <= budget);
                    let r = requests(&out);
                    assert_eq!(r.len(), 1);
                    assert!(r[0] == request || (r[0].starts_with("R ask") && r[0].ends_with('Z')));
                    assert!(crate::compact::validate(&out).is_empty());
                }
                Err(e) => assert!(
                    matches!(e, Error::TrimBudget { .. } | Error::BudgetTooSmall { .. }),
                    "{e}"
                ),
            }
        }
    }

    #[test]
    fn a_reserve_of_the_whole_budget_leaves_room_for_nothing() {
        let c = conv(json!([{"role": "user", "content": "hi there"}]));
        assert!(matches!(
            trim(&c, usize::MAX, usize::MAX, None),
            Err(Error::TrimBudget { .. })
        ));
        assert!(matches!(trim(&c, 100, 100, None), Err(Error::TrimBudget { .. })));
        assert!(fits(0, usize::MAX, usize::MAX));
        assert!(!fits(1, usize::MAX, usize::MAX));
        assert!(!fits(0, 2, 1));
        assert!(fits(5, 5, 10) && !fits(6, 5, 10));
    }

    #[test]
    fn an_abandoned_call_does_not_hold_the_history_after_it() {
        // A call left without a result (the run was stopped) before the user's next turns: the
        // suffix after it is cut as any other, as the same history without the call is.
        let long = "word ".repeat(300);
        let mut v = vec![
            json!({"role": "user", "content": "r0"}),
            json!({"role": "assistant", "content": null, "tool_calls": [call("c2")]}),
        ];
        for r in ["r7", "r9", "r16"] {
            v.push(json!({"role": "user", "content": r}));
            v.push(json!({"role": "assistant", "content": long}));
        }
        let with_call = conv(Value::Array(v.clone()));
        v.remove(1);
        let without = conv(Value::Array(v));
        let out = trim(&with_call, 900, 0, None).unwrap();
        assert_eq!(requests(&out), vec!["r9", "r16"]);
        assert_eq!(out, trim(&without, 900, 0, None).unwrap());
        // A call of the last message may still get its result: no cut after it.
        let mut open = vec![json!({"role": "user", "content": "r0"})];
        open.push(json!({"role": "assistant", "content": long}));
        open.push(json!({"role": "user", "content": "r1"}));
        open.push(json!({"role": "assistant", "content": null, "tool_calls": [call("c5")]}));
        let c = conv(Value::Array(open));
        let pairing = Pairing::of(c.messages());
        let safe = super::super::structure::safe_cuts(c.messages(), &pairing);
        assert_eq!(safe, vec![true, true, true, true, false]);
    }

    #[test]
    fn the_drop_keeps_the_calls_whose_results_the_request_carries() {
        // The latest request is an Anthropic user message with the result of the call before it
        // and the user's words: kept apart from the suffix, it comes with that call, never alone.
        let v = json!([
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": "write", "input": {}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": "ok"},
                {"type": "text", "text": "now do it"}
            ]},
            {"role": "assistant", "content": "done"},
            {"role": "user", "content": "and then"},
            {"role": "assistant", "content": "ok"}
        ]);
        let m = crate::formats::anthropic::read(serde_json::from_value(v).unwrap(), None).unwrap();
        let tokens = [100, 180, 350, 300, 5, 5];
        let drop = KeepRequest {
            at: Some(2),
            beside: 20,
            cut: false,
            strict: false,
        };
        let p = Pairing::of(&m);
        for limit in [400, 500, 570] {
            // (It kept [2, 4, 5]: the result of c1 without its call.)
            assert!(
                plan_keep(&m[..], &tokens, &p, (limit, 20), drop, |_| 0).is_err(),
                "{limit}"
            );
        }
        let plan = plan_keep(&m[..], &tokens, &p, (580, 20), drop, |_| 0).unwrap();
        assert_eq!((plan.keep, plan.apart), (vec![1, 2, 4, 5], Some(2)));
        let err = plan_keep(&m[..], &tokens, &p, (500, 20), drop, |_| 0).unwrap_err();
        assert!(matches!(err, Error::TrimBudget { needed: 575, .. }), "{err}");
        let plan = plan_keep(&m[..], &tokens, &p, (575, 20), drop, |_| 0).unwrap();
        assert_eq!(plan.keep, vec![1, 2, 5]); // the refusal's needed is a budget that works
    }
}
