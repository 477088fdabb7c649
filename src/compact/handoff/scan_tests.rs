//! The handoff's scans at their cost: many messages scanned on all cores (messages and calls side
//! by side) merge in message order as a scan in one pass would, and the text scans find each
//! exception name and test-runner line once.

use super::scan::PARALLEL_CALLS;
use super::text::{Tests, exception_types, test_statuses};
use super::*;
use crate::formats;
use serde_json::json;

/// `rounds` rounds of a user request, a call that reads `src/f{k}.py` and edits `lib/g{k}.rs`,
/// and its result; the requests name `docs/d{k}.md`.
fn session(rounds: usize) -> Vec<Message> {
    let mut v = Vec::new();
    for k in 0..rounds {
        v.push(
            json!({"role": "user", "content": format!("Step {k}: never touch docs/d{k}.md, see commit abc{k:04}f1")}),
        );
        let read = json!({"path": format!("src/f{k}.py")}).to_string();
        let edit = json!({"path": format!("lib/g{k}.rs"), "old": "a", "new": "b"}).to_string();
        v.push(
            json!({"role": "assistant", "content": format!("I'll read src/f{k}.py."), "tool_calls": [
            {"id": format!("r{k}"), "type": "function", "function": {"name": "read_file", "arguments": read}},
            {"id": format!("e{k}"), "type": "function", "function": {"name": "edit_file", "arguments": edit}}]}),
        );
        v.push(json!({"role": "tool", "tool_call_id": format!("r{k}"), "content": format!("class E{k}Error(Exception): pass")}));
        v.push(json!({"role": "tool", "tool_call_id": format!("e{k}"), "content": "ok"}));
    }
    formats::openai_chat::read(serde_json::from_value(json!(v)).unwrap()).unwrap()
}

#[test]
fn many_messages_merge_in_order_as_few_do() {
    // 400 rounds: 1,600 messages and 800 calls, past PARALLEL_CALLS for both scans.
    let rounds = 400;
    let messages = session(rounds);
    assert!(messages.len() >= PARALLEL_CALLS && rounds * 2 >= PARALLEL_CALLS);
    let h = extract(&messages);
    assert_eq!(h.tool_calls, rounds * 2);
    let want_read: Vec<String> = (0..rounds).map(|k| format!("src/f{k}.py")).collect();
    assert_eq!(h.files_read, want_read);
    let want_paths: Vec<String> = (0..rounds)
        .flat_map(|k| [format!("docs/d{k}.md"), format!("src/f{k}.py"), format!("lib/g{k}.rs")])
        .collect();
    assert_eq!(h.paths, want_paths, "each at its last mention, in message order");
    let trail: Vec<(&str, &str)> = h.artifacts.iter().map(|a| (a.path.as_str(), a.ops[0])).collect();
    assert_eq!(trail.len(), MAX_ARTIFACTS);
    assert_eq!(
        trail[trail.len() - 2..],
        [("src/f399.py", "read"), ("lib/g399.rs", "edited")]
    );
    assert_eq!(h.references.first().map(String::as_str), Some("abc0000f1"));
    assert_eq!(h.user_requests[0].0, (rounds - 1) * 4, "the latest request first");
    assert!(h.identifiers.contains(&"E399Error".to_owned()));
    // Each part of a split session finds what the whole finds in it, in the same order.
    let head = extract(&messages[..200]);
    assert_eq!(head.files_read, want_read[..50]);
    assert_eq!(head.paths, want_paths[..150]);
}

#[test]
fn exception_names_are_found_once_each_errors_first() {
    let mut out = Vec::new();
    exception_types(
        "Traceback:\n  raise ValueError('x')\nKeyError: 'k'\nIOException at x\nValueError again\n\
         Errors and _Error and lowerError are not names; ErrorHandler neither; ConnectionError.",
        &mut out,
    );
    assert_eq!(out, ["ValueError", "KeyError", "ConnectionError", "IOException"]);
    out.clear();
    exception_types("no names here, just Error and Exception alone", &mut out);
    assert!(out.is_empty(), "{out:?}");
}

#[test]
fn test_runner_lines_are_read_only_where_a_marker_is() {
    let mut out = Tests::default();
    test_statuses(
        "test_parse (tests.test_p.ParserTest) ... ok\ntest_empty (tests.test_p.ParserTest) ... FAIL",
        &mut out,
    );
    test_statuses(
        "tests/test_a.py::test_x PASSED\nFAILED tests/test_a.py::test_y - KeyError",
        &mut out,
    );
    test_statuses("PASSED test_x with no node id\nall good", &mut out);
    let got: Vec<(&str, &str)> = out.iter().collect();
    assert_eq!(
        got,
        [
            ("test_parse (tests.test_p.ParserTest)", "passed"),
            ("test_empty (tests.test_p.ParserTest)", "failed"),
            ("tests/test_a.py::test_x", "passed"),
            ("tests/test_a.py::test_y", "failed"),
        ]
    );
}

#[test]
fn open_work_and_decisions_are_the_lowered_line_definitions() {
    use super::scan::{names_open_work, states_a_decision};
    let plain_todo = |line: &str| {
        let lower = line.to_ascii_lowercase();
        ["todo", "next:", "next step", "still need", "remaining:"]
            .iter()
            .any(|n| lower.contains(n))
            || lower.starts_with("next")
    };
    let plain_decision = |line: &str| {
        let lower = line.to_ascii_lowercase();
        [
            "i'll ",
            "i will ",
            "let's ",
            "decided",
            "the fix is",
            "the cause is",
            "root cause",
        ]
        .iter()
        .any(|p| lower.starts_with(p))
    };
    let lines = [
        "",
        "n",
        "next",
        "NEXT",
        "Nex",
        "xnext: a",
        "the NEXT STEP is",
        "next  step",
        "TODO",
        "tOdO: x",
        "tod",
        "I still need to",
        "still nee",
        "Remaining: 3",
        "remaining",
        "I'll run it",
        "i'll",
        "I WILL do",
        "Let's go",
        "Decided: x",
        "The fix is here",
        "the cause is",
        "Root cause: x",
        "ünext: é",
        "Ţodo tödo todö",
        "\u{212a}next step", // the Kelvin sign is not ASCII
        "résumé: remaining: x",
        "x t",
        "s",
        "dtodo",
        "tododo",
        "ddd xx ::",
        "x",
        "d",
        ":",
        "TODO:",
        "still needs",
        "STILL NEED",
        "items remaining: 2, next step: x",
        "ünd todo",
        "next:",
        "nexT StEp",
        "Remaining:",
        "emaining:",
    ];
    for line in lines {
        assert_eq!(names_open_work(line), plain_todo(line), "{line:?}");
        assert_eq!(states_a_decision(line), plain_decision(line), "{line:?}");
    }
}
