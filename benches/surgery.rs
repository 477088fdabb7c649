//! Conversation surgery on a 2,000-message conversation with cached counts: validate, repair,
//! protected set, clearing, recent suffix and split, separately and together.
//!
//!     cargo bench --bench surgery

#![allow(clippy::many_single_char_names)] // short names keep the bench closures readable

use std::collections::BTreeSet;
use std::hint::black_box;
use std::time::Duration;

use agentcontext::compact::{self, ClearOptions, Pairing};
use agentcontext::formats;
use agentcontext::model::Format;
use agentcontext::{Conversation, Encoding};
use criterion::Criterion;
use serde_json::json;

/// A coding-agent session: user turns, assistant calls (some parallel), sizeable tool results.
fn session(n: usize) -> Vec<serde_json::Value> {
    let mut out = vec![json!({"role": "system", "content": "You are a coding agent."})];
    let mut call = 0;
    while out.len() < n {
        out.push(json!({"role": "user", "content": format!("Fix bug {} in src/mod_{}.py", out.len(), out.len() % 7)}));
        for step in 0..6 {
            let calls: Vec<serde_json::Value> = (0..=(step % 2))
                .map(|k| {
                    call += 1;
                    json!({"id": format!("call_{call}"), "type": "function",
                           "function": {"name": if k == 0 { "read_file" } else { "bash" },
                                        "arguments": format!("{{\"path\": \"src/mod_{}.py\"}}", call % 11)}})
                })
                .collect();
            let ids: Vec<String> = calls.iter().map(|c| c["id"].as_str().unwrap().to_owned()).collect();
            out.push(json!({"role": "assistant", "content": "Looking.", "tool_calls": calls}));
            for id in ids {
                out.push(
                    json!({"role": "tool", "tool_call_id": id, "content": "def f(x):\n    return x\n".repeat(20)}),
                );
            }
        }
    }
    out.truncate(n);
    // Close any call the truncation left open.
    let messages = formats::openai_chat::read(out).unwrap();
    compact::repair(&messages)
        .0
        .into_iter()
        .collect::<Vec<_>>()
        .pipe(|m| formats::openai_chat::write(&m))
}

trait Pipe: Sized {
    fn pipe<T>(self, f: impl FnOnce(Self) -> T) -> T {
        f(self)
    }
}
impl<T> Pipe for T {}

fn main() {
    let values = session(2000);
    let messages = formats::openai_chat::read(values).unwrap();
    let conv = Conversation::from_messages(Format::OpenAiChat, Encoding::O200k, messages);
    let budget = conv.total_tokens() / 4;
    let mut c = Criterion::default()
        .configure_from_args()
        .measurement_time(Duration::from_secs(3));
    bench_structure(&mut c, &conv);
    bench_clearing(&mut c, &conv);
    bench_together(&mut c, &conv, budget);
    c.final_summary();
}

/// Pairing, validation, repair and the protected set.
fn bench_structure(c: &mut Criterion, conv: &Conversation) {
    let m = conv.messages();
    c.bench_function("pairing", |b| b.iter(|| Pairing::of(black_box(m))));
    c.bench_function("validate", |b| b.iter(|| compact::validate(black_box(m))));
    c.bench_function("repair (valid input)", |b| b.iter(|| compact::repair(black_box(m))));
    let pairing = Pairing::of(m);
    c.bench_function("protected", |b| {
        b.iter(|| compact::protected(black_box(m), &pairing, 12, 3, &BTreeSet::new()));
    });
}

/// The clearing plan, with and without cached counts, and the new conversation.
fn bench_clearing(c: &mut Criterion, conv: &Conversation) {
    let m = conv.messages();
    let pairing = Pairing::of(m);
    let protected = compact::protected(m, &pairing, 12, 3, &BTreeSet::new());
    c.bench_function("clear: plan (changed messages only)", |b| {
        b.iter(|| {
            compact::plan_clear(
                black_box(m),
                &pairing,
                &protected,
                Encoding::Approximate,
                &ClearOptions::default(),
            )
        });
    });
    let counting = ClearOptions {
        count_placeholders: true,
        ..ClearOptions::default()
    };
    for (label, options) in [
        (
            "clear: plan, cached counts (clearly smaller placeholders bounded)",
            &ClearOptions::default(),
        ),
        (
            "clear: plan, cached counts, every placeholder counted (o200k; as Conversation.clear_tool_results)",
            &counting,
        ),
    ] {
        c.bench_function(label, |b| {
            b.iter(|| {
                compact::plan_clear_counted(
                    black_box(m),
                    Some(conv.counts()),
                    &pairing,
                    &protected,
                    conv.encoding(),
                    options,
                )
            });
        });
    }
    c.bench_function("clear: plan and a full new message list", |b| {
        b.iter(|| {
            compact::clear_tool_results(
                black_box(m),
                &pairing,
                &protected,
                Encoding::Approximate,
                &ClearOptions::default(),
            )
        });
    });
    let protection = compact::Protection {
        recent_messages: 12,
        recent_tools: 3,
    };
    c.bench_function(
        "clear: a new conversation with its counts (compact::surgery::clear)",
        |b| {
            b.iter(|| compact::surgery::clear(black_box(conv), protection, &ClearOptions::default()));
        },
    );
}

/// Selection, and the passes a compaction runs together.
fn bench_together(c: &mut Criterion, conv: &Conversation, budget: usize) {
    let m = conv.messages();
    let totals = conv.totals();
    let pairing = Pairing::of(m);
    c.bench_function("recent suffix", |b| {
        b.iter(|| compact::recent_suffix(black_box(m), &totals, &pairing, budget));
    });
    c.bench_function("split by share (4)", |b| {
        b.iter(|| compact::split_by_share(black_box(m), &totals, &pairing, 4));
    });
    c.bench_function("all: pairing+validate+protected+suffix+split", |b| {
        b.iter(|| {
            let p = Pairing::of(black_box(m));
            let v = compact::validate_with(m, &p);
            let pr = compact::protected(m, &p, 12, 3, &BTreeSet::new());
            let s = compact::recent_suffix(m, &totals, &p, budget);
            let parts = compact::split_by_share(m, &totals, &p, 4);
            (v, pr, s, parts)
        });
    });
    c.bench_function("all, with the clearing plan", |b| {
        b.iter(|| {
            let p = Pairing::of(black_box(m));
            let v = compact::validate_with(m, &p);
            let pr = compact::protected(m, &p, 12, 3, &BTreeSet::new());
            let cl = compact::plan_clear(m, &p, &pr, Encoding::Approximate, &ClearOptions::default());
            let s = compact::recent_suffix(m, &totals, &p, budget);
            let parts = compact::split_by_share(m, &totals, &p, 4);
            (v, pr, cl, s, parts)
        });
    });
    c.bench_function("all, with the clearing plan, cached counts", |b| {
        b.iter(|| {
            let p = Pairing::of(black_box(m));
            let v = compact::validate_with(m, &p);
            let pr = compact::protected(m, &p, 12, 3, &BTreeSet::new());
            let cl = compact::plan_clear_counted(
                m,
                Some(conv.counts()),
                &p,
                &pr,
                conv.encoding(),
                &ClearOptions::default(),
            );
            let s = compact::recent_suffix(m, &totals, &p, budget);
            let parts = compact::split_by_share(m, &totals, &p, 4);
            (v, pr, cl, s, parts)
        });
    });
}
