//! Repair of calls that share an id in one message, of the built-in tools' opaque calls and
//! outputs (Responses), and of a request whose last calls are left open.

use super::*;
use crate::compact::testing::{call, chat, xorshift};
use crate::compact::validate::validate;
use crate::formats;
use serde_json::{Value, json};

#[test]
fn calls_of_one_id_in_one_message_keep_their_own_results() {
    // Before, the second call took the first result, the first call got INTERRUPTED and the
    // second result became a user message.
    let m = chat(json!([
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": null, "tool_calls": [call("x"), call("x")]},
        {"role": "tool", "tool_call_id": "x", "content": "first"},
        {"role": "tool", "tool_call_id": "x", "content": "second"},
        {"role": "assistant", "content": "done"},
    ]));
    let kinds: Vec<&str> = validate(&m).iter().map(|v| v.kind.as_str()).collect();
    assert_eq!(kinds, vec!["duplicate_id"]);
    let (fixed, changes) = repair(&m);
    let kinds: Vec<&str> = changes.iter().map(|c| c.kind.as_str()).collect();
    assert_eq!(kinds, vec!["renamed_id"]);
    let out = formats::openai_chat::write(&fixed);
    assert_eq!(out.len(), 5);
    assert_eq!(out[1]["tool_calls"][0]["id"], "x");
    assert_eq!(out[1]["tool_calls"][1]["id"], "x#2");
    assert_eq!(
        (&out[2]["tool_call_id"], &out[2]["content"]),
        (&json!("x"), &json!("first"))
    );
    assert_eq!(
        (&out[3]["tool_call_id"], &out[3]["content"]),
        (&json!("x#2"), &json!("second"))
    );
    assert!(validate(&fixed).is_empty());
    // Nothing a provider rejects (a reused id with each call answered): no request repair.
    assert_eq!(repair_request(&m), None);
}

fn responses(v: Value) -> Vec<Message> {
    formats::responses::read(serde_json::from_value(v).unwrap()).unwrap()
}

fn computer_call(id: &str) -> Value {
    json!({"type": "computer_call", "call_id": id, "id": format!("cu_{id}"),
           "action": {"type": "screenshot"}, "status": "completed"})
}

fn computer_output(id: &str) -> Value {
    json!({"type": "computer_call_output", "call_id": id,
           "output": {"type": "computer_screenshot", "file_id": "f1"}})
}

#[test]
fn a_computer_call_and_its_output_are_a_pair() {
    let items = json!([
        {"role": "user", "content": "Look."},
        computer_call("k1"),
        computer_output("k1"),
        {"type": "local_shell_call", "call_id": "s1", "id": "ls1", "status": "completed",
         "action": {"type": "exec", "command": ["ls"], "env": {}}},
        {"type": "local_shell_call_output", "call_id": "s1", "output": "a.txt"},
        {"type": "shell_call", "call_id": "s2", "action": {"commands": ["ls"]}},
        {"type": "shell_call_output", "call_id": "s2", "output": [{"stdout": "a", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}]},
        {"type": "mcp_call", "id": "m1", "name": "get", "server_label": "s", "arguments": "{}", "output": "ok"},
        {"role": "user", "content": "What does it show?"},
    ]);
    let m = responses(items.clone());
    assert!(validate(&m).is_empty(), "{:?}", validate(&m));
    let p = Pairing::of(&m);
    let names: Vec<&str> = p.calls.iter().map(|c| c.name).collect();
    assert_eq!(names, vec!["computer_call", "local_shell_call", "shell_call"]);
    assert!(p.calls.iter().all(|c| c.result.is_some()));
    // Repaired for something else, the output stays after its call (it was made a user message
    // saying its call is not in the conversation).
    let mut broken = items.as_array().unwrap().clone();
    broken.push(json!({"type": "function_call_output", "call_id": "ghost", "output": "lost"}));
    let (fixed, changes) = repair(&responses(Value::Array(broken)));
    let kinds: Vec<&str> = changes.iter().map(|c| c.kind.as_str()).collect();
    assert_eq!(kinds, vec!["orphan_to_user"]);
    let out = formats::responses::write(&fixed);
    assert_eq!(
        &out[..items.as_array().unwrap().len()],
        items.as_array().unwrap().as_slice()
    );
}

#[test]
fn a_computer_call_without_its_output_is_missing_one_and_repair_drops_it() {
    let items =
        json!([{"role": "user", "content": "Look."}, computer_call("k1"), {"role": "user", "content": "Next."}]);
    let m = responses(items.clone());
    let found = validate(&m);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        (found[0].kind, found[0].id.as_deref()),
        (ViolationKind::MissingResult, Some("k1"))
    );
    let (fixed, changes) = repair(&m);
    assert!(
        changes
            .iter()
            .any(|c| c.kind == ChangeKind::DroppedCall && c.id.as_deref() == Some("k1"))
    );
    assert!(validate(&fixed).is_empty());
    let out = formats::responses::write(&fixed);
    assert_eq!(out.len(), 2);
    // The call the loop waits on (nothing after it) is left for its output.
    let open = responses(json!([{"role": "user", "content": "Look."}, computer_call("k1")]));
    assert_eq!(repair_request(&open), None);
    assert!(repair_with(&open, RepairOptions { leave_open: true }).1.is_empty());
}

