//! The offline handoff's scan and merges on a generated ~1M-token coding-agent session (as
//! `tests.support.synthetic_session(8300)`: user requests, assistant replies with tool calls to
//! read_file, bash, grep and edit_file, and their outputs: source files, pytest runs with
//! tracebacks, grep hits, JSON), the spans the compaction ladder asks for.
//!
//!     cargo bench --bench handoff

use std::fmt::Write as _;
use std::hint::black_box;
use std::time::Duration;

use agentcontext::compact::handoff::Scan;
use agentcontext::formats;
use agentcontext::model::Message;
use criterion::Criterion;
use serde_json::json;

/// A small deterministic generator (PCG-style LCG).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
    fn below(&mut self, n: usize) -> usize {
        self.next() as usize % n
    }
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }
    fn chance(&mut self, p: f64) -> bool {
        (self.next() as f64 / f64::from(1u32 << 31)) < p
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
    fn sample<'a>(&mut self, items: &[&'a str], n: usize) -> Vec<&'a str> {
        let mut pool = items.to_vec();
        (0..n).map(|_| pool.swap_remove(self.below(pool.len()))).collect()
    }
}

const WORDS: &[&str] = &[
    "parse", "config", "cache", "token", "request", "handler", "session", "retry", "buffer", "window", "summary",
    "result", "error", "value", "index", "message", "budget", "stream", "client", "server", "context", "file", "path",
    "line", "offset", "limit", "state", "update", "build", "test", "check", "record", "flush", "write", "read", "load",
    "store", "merge", "split", "count",
];
const FILES: &[&str] = &[
    "src/app.py",
    "src/config.py",
    "src/handlers/session.py",
    "src/cache/lru.py",
    "src/api/client.py",
    "tests/test_session.py",
    "tests/test_cache.py",
    "README.md",
    "pyproject.toml",
];

fn ident(r: &mut Rng) -> String {
    let n = r.range(1, 3);
    r.sample(WORDS, n).join("_")
}

fn code(r: &mut Rng, lines: usize) -> String {
    let mut out = String::new();
    let mut indent = 0;
    for i in 0..lines {
        let x = r.below(100);
        let pad = " ".repeat(indent);
        let line = if x < 10 {
            indent = 4;
            format!(
                "def {}(self, {}: int, {}: str | None = None) -> dict:",
                ident(r),
                ident(r),
                ident(r)
            )
        } else if x < 15 {
            indent = 4;
            format!("class {}:", ident(r).replace('_', ""))
        } else if x < 30 {
            format!(
                "{pad}if {} is None or len({}) > {}:",
                ident(r),
                ident(r),
                r.range(1, 4096)
            )
        } else if x < 45 {
            format!(
                "{pad}    return {{'{}': {}, 'n': {}}}",
                ident(r),
                ident(r),
                r.below(100)
            )
        } else if x < 60 {
            format!(
                "{pad}logger.debug(\"{} %s\", {})",
                r.sample(WORDS, 5).join(" "),
                ident(r)
            )
        } else if x < 80 {
            format!(
                "{pad}{} = self.{}({}, limit={})",
                ident(r),
                ident(r),
                ident(r),
                r.range(1, 500)
            )
        } else {
            String::new()
        };
        if i % 17 == 16 {
            indent = 0;
        }
        let _ = writeln!(out, "{:6}\t{line}", i + 1);
    }
    out.pop();
    out
}

fn pytest(r: &mut Rng, failing: bool) -> String {
    let n = r.range(4, 14);
    let tests: Vec<String> = (0..n)
        .map(|_| format!("tests/test_{}.py::test_{}", r.pick(WORDS), ident(r)))
        .collect();
    let mut lines = vec![
        "============================= test session starts ==============================".to_owned(),
        String::new(),
    ];
    lines.extend(tests.iter().map(|t| format!("{t} PASSED")));
    if failing {
        lines.extend([
            String::new(),
            "=================================== FAILURES ===================================".to_owned(),
            format!("____________________________ test_{} ____________________________", ident(r)),
            String::new(),
            "Traceback (most recent call last):".to_owned(),
            format!("  File \"{}\", line {}, in {}", r.pick(FILES), r.range(10, 400), ident(r)),
            format!("    {} = {}[{}]", ident(r), ident(r), r.below(10)),
            format!("KeyError: '{}'", ident(r)),
            String::new(),
            format!(
                "=========================== short test summary info ============================\nFAILED {} - KeyError",
                tests[0]
            ),
            format!("==================== 1 failed, {} passed in 1.23s ====================", n - 1),
        ]);
    } else {
        lines.push(format!(
            "============================== {n} passed in 0.42s =============================="
        ));
    }
    lines.join("\n")
}

