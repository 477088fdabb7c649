use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::*;
use crate::compact::clear::{ClearOptions, apply, plan_clear};
use crate::compact::select::{Protected, protected};
use crate::compact::testing::{chat, xorshift};
use crate::compact::validate;
use crate::model::{Format, Message, ResultContent, Role};
use crate::tokens::{self, Encoding};

/// A Chat session: `calls` of (tool, arguments, result), one assistant call and one result each.
fn session(calls: &[(&str, Value, &str)]) -> Vec<Message> {
    let mut turns = vec![json!({"role": "user", "content": "go"})];
    for (k, (tool, args, result)) in calls.iter().enumerate() {
        let id = format!("call_{k}");
        turns.push(json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": id, "type": "function", "function": {"name": tool, "arguments": args.to_string()}}]}));
        turns.push(json!({"role": "tool", "tool_call_id": id, "content": result}));
    }
    turns.push(json!({"role": "user", "content": "and now?"}));
    chat(Value::Array(turns))
}

fn writes(n: usize) -> Vec<Message> {
    let calls: Vec<(&str, Value, &str)> = (0..n)
        .map(|k| {
            let content = format!("line {k}\n").repeat(200);
            (
                "write",
                json!({"path": format!("src/m{k}.py"), "content": content}),
                "ok",
            )
        })
        .collect();
    session(&calls)
}

fn inputs_only() -> ClearOptions {
    ClearOptions {
        clear_tool_inputs: true,
        ..ClearOptions::default()
    }
}

fn clear(messages: &[Message], recent_tools: usize, options: &ClearOptions) -> (Vec<Message>, usize, Vec<usize>) {
    let pairing = Pairing::of(messages);
    let prot: Protected = protected(messages, &pairing, 1, recent_tools, &BTreeSet::new());
    let (changed, report) = plan_clear(messages, &pairing, &prot, Encoding::O200k, options);
    (apply(messages, changed), report.tokens_freed, report.inputs_cleared)
}

/// `(id, name, input)` of every call, in order.
fn calls(messages: &[Message]) -> Vec<(String, String, ToolInput)> {
    messages
        .iter()
        .flat_map(|m| m.blocks.iter())
        .filter_map(|b| match &b.body {
            Body::ToolUse { id, name, input } => Some((id.clone(), name.clone(), input.clone())),
            _ => None,
        })
        .collect()
}

fn total(messages: &[Message]) -> usize {
    messages
        .iter()
        .map(|m| tokens::count_message(Encoding::O200k, m).total)
        .sum()
}

#[test]
fn the_placeholder_says_what_was_there_and_where_the_original_is() {
    let input = ToolInput::Raw(r#"{"path": "src/app.py", "content": "import os\nprint(1)"}"#.into());
    let text = input_placeholder_text("write", &input, 12_345, "call_7");
    assert!(
        text.starts_with("[cleared: arguments of write(path=src/app.py, content=import os"),
        "{text}"
    );
    assert!(text.ends_with(", 12,345 tokens; recall id call_7#arguments]"), "{text}");
    assert!(input_placeholder_text("write", &input, 5, "").ends_with(", 5 tokens; not stored]"));
    // A long call is described in at most 60 characters, closed as a call.
    let long =
        ToolInput::Raw(json!({"path": "a/very/long/path/to/some/module.py", "content": "x".repeat(500)}).to_string());
    let cut = input_placeholder_text("write", &long, 900, "c");
    let description = cut
        .strip_prefix(INPUT_PLACEHOLDER_OPEN)
        .unwrap()
        .split("), 900 tokens")
        .next()
        .unwrap();
    assert!(description.chars().count() < 60, "{description}"); // with its ")": 60
    assert!(
        description.ends_with('…') && description.starts_with("write(path=a/very/long/path"),
        "{cut}"
    );
    let short = input_placeholder_text("ls", &ToolInput::Raw("{}".into()), 9, "c");
    assert!(short.starts_with("[cleared: arguments of ls(), 9 tokens"), "{short}");
    let replaced = input_placeholder("write", &input, 12_345, "call_7");
    let parsed: Value = serde_json::from_str(&replaced.as_text()).unwrap();
    assert_eq!(parsed, json!({"cleared": text}));
    assert_eq!(grouped(0), "0");
    assert_eq!(grouped(999), "999");
    assert_eq!(grouped(1_000), "1,000");
    assert_eq!(grouped(1_234_567), "1,234,567");
}

#[test]
fn placeholders_are_recognised_in_every_form_and_nothing_else_is() {
    let json_input = ToolInput::Json(Box::new(json!({"path": "a.py"})));
    let p = input_placeholder("read", &json_input, 40, "c1");
    assert!(is_cleared_input(&p));
    // After a round trip through arguments text, compact or spaced.
    assert!(is_cleared_input(&ToolInput::Raw(p.as_text().into_owned())));
    let spaced = serde_json::to_string_pretty(&serde_json::from_str::<Value>(&p.as_text()).unwrap()).unwrap();
    assert!(is_cleared_input(&ToolInput::Raw(spaced)));
    let free = input_placeholder("apply_patch", &ToolInput::Freeform("*** Begin Patch".into()), 40, "c2");
    assert!(matches!(free, ToolInput::Freeform(_)) && is_cleared_input(&free));
    assert!(!is_cleared_input(&json_input));
    assert!(!is_cleared_input(&ToolInput::Raw(r#"{"cleared": "yes"}"#.into())));
    let mentions = json!({"cleared": "[cleared: arguments of x", "other": 1}).to_string();
    assert!(!is_cleared_input(&ToolInput::Raw(mentions)));
    assert!(!is_cleared_input(&ToolInput::Raw(
        "not json [cleared: arguments of x".into()
    )));
}

#[test]
fn old_arguments_are_cleared_though_their_small_results_are_not() {
    let messages = writes(6);
    let (out, freed, inputs) = clear(&messages, 2, &inputs_only());
    let (before, after) = (calls(&messages), calls(&out));
    for (k, (b, a)) in before.iter().zip(&after).enumerate() {
        assert_eq!((&a.0, &a.1), (&b.0, &b.1), "ids and names stay");
        assert_eq!(is_cleared_input(&a.2), k < 4, "call {k}: {:?}", a.2.as_text());
    }
    assert!(validate(&out).is_empty());
    assert_eq!(inputs, vec![1, 3, 5, 7]);
    assert_eq!(freed, total(&messages) - total(&out));
    assert!(freed > 2_000, "{freed}");
    // The results ("ok") were too small to clear.
    let results = |ms: &[Message]| -> Vec<Body> {
        ms.iter()
            .filter(|m| m.role == Role::Tool)
            .map(|m| m.blocks[0].body.clone())
            .collect()
    };
    assert_eq!(results(&out), results(&messages));
}

#[test]
fn off_by_default_and_excluded_tools_keep_their_arguments() {
    let messages = writes(5);
    let (out, _, inputs) = clear(&messages, 1, &ClearOptions::default());
    assert!(inputs.is_empty());
    assert_eq!(calls(&out), calls(&messages));
    let options = ClearOptions {
        exclude_tools: BTreeSet::from(["write".to_owned()]),
        ..inputs_only()
    };
    let (out, freed, _) = clear(&messages, 1, &options);
    assert_eq!((calls(&out), freed), (calls(&messages), 0));
}

#[test]
fn arguments_of_calls_cleared_earlier_are_cleared_later_and_once() {
    let calls_with_big_results: Vec<(&str, Value, String)> = (0..4)
        .map(|k| ("write", json!({"content": "x ".repeat(500 + k)}), "y ".repeat(800)))
        .collect();
    let borrowed: Vec<(&str, Value, &str)> = calls_with_big_results
        .iter()
        .map(|(t, a, r)| (*t, a.clone(), r.as_str()))
        .collect();
    let messages = session(&borrowed);
    // Results first, without the inputs; then a pass with inputs clears only the arguments.
    let (first, _, inputs) = clear(&messages, 0, &ClearOptions::default());
    assert!(inputs.is_empty());
    let (second, freed, inputs) = clear(&first, 0, &inputs_only());
    assert_eq!(inputs, vec![1, 3, 5, 7]);
    assert_eq!(freed, total(&first) - total(&second));
    let (third, freed, inputs) = clear(&second, 0, &inputs_only());
    assert_eq!((freed, inputs.len()), (0, 0));
    assert_eq!(third, second);
}

#[test]
fn clear_at_least_counts_the_arguments_freed() {
    let messages = writes(3);
    let (_, freed, _) = clear(&messages, 0, &inputs_only());
    let options = ClearOptions {
        clear_at_least: freed + 1,
        ..inputs_only()
    };
    let (out, freed, inputs) = clear(&messages, 0, &options);
    assert_eq!((out, freed, inputs.len()), (messages, 0, 0));
}

#[test]
fn free_form_input_becomes_the_placeholder_text() {
    let mut messages = vec![Message::text(Role::User, "go")];
    let call = Block::new(Body::ToolUse {
        id: "c1".into(),
        name: "apply_patch".into(),
        input: ToolInput::Freeform(format!("*** Begin Patch\n{}", "+ line\n".repeat(300))),
    });
    messages.push(Message::new(Role::Assistant, vec![call], Format::Responses));
    let result = Block::new(Body::ToolResult {
        tool_use_id: "c1".into(),
        content: ResultContent::Text("done".into()),
        is_error: None,
    });
    messages.push(Message::new(Role::Tool, vec![result], Format::Responses));
    messages.push(Message::text(Role::User, "next"));
    let (out, freed, _) = clear(&messages, 0, &inputs_only());
    let (_, _, input) = &calls(&out)[0];
    assert!(
        matches!(input, ToolInput::Freeform(t) if t.starts_with("[cleared: arguments of apply_patch(*** Begin Patch"))
    );
    assert!(freed > 500);
}

/// Random sessions: the pairs stay valid, ids and names stay, the newest `recent_tools` calls and
/// the excluded tools keep their arguments, every cleared input is valid JSON and recognised,
/// the report's tokens are the difference of the totals, and a second pass changes nothing.
#[test]
fn property_arguments_clearing_keeps_every_pair_and_the_protected_calls() {
    let mut next = xorshift(0x5eed_a11c);
    let tools = ["write", "read", "bash", "edit"];
    for round in 0..60 {
        let n = (next() % 12) as usize;
        let calls_spec: Vec<(&str, Value, String)> = (0..n)
            .map(|_| {
                let tool = tools[(next() % 4) as usize];
                let args = json!({"path": "a.py", "content": "z ".repeat((next() % 400) as usize)});
                (tool, args, "r ".repeat((next() % 300) as usize))
            })
            .collect();
        let borrowed: Vec<(&str, Value, &str)> =
            calls_spec.iter().map(|(t, a, r)| (*t, a.clone(), r.as_str())).collect();
        let messages = session(&borrowed);
        let recent_tools = (next() % 4) as usize;
        let exclude: BTreeSet<String> = if next() % 2 == 0 {
            BTreeSet::from(["bash".to_owned()])
        } else {
            BTreeSet::new()
        };
        let options = ClearOptions {
            exclude_tools: exclude.clone(),
            ..inputs_only()
        };
        let (out, freed, _) = clear(&messages, recent_tools, &options);
        assert!(validate(&out).is_empty(), "round {round}");
        assert_eq!(freed, total(&messages) - total(&out), "round {round}");
        let (before, after) = (calls(&messages), calls(&out));
        assert_eq!(before.len(), after.len());
        for (k, (b, a)) in before.iter().zip(&after).enumerate() {
            assert_eq!((&a.0, &a.1), (&b.0, &b.1));
            let newest = k + recent_tools >= before.len();
            if newest || exclude.contains(&b.1) {
                assert_eq!(a.2, b.2, "round {round}, call {k} is protected");
            } else if b.2.as_text().len() > 600 {
                assert!(
                    is_cleared_input(&a.2),
                    "round {round}, call {k}: a large old input stays"
                );
            }
            if a.2 != b.2 {
                assert!(is_cleared_input(&a.2));
                serde_json::from_str::<Value>(&a.2.as_text()).expect("valid JSON");
            }
        }
        // (A second pass may clear a result whose placeholder, describing the now shorter
        // call, has become smaller than it; it clears no more arguments.)
        let (again, _, inputs_again) = clear(&out, recent_tools, &options);
        assert_eq!(
            calls(&again),
            after,
            "round {round}: a second pass clears no more arguments"
        );
        assert!(inputs_again.is_empty(), "round {round}");
    }
}
