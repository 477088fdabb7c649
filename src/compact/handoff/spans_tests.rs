//! One [`Scan`] asked for many spans, in any order, gives each span's handoff as a scan of that
//! span alone does: calls whose result lies past a stop, results of reused ids, failed commands
//! that a later run resolves, plans, rules and earlier ledgers cut at every point.

use super::*;
use crate::compact::testing::{chat, xorshift};
use serde_json::{Value, json};

fn tool_call(id: &str, name: &str, args: &Value) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}})
}

/// A random coding session: requests with rules, reads, edits, shell commands that fail or pass
/// (the same command again later), plans, earlier ledgers, results sometimes late or missing,
/// ids sometimes reused.
fn generated(next: &mut impl FnMut() -> u64) -> Vec<Message> {
    let mut v = vec![json!({"role": "system", "content": "s"})];
    for k in 0..4 + next() % 12 {
        let rule = ["", " Never edit gen/x.py.", " Use uv, not pip."][usize::try_from(next() % 3).unwrap()];
        v.push(json!({"role": "user", "content": format!("Fix step {k} in src/m{}.py.{rule}", next() % 5)}));
        if next() % 6 == 0 {
            v.push(json!({"role": "user", "content": format!("[agentcontext: task ledger: kept by code]\n## Plan\n- [-] step {k}")}));
        }
        for _ in 0..next() % 4 {
            let n = next();
            let id = format!("c{}", if n % 11 == 0 { 0 } else { n % 1000 });
            let f = format!("src/m{}.py", n % 5);
            let call = match n % 5 {
                0 => tool_call(&id, "read_file", &json!({"path": f})),
                1 => tool_call(&id, "edit_file", &json!({"path": f, "old": "a", "new": "b"})),
                2 => tool_call(
                    &id,
                    "bash",
                    &json!({"command": format!("pytest tests/test_{}.py", n % 3)}),
                ),
                3 => tool_call(
                    &id,
                    "TodoWrite",
                    &json!({"todos": [{"content": format!("step {k}"), "status": "pending"}]}),
                ),
                _ => tool_call(&id, "bash", &json!({"command": format!("rm {f}")})),
            };
            v.push(json!({"role": "assistant", "content": if n % 3 == 0 { json!("I'll fix it next.") } else { Value::Null }, "tool_calls": [call]}));
            if n % 7 == 0 {
                continue; // never answered
            }
            if n % 5 == 0 {
                v.push(json!({"role": "user", "content": "between"}));
            }
            let out = match n % 4 {
                0 => "Traceback (most recent call last):\nKeyError: 'k'\n1 failed".to_owned(),
                1 => "tests/test_a.py::test_x PASSED\n3 passed".to_owned(),
                _ => format!("ok {n}"),
            };
            v.push(json!({"role": "tool", "tool_call_id": id, "content": out}));
        }
    }
    chat(Value::Array(v))
}

#[test]
fn a_scan_gives_every_span_the_handoff_of_that_span_alone() {
    let mut next = xorshift(0x5eed_1234);
    for _ in 0..60 {
        let m = generated(&mut next);
        let start = usize::try_from(next() % 3).unwrap().min(m.len());
        let mut scan = Scan::default();
        for _ in 0..6 {
            let stop = start + usize::try_from(next()).unwrap() % (m.len() - start + 1);
            let alone = Scan::default().handoff(&m[start..stop]);
            assert_eq!(scan.handoff(&m[start..stop]), alone, "start {start}, stop {stop}");
        }
    }
}

#[test]
fn a_call_answered_past_the_stop_has_no_outcome_until_the_span_holds_its_result() {
    let m = chat(json!([
        {"role": "user", "content": "Run the tests."},
        {"role": "assistant", "content": null, "tool_calls": [tool_call("1", "bash", &json!({"command": "pytest -q"}))]},
        {"role": "tool", "tool_call_id": "1", "content": "KeyError: 'x'\n1 failed"},
    ]));
    let mut scan = Scan::default();
    let whole = scan.handoff(&m);
    assert_eq!(whole.commands.len(), 1);
    assert!(!whole.commands[0].ok && whole.errors.len() == 1);
    let head = scan.handoff(&m[..2]);
    assert!(head.commands.is_empty() && head.errors.is_empty(), "{head:?}");
    assert_eq!(scan.handoff(&m), whole);
}

#[test]
fn a_ledger_handoff_is_the_handoff_with_only_the_ledger_fields() {
    let mut next = xorshift(0x1ed9_e77e);
    for _ in 0..40 {
        let m = generated(&mut next);
        let mut scan = Scan::default();
        for _ in 0..4 {
            let stop = usize::try_from(next()).unwrap() % (m.len() + 1);
            let whole = Scan::default().handoff(&m[..stop]);
            let expected = Handoff {
                user_requests: whole.user_requests,
                files_read: whole.files_read,
                files_modified: whole.files_modified,
                commands: whole.commands,
                errors: whole.errors,
                artifacts: whole.artifacts,
                constraints: whole.constraints,
                plan: whole.plan,
                previous_ledger: whole.previous_ledger,
                messages: whole.messages,
                tool_calls: whole.tool_calls,
                ..Handoff::default()
            };
            assert_eq!(scan.ledger_handoff(&m[..stop]), expected, "stop {stop}");
        }
        // The messages a ledger handoff scanned give a full handoff too.
        assert_eq!(scan.handoff(&m), Scan::default().handoff(&m));
    }
}

#[test]
fn the_same_span_asked_again_in_either_form_gives_what_a_fresh_scan_gives() {
    // A compaction asks for the ledger of a span and then for its whole handoff: the second ask
    // reuses the span's calls and ledger fields. Stops from a few, so that spans repeat, in
    // every order of the two forms.
    let mut next = xorshift(0x0a5c_a9a1);
    for _ in 0..40 {
        let m = generated(&mut next);
        let stops = [m.len(), m.len() * 2 / 3, m.len() / 3];
        let mut scan = Scan::default();
        for _ in 0..10 {
            let stop = stops[usize::try_from(next() % 3).unwrap()];
            let span = &m[..stop];
            if next() % 2 == 0 {
                assert_eq!(
                    scan.ledger_handoff(span),
                    Scan::default().ledger_handoff(span),
                    "ledger, stop {stop}"
                );
            } else {
                assert_eq!(scan.handoff(span), Scan::default().handoff(span), "whole, stop {stop}");
            }
        }
    }
}

/// `f` run on a pool of one thread: every parallel section of the scan runs serially.
fn serial<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap()
        .install(f)
}

#[test]
fn small_and_large_spans_scan_the_same_on_one_thread_and_on_the_pool() {
    // From `PARALLEL_CALLS` new messages or calls on, a scan runs on all cores, merged in order.
    let mut next = xorshift(0x5ca1_ab1e);
    for size in [0, 1, 5, 40, 3 * super::scan::PARALLEL_CALLS] {
        let mut m = Vec::new();
        while m.len() < size {
            m.extend(generated(&mut next));
        }
        let (long, short) = (m.len(), m.len() * 9 / 10);
        let asks = |scan: &mut Scan| {
            (
                scan.ledger_handoff(&m[..long]),
                scan.ledger_handoff(&m[..short]),
                scan.handoff(&m[..short]),
                scan.handoff(&m[..long]),
            )
        };
        let pooled = asks(&mut Scan::default());
        assert_eq!(pooled, serial(|| asks(&mut Scan::default())), "{} messages", m.len());
        assert_eq!(pooled.3, serial(|| extract(&m)), "{} messages", m.len());
    }
}
