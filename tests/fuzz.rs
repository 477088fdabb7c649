//! A long randomized test (fuzzing without a nightly toolchain): arbitrary JSON shaped like
//! messages — right, wrong and half-right — goes through every reader, then validate and repair.
//! Nothing may panic; whatever parses must repair to a conversation that validates clean, and
//! repairing again changes nothing.
//!
//!     cargo test --release --test fuzz                                # 3,000 cases (the default)
//!     AGENTCONTEXT_FUZZ_CASES=1000000 cargo test --release --test fuzz -- --nocapture

use agentcontext::compact::{Pairing, protected, recent_suffix, repair, validate};
use agentcontext::formats;
use agentcontext::model::Format;
use serde_json::{Map, Value, json};

/// xorshift64*: a small deterministic generator, so every failure is reproducible from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

const IDS: &[&str] = &["a", "b", "c", "d", "call_1", ""];
const ROLES: &[&str] = &["user", "assistant", "tool", "system", "developer", "alien"];

fn junk(r: &mut Rng, depth: usize) -> Value {
    match r.below(if depth > 3 { 4 } else { 7 }) {
        0 => Value::Null,
        1 => Value::Bool(r.chance(50)),
        2 => json!(r.below(1000)),
        3 => Value::String(r.pick(&["", "x", "ünïcødé", "{\"a\": 1}", "漢字"]).to_string()),
        4 => Value::Array((0..r.below(3)).map(|_| junk(r, depth + 1)).collect()),
        _ => {
            let mut m = Map::new();
            for _ in 0..r.below(4) {
                m.insert(
                    r.pick(&["type", "text", "id", "content", "x"]).to_string(),
                    junk(r, depth + 1),
                );
            }
            Value::Object(m)
        }
    }
}

/// Sometimes replace a value by junk, so readers see every kind of wrong input.
fn maybe(r: &mut Rng, v: Value) -> Value {
    if r.chance(4) { junk(r, 0) } else { v }
}

fn chat_message(r: &mut Rng) -> Value {
    let role = *r.pick(ROLES);
    let mut m = Map::new();
    m.insert("role".into(), {
        let v = json!(role);
        maybe(r, v)
    });
    match role {
        "tool" => {
            m.insert("tool_call_id".into(), {
                let v = json!(r.pick(IDS));
                maybe(r, v)
            });
            m.insert("content".into(), {
                let v = json!("out");
                maybe(r, v)
            });
        }
        "assistant" => {
            m.insert("content".into(), {
                let v = if r.chance(30) { Value::Null } else { json!("ok") };
                maybe(r, v)
            });
            if r.chance(60) {
                let calls: Vec<Value> = (0..r.below(4))
                    .map(|_| {
                        let v = json!({"id": r.pick(IDS), "type": "function",
                                   "function": {"name": "f", "arguments": r.pick(&["{}", "{\"p\": 1}", "not json"])}});
                        maybe(r, v)
                    })
                    .collect();
                m.insert("tool_calls".into(), {
                    let v = Value::Array(calls);
                    maybe(r, v)
                });
            }
        }
        _ => {
            m.insert("content".into(), {
                let v = json!(r.pick(&["hi", "", "go on"]));
                maybe(r, v)
            });
        }
    }
    {
        let v = Value::Object(m);
        maybe(r, v)
    }
}

fn anthropic_message(r: &mut Rng) -> Value {
    let role = if r.chance(50) { "user" } else { "assistant" };
    let blocks: Vec<Value> = (0..r.below(4))
        .map(|_| {
            let b = match r.below(5) {
                0 => json!({"type": "text", "text": r.pick(&["t", ""])}),
                1 => json!({"type": "tool_use", "id": r.pick(IDS), "name": "f", "input": {}}),
                2 => json!({"type": "tool_result", "tool_use_id": r.pick(IDS), "content": "r"}),
                3 => json!({"type": "thinking", "thinking": "hm", "signature": "s"}),
                _ => json!({"type": "redacted_thinking", "data": "zz"}),
            };
            {
                let v = b;
                maybe(r, v)
            }
        })
        .collect();
    {
        let role = {
            let v = json!(role);
            maybe(r, v)
        };
        let v = json!({"role": role, "content": blocks});
        maybe(r, v)
    }
}