#[test]
fn a_computer_output_moves_to_its_call_and_reused_ids_are_renamed_in_the_item() {
    let m = responses(json!([
        {"role": "user", "content": "Look."},
        computer_call("k1"),
        {"role": "user", "content": "wait"},
        computer_output("k1"),
        computer_call("k1"),
        computer_output("k1"),
    ]));
    let kinds: Vec<&str> = validate(&m).iter().map(|v| v.kind.as_str()).collect();
    assert_eq!(kinds, vec!["misplaced_result", "duplicate_id"]);
    let (fixed, _) = repair(&m);
    assert!(validate(&fixed).is_empty(), "{:?}", validate(&fixed));
    let out = formats::responses::write(&fixed);
    let types: Vec<&str> = out.iter().map(|i| i["type"].as_str().unwrap_or("message")).collect();
    assert_eq!(
        types,
        vec![
            "message",
            "computer_call",
            "computer_call_output",
            "message",
            "computer_call",
            "computer_call_output"
        ]
    );
    assert_eq!(out[4]["call_id"], "k1#2");
    assert_eq!(out[5]["call_id"], "k1#2");
    assert_eq!(out[5]["output"]["type"], "computer_screenshot");
    // A call without its output: out of the pairs (nothing the library could write in its
    // place), listed apart (validate reports it, repair drops it).
    let alone =
        responses(json!([{"role": "user", "content": "Look."}, computer_call("k9"), {"role": "user", "content": "?"}]));
    assert!(Pairing::of(&alone).calls.is_empty());
    assert_eq!(Pairing::of(&alone).unanswered_opaque.len(), 1);
}

/// `repair_request` as it was: [`repair`], then the results it synthesized for the open
/// message's calls taken back when only results follow them.
fn request_by_taking_back(messages: &[Message]) -> Option<Vec<Message>> {
    let pairing = Pairing::of(messages);
    let open = messages.iter().rposition(|m| m.role != Role::Tool);
    let needed = validate_with(messages, &pairing).iter().any(|v| match v.kind {
        ViolationKind::DuplicateId => false,
        ViolationKind::MissingResult => Some(v.index) != open,
        _ => true,
    });
    if !needed {
        return None;
    }
    let (mut out, changes) = repair(messages);
    let pending: Vec<&str> = changes
        .iter()
        .filter(|c| c.kind == ChangeKind::SynthesizedResult && Some(c.index) == open)
        .filter_map(|c| c.id.as_deref())
        .collect();
    let tail = out
        .iter()
        .rposition(|m| !crate::compact::structure::is_result_carrier(m))
        .map_or(0, |i| i + 1);
    let synthesized = |b: &Block| {
        matches!(&b.body, Body::ToolResult { tool_use_id, content: ResultContent::Text(t), .. }
            if t == INTERRUPTED && pending.contains(&tool_use_id.as_str()))
    };
    for m in &mut out[tail..] {
        m.blocks = m.blocks.iter().filter(|b| !synthesized(b)).cloned().collect();
    }
    let mut at = 0;
    out.retain(|m| {
        at += 1;
        at <= tail || !m.blocks.is_empty()
    });
    Some(out)
}

#[test]
fn leaving_the_last_calls_open_is_what_taking_their_results_back_was() {
    let mut next = xorshift(0x0dd_ba11_cafe_f00d);
    let ids = ["a", "b", "c", "ghost"];
    for round in 0..3_000 {
        let mut v = vec![json!({"role": "user", "content": "go"})];
        for _ in 0..(next() % 9) {
            let r = next();
            let id = ids[(r >> 8) as usize % ids.len()];
            v.push(match r % 7 {
                0 => json!({"role": "user", "content": "more"}),
                1 | 2 => {
                    let k = 1 + (r >> 16) as usize % 3;
                    let calls: Vec<Value> = (0..k).map(|j| call(ids[((r >> (20 + 2 * j)) % 3) as usize])).collect();
                    json!({"role": "assistant", "content": null, "tool_calls": calls})
                }
                3 => json!({"role": "assistant", "content": "said"}),
                _ => json!({"role": "tool", "tool_call_id": id, "content": "r"}),
            });
        }
        let m = chat(Value::Array(v));
        let new = repair_request(&m);
        assert_eq!(
            new,
            request_by_taking_back(&m),
            "case {round}: {:?}",
            formats::openai_chat::write(&m)
        );
        if let Some(out) = new {
            // Only the open message's calls may still wait for their results.
            let open = out.iter().rposition(|m| m.role != Role::Tool);
            assert!(
                validate(&out)
                    .iter()
                    .all(|v| v.kind == ViolationKind::MissingResult && Some(v.index) == open),
                "case {round}: {:?}",
                validate(&out)
            );
        }
    }
}

#[test]
fn reused_ids_are_renamed_to_the_first_free_numbers() {
    // Calls a, a#2 (a call's own id), a, a, then b, a, b: the renames skip the ids taken.
    let ids = ["a", "a#2", "a", "a", "b", "a", "b"];
    let calls: Vec<Value> = ids.iter().map(|id| call(id)).collect();
    let mut v = vec![json!({"role": "user", "content": "go"})];
    v.push(json!({"role": "assistant", "content": null, "tool_calls": calls}));
    v.extend(
        ids.iter()
            .map(|id| json!({"role": "tool", "tool_call_id": id, "content": "r"})),
    );
    let (fixed, _) = repair(&chat(Value::Array(v)));
    let out = formats::openai_chat::write(&fixed);
    let names: Vec<&str> = out[1]["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["a", "a#2", "a#3", "a#4", "b", "a#5", "b#2"]);
    assert!(validate(&fixed).is_empty(), "{:?}", validate(&fixed));
}