fn grep(r: &mut Rng) -> String {
    let n = r.range(3, 12);
    (0..n)
        .map(|_| {
            format!(
                "{}:{}:    {} = {}({})",
                r.pick(FILES),
                r.range(1, 900),
                ident(r),
                ident(r),
                ident(r)
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// About `n` messages in OpenAI Chat format.
fn session(n: usize) -> Vec<serde_json::Value> {
    let mut r = Rng(7);
    let mut out = vec![
        json!({"role": "system", "content": "You are a coding agent. Read before you edit, run the tests after every change, and report the exact command and its result."}),
    ];
    let mut call = 0;
    while out.len() < n {
        let request = format!(
            "Please fix the {} bug in {}: {}. Keep the public API unchanged.",
            r.pick(WORDS),
            r.pick(FILES),
            r.sample(WORDS, 12).join(" ")
        );
        out.push(json!({"role": "user", "content": request}));
        for _ in 0..r.range(3, 12) {
            if out.len() >= n {
                break;
            }
            let parallel = if r.chance(0.8) { 1 } else { r.range(2, 4) };
            let mut calls = Vec::new();
            for _ in 0..parallel {
                call += 1;
                let (tool, args, result) = match r.below(11) {
                    0..=3 => ("read_file", json!({"path": r.pick(FILES)}), {
                        let lines = r.range(8, 40);
                        code(&mut r, lines)
                    }),
                    4..=6 if r.chance(0.6) => ("bash", json!({"command": "python -m pytest -q"}), {
                        let failing = r.chance(0.5);
                        pytest(&mut r, failing)
                    }),
                    4..=6 => {
                        let cmd = format!("cat {} | head -50 && git status --short", r.pick(FILES));
                        let payload: serde_json::Map<String, serde_json::Value> = r
                            .sample(WORDS, 8)
                            .into_iter()
                            .map(|w| (w.to_owned(), json!(r.below(10_000))))
                            .collect();
                        let items = vec![serde_json::Value::Object(payload); r.range(1, 3)];
                        let result = serde_json::to_string_pretty(&json!({"status": "ok", "items": items})).unwrap();
                        ("bash", json!({"command": cmd}), result)
                    }
                    7..=8 => ("grep", json!({"pattern": ident(&mut r), "path": "src"}), grep(&mut r)),
                    _ => {
                        let path = r.pick(FILES);
                        let args = json!({"path": path, "old": ident(&mut r), "new": ident(&mut r)});
                        ("edit_file", args, format!("Applied edit to {path} (1 replacement)."))
                    }
                };
                calls.push((format!("call_{call:05}"), tool, args, result));
            }
            let text = format!(
                "I'll {} {}.",
                r.pick(&["check", "read", "run", "search"]),
                r.sample(WORDS, 6).join(" ")
            );
            let tool_calls: Vec<serde_json::Value> = calls
                .iter()
                .map(|(id, tool, args, _)| {
                    json!({"id": id, "type": "function", "function": {"name": tool, "arguments": args.to_string()}})
                })
                .collect();
            out.push(json!({"role": "assistant", "content": text, "tool_calls": tool_calls}));
            for (id, _, _, result) in calls {
                out.push(json!({"role": "tool", "tool_call_id": id, "content": result}));
            }
        }
        let done = format!("Done: {}.", r.sample(WORDS, 15).join(" "));
        out.push(json!({"role": "assistant", "content": done}));
    }
    out
}

fn main() {
    let messages: Vec<Message> = formats::openai_chat::read(session(8300)).unwrap();
    let span = &messages[1..];
    let (long, short) = (span.len() - 14, span.len() * 915 / 1000);
    let mut c = Criterion::default()
        .configure_from_args()
        .measurement_time(Duration::from_secs(4))
        .sample_size(30);
    let mut g = c.benchmark_group("handoff");
    g.bench_function("scan and ledger of the long span (as the ladder's first ask)", |b| {
        b.iter(|| Scan::default().ledger_handoff(black_box(&span[..long])));
    });
    let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    g.bench_function("scan and ledger of the long span, one thread", |b| {
        b.iter(|| one.install(|| Scan::default().ledger_handoff(black_box(&span[..long]))));
    });
    // The ladder's three asks: the ledger of the long span, then of a shorter one, then the whole
    // handoff of the shorter one.
    let ladder = |scan: &mut Scan| {
        (
            scan.ledger_handoff(black_box(&span[..long])),
            scan.ledger_handoff(black_box(&span[..short])),
            scan.handoff(black_box(&span[..short])),
        )
    };
    g.bench_function("the ladder's three asks, a new scan", |b| {
        b.iter(|| ladder(&mut Scan::default()));
    });
    let mut scan = Scan::default();
    ladder(&mut scan);
    g.bench_function("the ladder's three asks, scanned (the merges)", |b| {
        b.iter(|| ladder(&mut scan));
    });
    g.bench_function("handoff (all fields) of the long span, scanned", |b| {
        b.iter(|| scan.handoff(black_box(&span[..long])));
    });
    g.finish();
    c.final_summary();
}