fn responses_item(r: &mut Rng) -> Value {
    let item = match r.below(5) {
        0 => json!({"role": "user", "content": "hi"}),
        1 => json!({"type": "function_call", "call_id": r.pick(IDS), "name": "f", "arguments": "{}"}),
        2 => json!({"type": "function_call_output", "call_id": r.pick(IDS), "output": "o"}),
        3 => json!({"type": "reasoning", "id": "rs", "summary": []}),
        _ => json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "a"}]}),
    };
    {
        let v = item;
        maybe(r, v)
    }
}

fn check(format: Format, values: Vec<Value>, seed: u64) {
    let Ok(messages) = formats::read(format, values) else {
        return;
    };
    let (fixed, changes) = repair(&messages);
    let left = validate(&fixed);
    assert!(
        left.is_empty(),
        "seed {seed}: {format:?} still invalid after repair: {left:?}"
    );
    let (again, more) = repair(&fixed);
    assert!(
        more.is_empty() && again == fixed,
        "seed {seed}: repair is not idempotent"
    );
    if validate(&messages).is_empty() {
        assert!(
            changes.is_empty() && fixed == messages,
            "seed {seed}: valid input was changed"
        );
    }
    // Selection over the repaired conversation keeps the protocol.
    let pairing = Pairing::of(&fixed);
    let counts: Vec<usize> = fixed.iter().map(|m| 4 + m.blocks.len() * 7).collect();
    let budget = counts.iter().sum::<usize>() / 2;
    let suffix = recent_suffix(&fixed, &counts, &pairing, budget);
    if suffix.overflow.is_none() {
        let kept: Vec<_> = fixed[..suffix.preamble]
            .iter()
            .chain(&fixed[suffix.start..])
            .cloned()
            .collect();
        assert!(
            validate(&kept).is_empty(),
            "seed {seed}: the kept suffix is not protocol-complete"
        );
    }
    let _ = protected(&fixed, &pairing, 3, 1, &std::collections::BTreeSet::default());
    // Whatever was read can be written in every format without panicking.
    for f in [Format::Native, Format::OpenAiChat, Format::Responses, Format::Anthropic] {
        let _ = formats::write(f, &fixed);
    }
}

