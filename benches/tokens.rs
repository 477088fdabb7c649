//! Token counting in the core: exact o200k (src/tokens/bpe.rs, what the library uses) against
//! bpe-openai (what it used before, with prebuilt tables) and tiktoken-rs (the Rust port of
//! tiktoken's own core), the heuristic, single long pieces (a megabyte of spaces or of "ab", 100k of
//! one letter), and appending to a Rust-owned conversation. Criterion measures; a summary with ratios
//! is printed at the end.
//!
//!     cargo bench --bench tokens
//!
//! Inputs: the message texts of the shared corpus (`AGENTCONTEXT_SHARED`, default `../shared`)
//! when present, and a generated coding-agent conversation.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use agentcontext::model::{Format, Message, Role};
use agentcontext::tokens::heuristic::{self, Profile};
use agentcontext::{Conversation, Encoding};
use criterion::{Criterion, Throughput};

fn corpus_texts() -> Vec<String> {
    let shared = std::env::var("AGENTCONTEXT_SHARED").map_or_else(|_| PathBuf::from("../shared"), PathBuf::from);
    let root = shared.join("data/transcripts/normalized");
    let mut texts = Vec::new();
    let Ok(sources) = std::fs::read_dir(&root) else {
        return texts;
    };
    let mut files: Vec<PathBuf> = sources
        .flatten()
        .flat_map(|s| {
            std::fs::read_dir(s.path())
                .into_iter()
                .flatten()
                .flatten()
                .map(|f| f.path())
        })
        .collect();
    files.sort();
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        for line in text.lines() {
            let v: serde_json::Value = serde_json::from_str(line).expect("corpus lines are JSON");
            if let Some(c) = v["content"].as_str().filter(|c| !c.is_empty()) {
                texts.push(c.to_owned());
            }
        }
    }
    texts
}

