//! Budgets in the core: truncating large outputs, counting what was omitted, and fitting a token
//! budget without tokenizing the whole text. Criterion measures; a summary with ratios follows.
//!
//!     cargo bench --bench budget

use std::fmt::Write as _;
use std::hint::black_box;
use std::time::{Duration, Instant};

use agentcontext::Encoding;
use agentcontext::budget::count::text_counts;
use agentcontext::budget::{Options, Strategy, Unit, truncate};
use criterion::{Criterion, Throughput};

/// A build-log-like output of about `bytes` bytes ending in a test summary.
fn output(bytes: usize) -> String {
    let mut s = String::with_capacity(bytes + 100);
    let mut i = 0u64;
    while s.len() < bytes {
        i += 1;
        let _ = writeln!(
            s,
            "[{i:>8}] compiling module_{} from src/pkg_{}/file_{}.rs ... ok (0.{:03}s)",
            i % 97,
            i % 13,
            i % 211,
            i % 1000
        );
    }
    s.push_str("test result: FAILED. 411 passed; 2 failed; 0 ignored\n");
    s
}

fn median(mut f: impl FnMut(), repeats: usize) -> Duration {
    let mut t: Vec<Duration> = (0..repeats)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed()
        })
        .collect();
    t.sort();
    t[repeats / 2]
}

fn main() {
    let big = output(10 * 1024 * 1024);
    let mb = output(1024 * 1024);
    let options = Options::default();
    let auto = Strategy::Auto { head_share: 0.5 };
    let mut c = Criterion::default()
        .configure_from_args()
        .measurement_time(Duration::from_secs(3));
    let mut g = c.benchmark_group("truncate");
    g.sample_size(20);
    g.throughput(Throughput::Bytes(big.len() as u64));
    g.bench_function("10MB-to-16000-chars", |b| {
        b.iter(|| truncate(black_box(&big), 16_000, Unit::Chars, auto, &options).unwrap());
    });
    g.bench_function("count-lines-and-chars-10MB", |b| {
        b.iter(|| text_counts(black_box(big.as_bytes())));
    });
    g.finish();
    let mut g = c.benchmark_group("tokens");
    g.sample_size(10);
    g.bench_function("fit-1MB-to-4000-tokens", |b| {
        b.iter(|| truncate(black_box(&mb), 4_000, Unit::Tokens(Encoding::O200k), auto, &options).unwrap());
    });
    g.finish();
    c.final_summary();

    println!("\nsummary (median of 9 runs)");
    let counting = median(|| _ = black_box(text_counts(big.as_bytes())), 9);
    println!(
        "  counting lines + chars of 10 MB: {:.2} ms = {:.1} GB/s",
        counting.as_secs_f64() * 1e3,
        big.len() as f64 / counting.as_secs_f64() / 1e9
    );
    for (name, text) in [
        ("1 MB", output(1024 * 1024)),
        ("10 MB", big.clone()),
        ("100 MB", output(100 * 1024 * 1024)),
    ] {
        let total = median(
            || _ = black_box(truncate(&text, 16_000, Unit::Chars, auto, &options).unwrap()),
            9,
        );
        let count = median(|| _ = black_box(text_counts(text.as_bytes())), 9);
        println!(
            "  truncate {name:>6} to 16,000 chars: {:>8.3} ms total, {:>8.3} ms of it counting, cut work {:>6.1} µs",
            total.as_secs_f64() * 1e3,
            count.as_secs_f64() * 1e3,
            (total.as_secs_f64() - count.as_secs_f64()).max(0.0) * 1e6
        );
    }
    let fitted = truncate(&mb, 4_000, Unit::Tokens(Encoding::O200k), auto, &options).unwrap();
    let kept = format!("{}{}", &mb[..fitted.head_bytes], &mb[mb.len() - fitted.tail_bytes..]);
    let fit = median(
        || _ = black_box(truncate(&mb, 4_000, Unit::Tokens(Encoding::O200k), auto, &options).unwrap()),
        9,
    );
    let kept_only = median(|| _ = black_box(Encoding::O200k.count(&kept)), 9);
    let whole = median(|| _ = black_box(Encoding::O200k.count(&mb)), 3);
    println!(
        "  fit 1 MB to 4,000 tokens: {:.2} ms; tokenizing only the kept text {:.2} ms (ratio {:.2}x); \
         tokenizing the whole 1 MB {:.1} ms ({:.0}x the fit)",
        fit.as_secs_f64() * 1e3,
        kept_only.as_secs_f64() * 1e3,
        fit.as_secs_f64() / kept_only.as_secs_f64(),
        whole.as_secs_f64() * 1e3,
        whole.as_secs_f64() / fit.as_secs_f64()
    );
}