/// How many cases each test runs: `AGENTCONTEXT_FUZZ_CASES`, or 3,000.
fn fuzz_cases() -> u64 {
    std::env::var("AGENTCONTEXT_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3_000)
}

#[test]
fn arbitrary_messages_never_panic_and_always_repair() {
    let cases = fuzz_cases();
    for seed in 1..=cases {
        let mut r = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let n = r.below(12);
        check(Format::OpenAiChat, (0..n).map(|_| chat_message(&mut r)).collect(), seed);
        check(Format::Native, (0..n).map(|_| chat_message(&mut r)).collect(), seed);
        check(
            Format::Anthropic,
            (0..n).map(|_| anthropic_message(&mut r)).collect(),
            seed,
        );
        check(
            Format::Responses,
            (0..n).map(|_| responses_item(&mut r)).collect(),
            seed,
        );
    }
}

/// A list whose first messages are plain text (they tell no format apart) and whose later ones
/// are drawn from every format, so that a reader guessing as it goes has to start over.
fn mixed_list(r: &mut Rng) -> Vec<Value> {
    let n = r.below(10);
    (0..n)
        .map(|i| match r.below(if i < 3 { 8 } else { 5 }) {
            0 => chat_message(r),
            1 => anthropic_message(r),
            2 => responses_item(r),
            3 => {
                json!({"role": "assistant", "content": "", "tool_calls": [{"id": "a", "name": "f", "arguments": "{}"}]})
            }
            _ => json!({"role": *r.pick(&["user", "assistant", "system"]), "content": "plain"}),
        })
        .collect()
}

/// A file read as its list of values was: the same messages, or an error at the same place (the
/// list's index plus `first`, the number the file's first value has).
fn same_as_list(
    seed: u64,
    what: &str,
    file: &Result<(Format, Vec<agentcontext::Message>), agentcontext::Error>,
    list: Result<(Format, Vec<agentcontext::Message>), agentcontext::Error>,
    first: usize,
) {
    match (file, list) {
        (Ok(got), Ok(want)) => assert_eq!(format!("{got:?}"), format!("{want:?}"), "seed {seed}: {what}"),
        (
            Err(agentcontext::Error::InvalidFile { position, .. }),
            Err(agentcontext::Error::InvalidMessage { index, .. }),
        ) => {
            assert_eq!(*position, index + first, "seed {seed}: {what}");
        }
        (got, want) => panic!("seed {seed}: {what} {got:?}, list {want:?}"),
    }
}

/// The outcome as text, so results and errors compare alike.
fn outcome<E: std::fmt::Display>(r: Result<(Format, Vec<agentcontext::Message>), E>) -> String {
    match r {
        Ok((format, messages)) => format!("{format:?} {messages:?}"),
        Err(e) => format!("error: {e}"),
    }
}

#[test]
fn reading_one_value_at_a_time_gives_what_reading_them_all_gives() {
    let cases = fuzz_cases();
    let mut restarted = 0;
    for seed in 1..=cases {
        let mut r = Rng(seed.wrapping_mul(0x2545_f491_4f6c_dd1d) | 1);
        let values = mixed_list(&mut r);
        let named = [None, Some(Format::OpenAiChat), Some(Format::Anthropic)][r.below(3)];
        let whole = formats::read_any(values.clone(), named, None);
        let mut passes = 0;
        let streamed = formats::read_stream(named, Format::OpenAiChat, None, |each| {
            passes += 1;
            for v in values.clone() {
                if each(v).is_break() {
                    break;
                }
            }
            Ok::<(), agentcontext::Error>(())
        });
        restarted += usize::from(passes > 1);
        assert_eq!(outcome(streamed), outcome(whole), "seed {seed}: {values:?}");
        // A file: as a JSON array and as JSON Lines, parsed and read one message at a time.
        if values.is_empty() {
            continue;
        }
        let array = serde_json::to_vec(&values).unwrap();
        let from_array = formats::file::read_bytes(&array, "f.json", named).map(|t| (t.format, t.messages));
        let list = formats::read_any(values.clone(), named, None);
        same_as_list(seed, "array", &from_array, list, 0);
        // One line holding an array is a JSON array file (of those items), not JSON Lines.
        if let [Value::Array(_)] = values.as_slice() {
            continue;
        }
        let lines: Vec<u8> = values.iter().flat_map(|v| format!("{v}\n").into_bytes()).collect();
        let from_lines = formats::file::read_bytes(&lines, "f.jsonl", named).map(|t| (t.format, t.messages));
        if !values.iter().all(Value::is_object) {
            assert!(
                from_lines.is_err(),
                "seed {seed}: a line that is not an object was read: {values:?} gave {from_lines:?}"
            );
            continue;
        }
        // JSON Lines that tell no format apart are read as the library's own format.
        let format = named
            .or_else(|| formats::detect::detect(&values))
            .unwrap_or(Format::Native);
        // Lines count from 1.
        same_as_list(
            seed,
            "lines",
            &from_lines,
            formats::read_any(values, Some(format), None),
            1,
        );
    }
    assert!(
        restarted > cases as usize / 20,
        "only {restarted} of {cases} lists made the reader start over"
    );
}