/// A generated conversation of `n` messages: code, logs and prose of the usual proportions.
fn synthetic_texts(n: usize) -> Vec<String> {
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let words = [
        "parse", "config", "cache", "token", "request", "handler", "session", "retry", "buffer", "window", "error",
        "value", "index", "message", "budget", "stream", "client", "context", "offset", "limit",
    ];
    (0..n)
        .map(|i| {
            let lines = if i % 2 == 0 { 2 } else { 8 + (next() % 30) as usize };
            (0..lines)
                .map(|l| {
                    let w: Vec<&str> = (0..3).map(|_| words[(next() % words.len() as u64) as usize]).collect();
                    let n = next() % 500;
                    match l % 4 {
                        0 => format!("    def {}_{}(self, {}: int) -> dict:", w[0], w[1], w[2]),
                        1 => format!("        return {{'{}': self.{}({}, limit={n})}}", w[0], w[1], w[2]),
                        2 => format!("tests/test_{}.py::test_{}_{} PASSED", w[0], w[1], w[2]),
                        _ => format!("The {} {} failed because the {} was empty.", w[0], w[1], w[2]),
                    }
                })
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect()
}

fn time_median(mut f: impl FnMut(), repeats: usize) -> Duration {
    let mut times: Vec<Duration> = (0..repeats)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    times.sort();
    times[repeats / 2]
}

fn mb_per_s(bytes: usize, d: Duration) -> f64 {
    bytes as f64 / d.as_secs_f64() / 1e6
}

fn bench(c: &mut Criterion, name: &str, texts: &[String]) {
    let bytes: usize = texts.iter().map(String::len).sum();
    let bpe = bpe_openai::o200k_base();
    let tk = tiktoken_rs::o200k_base_singleton();
    let mut g = c.benchmark_group(name);
    g.throughput(Throughput::Bytes(bytes as u64));
    g.sample_size(10);
    g.bench_function("o200k/agentcontext", |b| {
        b.iter(|| {
            texts
                .iter()
                .map(|t| Encoding::O200k.count(black_box(t.as_str())))
                .sum::<usize>()
        });
    });
    g.bench_function("o200k/bpe-openai", |b| {
        b.iter(|| texts.iter().map(|t| bpe.count(black_box(t.as_str()))).sum::<usize>());
    });
    g.bench_function("o200k/tiktoken-rs", |b| {
        b.iter(|| {
            texts
                .iter()
                .map(|t| tk.encode_ordinary(black_box(t)).len())
                .sum::<usize>()
        });
    });
    g.bench_function("heuristic", |b| {
        b.iter(|| {
            texts
                .iter()
                .map(|t| heuristic::estimate(black_box(t), Profile::O200K))
                .sum::<usize>()
        });
    });
    g.finish();
}

/// One pre-tokenizer piece that is long: where tiktoken's algorithm merges on a heap and ours on
/// buckets by rank (src/tokens/bpe.rs, `merge_long`). tiktoken-rs is left out of the megabyte of
/// spaces: its regular expression overflows its stack there (the count panics).
fn bench_long(c: &mut Criterion) {
    let bpe = bpe_openai::o200k_base();
    let tk = tiktoken_rs::o200k_base_singleton();
    let mut g = c.benchmark_group("long-piece");
    g.sample_size(10);
    for (name, text, with_tiktoken) in [
        ("spaces-1MB", " ".repeat(1_000_000), false),
        ("a-100k", "a".repeat(100_000), true),
        ("ab-1MB", "ab".repeat(500_000), true),
    ] {
        g.throughput(Throughput::Bytes(text.len() as u64));
        g.bench_function(format!("{name}/agentcontext"), |b| {
            b.iter(|| Encoding::O200k.count(black_box(&text)));
        });
        g.bench_function(format!("{name}/bpe-openai"), |b| b.iter(|| bpe.count(black_box(&text))));
        if with_tiktoken {
            g.bench_function(format!("{name}/tiktoken-rs"), |b| {
                b.iter(|| tk.encode_ordinary(black_box(&text)).len());
            });
        }
    }
    g.finish();
}

fn main() {
    let corpus = corpus_texts();
    let synthetic = synthetic_texts(2000);
    let mut c = Criterion::default()
        .configure_from_args()
        .measurement_time(Duration::from_secs(3));
    if !corpus.is_empty() {
        bench(&mut c, "corpus", &corpus);
    }
    bench(&mut c, "synthetic", &synthetic);
    bench_long(&mut c);

    // Appending one message to a 2,000-message conversation, exact count included.
    let base: Vec<Message> = synthetic.iter().map(|t| Message::text(Role::User, t.clone())).collect();
    let conv = Conversation::from_messages(Format::OpenAiChat, Encoding::O200k, base);
    let msg = Message::text(Role::User, "Please run the tests again and show me the failing ones.");
    c.bench_function("conversation/append-one-at-2000", |b| {
        b.iter_batched(
            || conv.clone(),
            |mut conv| {
                conv.extend(vec![msg.clone()]);
                conv
            },
            criterion::BatchSize::LargeInput,
        );
    });
    c.final_summary();

    println!("\nsummary (median of 5 runs, one thread)");
    println!(
        "{:<12} {:>14} {:>14} {:>14} {:>14} {:>8}",
        "input", "agentcontext", "bpe-openai", "tiktoken-rs", "heuristic", "ratio"
    );
    let bpe = bpe_openai::o200k_base();
    let tk = tiktoken_rs::o200k_base_singleton();
    for (name, texts) in [("corpus", &corpus), ("synthetic", &synthetic)] {
        if texts.is_empty() {
            continue;
        }
        let bytes: usize = texts.iter().map(String::len).sum();
        let ours = time_median(
            || _ = black_box(texts.iter().map(|t| Encoding::O200k.count(t)).sum::<usize>()),
            5,
        );
        let before = time_median(
            || _ = black_box(texts.iter().map(|t| bpe.count(t.as_str())).sum::<usize>()),
            5,
        );
        let theirs = time_median(
            || _ = black_box(texts.iter().map(|t| tk.encode_ordinary(t).len()).sum::<usize>()),
            5,
        );
        let heur = time_median(
            || {
                _ = black_box(
                    texts
                        .iter()
                        .map(|t| heuristic::estimate(t, Profile::O200K))
                        .sum::<usize>(),
                );
            },
            5,
        );
        println!(
            "{name:<12} {:>9.1} MB/s {:>9.1} MB/s {:>9.1} MB/s {:>9.0} MB/s {:>7.2}x",
            mb_per_s(bytes, ours),
            mb_per_s(bytes, before),
            mb_per_s(bytes, theirs),
            mb_per_s(bytes, heur),
            theirs.as_secs_f64() / ours.as_secs_f64()
        );
    }
    println!("(ratio: tiktoken-rs time / agentcontext time for exact o200k counts)");
}
