//! Extraction for the offline summarizer: what a structured handoff needs from older history —
//! user requests verbatim, files read and modified, commands with their last outcome, errors and
//! whether they were resolved, identifiers, open work and the last thing the assistant said —
//! found by scanning messages and tool calls, with no model involved.

mod pieces;
mod rules;
mod scan;
mod spans;
mod text;
mod trail;

use super::request::text_of;
use super::structure::{FastMap, FastSet};
use crate::model::Message;
use pieces::Kind;
use scan::{CallFacts, MessageFacts};
pub use spans::Scan;
use text::{clip, last_owned};
use trail::Op;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Command {
    pub command: String,
    pub outcome: String,
    pub ok: bool,
    pub index: usize,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ErrorNote {
    pub text: String,
    pub index: usize,
    /// A later run of the same command or tool input succeeded.
    pub resolved: bool,
}

/// One file of the artifact trail: what was done to it, in the order first done, and the call
/// that touched it last.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Artifact {
    pub path: String,
    /// `read`, `created`, `edited`, `deleted`, `renamed`, each once.
    pub ops: Vec<&'static str>,
    /// The last call that touched it, in one line.
    pub last: String,
    /// The message of that call.
    pub index: usize,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Handoff {
    /// Real user messages, latest first, as `(index, text)`.
    pub user_requests: Vec<(usize, String)>,
    /// Earlier summaries found in the history (latest last).
    pub previous_summaries: Vec<String>,
    pub files_read: Vec<String>,
    pub files_modified: Vec<String>,
    /// The last outcome of each distinct command, most recent last.
    pub commands: Vec<Command>,
    pub errors: Vec<ErrorNote>,
    pub identifiers: Vec<String>,
    /// Every file path touched or named: read, written, in a command, or in user text (each once,
    /// at its last mention, most recent last).
    pub paths: Vec<String>,
    /// Test names with the status of their last run (`passed`, `failed`, `error`, `skipped`; `ran`
    /// when a command named the test and its outcome did not say; `named` when only a tool input
    /// named it, as an edit of a test file does), most recent last.
    pub tests: Vec<(String, String)>,
    /// URLs, branch names and commit hashes in user text and tool inputs, most recent last.
    pub references: Vec<String>,
    pub todos: Vec<String>,
    /// Assistant statements of intent or decision ("I'll ...", "Decided ...").
    pub decisions: Vec<String>,
    /// The last assistant text.
    pub last_assistant: Option<String>,
    /// The artifact trail: each file a call read, created, edited, deleted or renamed, most
    /// recently touched last.
    pub artifacts: Vec<Artifact>,
    /// Sentences of real user messages that state a rule ("never ...", "use X not Y"), verbatim,
    /// as `(index, text)`, latest first; each once, at its latest statement.
    pub constraints: Vec<(usize, String)>,
    /// The latest TODO list or plan a tool call set (`TodoWrite`, `update_plan`): `(item, status)`.
    pub plan: Vec<(String, String)>,
    /// The text of the latest task ledger an earlier compaction wrote into this history.
    pub previous_ledger: Option<String>,
    pub messages: usize,
    pub tool_calls: usize,
}

/// Errors kept in a handoff (the latest).
const MAX_ERRORS: usize = 50;
/// Files kept in the artifact trail and constraints kept (the latest).
const MAX_ARTIFACTS: usize = 500;
const MAX_CONSTRAINTS: usize = 100;

/// Extract a handoff from `messages`.
pub fn extract(messages: &[Message]) -> Handoff {
    Scan::default().handoff(messages)
}

/// What a merge fills in a handoff.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fields {
    All,
    /// Only what a task ledger reads: user requests, rules, the previous ledger, files read and
    /// modified, commands, errors, the artifact trail, the plan and the counts.
    Ledger,
}

/// The merge of scanned facts into a handoff of `messages`: `scanned` the facts of each message,
/// `facts` those of each call of the span, in call order, `at` the message of each call.
fn merge(
    messages: &[Message],
    at: &[usize],
    scanned: &[MessageFacts],
    facts: &[&CallFacts],
    fields: Fields,
) -> Handoff {
    let mut h = Handoff {
        messages: messages.len(),
        tool_calls: at.len(),
        ..Handoff::default()
    };
    for (i, f) in scanned.iter().enumerate() {
        h.user_requests.extend(f.request.iter().cloned());
        h.constraints.extend(f.constraints.iter().map(|c| (i, c.clone())));
        if f.ledger.is_some() {
            h.previous_ledger.clone_from(&f.ledger);
        }
    }
    if fields == Fields::All {
        merge_texts(&mut h, messages, at, scanned, facts);
    }
    h.artifacts = artifact_trail(at, facts);
    h.plan = facts.iter().rev().find_map(|f| f.plan.clone()).unwrap_or_default();
    merge_calls(&mut h, facts);
    h.user_requests.reverse();
    h.constraints = latest_constraints(&h.constraints);
    h
}

/// Merge into `h` what the messages' and calls' texts name: earlier summaries, identifiers,
/// paths, references, open work, decisions, tests and the last assistant text.
fn merge_texts(h: &mut Handoff, messages: &[Message], at: &[usize], scanned: &[MessageFacts], facts: &[&CallFacts]) {
    let last = last_assistant(messages, scanned);
    merge_texts_with(h, last, at, scanned, facts);
}

/// The last assistant text of a span (clipped as a handoff holds it), from its messages and their
/// scanned facts.
fn last_assistant(messages: &[Message], scanned: &[MessageFacts]) -> Option<String> {
    let i = scanned.iter().rposition(|f| f.has_text)?;
    Some(last_assistant_text(&messages[i]))
}

/// The text of an assistant message as a handoff's `last_assistant` holds it: trimmed, clipped.
pub fn last_assistant_text(m: &Message) -> String {
    clip(text_of(m).trim(), 600)
}

/// [`merge_texts`] with the span's last assistant text given ([`last_assistant`]): no message read.
fn merge_texts_with(
    h: &mut Handoff,
    last_assistant: Option<String>,
    at: &[usize],
    scanned: &[MessageFacts],
    facts: &[&CallFacts],
) {
    // Paths and references of messages and of calls, by message index, merged below.
    let mut paths: Vec<(usize, &str)> = Vec::new();
    let mut references: Vec<(usize, &str)> = Vec::new();
    // Texts found, each kept once (at its last mention) before it is copied.
    let (mut identifiers, mut todos, mut decisions): (Vec<&str>, Vec<&str>, Vec<&str>) = Default::default();
    for (i, f) in scanned.iter().enumerate() {
        h.previous_summaries.extend(f.summary.iter().cloned());
        identifiers.extend(f.pieces.of(Kind::Identifier));
        paths.extend(f.pieces.of(Kind::Path).map(|p| (i, p)));
        references.extend(f.pieces.of(Kind::Reference).map(|r| (i, r)));
        todos.extend(f.pieces.of(Kind::Todo));
        decisions.extend(f.pieces.of(Kind::Decision));
    }
    h.last_assistant = last_assistant;
    for (&i, f) in at.iter().zip(facts) {
        identifiers.extend(f.pieces.of(Kind::Identifier));
        paths.extend(f.pieces.of(Kind::Path).map(|p| (i, p)));
        references.extend(f.pieces.of(Kind::Reference).map(|r| (i, r)));
    }
    // Stable: within one message, in the order found. Each is then kept at its last mention.
    paths.sort_by_key(|(i, _)| *i);
    references.sort_by_key(|(i, _)| *i);
    h.paths = last_owned(paths.into_iter().map(|(_, p)| p).collect());
    h.references = last_owned(references.into_iter().map(|(_, r)| r).collect());
    h.identifiers = last_owned(identifiers);
    h.todos = last_owned(todos);
    h.decisions = last_owned(decisions);
    h.tests = latest_tests(facts);
}

/// Each rule once, at its latest statement; latest message first, in the order stated within one.
fn latest_constraints(all: &[(usize, String)]) -> Vec<(usize, String)> {
    let mut seen: FastSet<&str> = FastSet::default();
    let keep: Vec<bool> = all.iter().rev().map(|(_, c)| seen.insert(c.as_str())).collect();
    let mut out: Vec<(usize, String)> = all
        .iter()
        .zip(keep.into_iter().rev())
        .filter(|(_, k)| *k)
        .map(|(x, _)| x.clone())
        .collect();
    out.sort_by_key(|(i, _)| std::cmp::Reverse(*i));
    out.truncate(MAX_CONSTRAINTS);
    out
}

/// A file of the artifact trail while the calls are merged: its texts borrowed from the facts,
/// copied once the trail is cut to its latest files.
struct Draft<'f> {
    /// The path without a leading `./`.
    path: &'f str,
    /// Some call wrote it as `./path`.
    dotted: bool,
    ops: Vec<&'static str>,
    last: &'f str,
    index: usize,
}

/// The artifact trail of the calls, in call order: each file once with what was done to it (a
/// whole write is a creation the first time the file is seen, an edit after), the last call that
/// touched it and its message; most recently touched last.
fn artifact_trail(calls_at: &[usize], facts: &[&CallFacts]) -> Vec<Artifact> {
    let mut trail: Vec<Draft<'_>> = Vec::new();
    let mut at: FastMap<&str, usize> = FastMap::default();
    let mut opened: Option<&str> = None;
    // The order of each file's last touch (calls of one message share its index).
    let mut touched: Vec<usize> = Vec::new();
    let mut seq = 0;
    for (&call_at, f) in calls_at.iter().zip(facts) {
        let open_edit = f.edits_open_file.then_some(opened).flatten().map(|p| (p, Op::Edited));
        let touches = f.pieces.touches();
        for (written, op) in touches.chain(open_edit) {
            // One entry per file however it is written; shown as `./x` when a call wrote it so
            // (the path as the agent wrote it, which names `x` too).
            let (path, dotted) = written.strip_prefix("./").map_or((written, false), |p| (p, true));
            // The file a path-less `edit` edits: the one opened last (SWE-agent's `create`
            // opens the file it creates).
            if matches!(op, Op::Read | Op::Created) {
                opened = Some(path);
            }
            let k = *at.entry(path).or_insert_with(|| {
                trail.push(Draft {
                    path,
                    dotted: false,
                    ops: Vec::new(),
                    last: "",
                    index: 0,
                });
                touched.push(0);
                trail.len() - 1
            });
            seq += 1;
            touched[k] = seq;
            let a = &mut trail[k];
            a.dotted |= dotted;
            let name = match op {
                Op::Written if !a.ops.is_empty() => Op::Edited.name(),
                op => op.name(),
            };
            if !a.ops.contains(&name) {
                a.ops.push(name);
            }
            a.last = f.pieces.first(Kind::Described).unwrap_or("");
            a.index = call_at;
        }
    }
    let mut order: Vec<(usize, Draft<'_>)> = touched.into_iter().zip(trail).collect();
    order.sort_unstable_by_key(|(t, _)| *t);
    let excess = order.len().saturating_sub(MAX_ARTIFACTS);
    order
        .into_iter()
        .skip(excess)
        .map(|(_, a)| Artifact {
            // A path that still starts with `./` (written `././x`) is shown as it is.
            path: if a.dotted && !a.path.starts_with("./") {
                format!("./{}", a.path)
            } else {
                a.path.to_owned()
            },
            ops: a.ops,
            last: a.last.to_owned(),
            index: a.index,
        })
        .collect()
}

/// Each test once, at its last mention, with its latest known status ("ran" only when no
/// runner output said more).
fn latest_tests(facts: &[&CallFacts]) -> Vec<(String, String)> {
    // A runner's status is kept until another runner's; "ran" beats "named".
    let weak = |st: &str| match st {
        "named" => 0,
        "ran" => 1,
        _ => 2,
    };
    let mut tests: FastMap<&str, (usize, &'static str)> = FastMap::default();
    let mut order = 0;
    for f in facts {
        for (name, status) in f.tests.iter() {
            order += 1;
            let entry = tests.entry(name).or_insert((0, status));
            entry.0 = order;
            if weak(status) == 2 || weak(status) > weak(entry.1) {
                entry.1 = status;
            }
        }
    }
    let mut tests: Vec<(usize, &str, &str)> = tests.into_iter().map(|(n, (at, st))| (at, n, st)).collect();
    tests.sort_unstable_by_key(|(at, _, _)| *at);
    tests
        .into_iter()
        .map(|(_, n, st)| (n.to_owned(), st.to_owned()))
        .collect()
}

/// Merge the calls' files, commands and errors into `h`, in call order: each file once at its
/// last mention, each distinct command at its latest run, the latest [`MAX_ERRORS`] errors (the
/// texts copied only for what is kept).
fn merge_calls(h: &mut Handoff, facts: &[&CallFacts]) {
    let mut last_ok: FastMap<&str, usize> = FastMap::default();
    let (mut read, mut modified): (Vec<&str>, Vec<&str>) = Default::default();
    let mut errors: Vec<&(ErrorNote, String)> = Vec::new();
    let mut commands: Vec<&Command> = Vec::new();
    for f in facts {
        read.extend(f.pieces.first(Kind::Read));
        modified.extend(f.pieces.of(Kind::Modified));
        errors.extend(&f.errors);
        if let Some((key, index)) = &f.ok {
            last_ok.insert(key.as_str(), *index);
        }
        commands.extend(&f.command);
    }
    h.files_read = last_owned(read);
    h.files_modified = last_owned(modified);
    // One entry per distinct command, at the position of its latest run.
    let mut seen: FastSet<&str> = FastSet::default();
    let mut latest: Vec<&Command> = commands
        .into_iter()
        .rev()
        .filter(|c| seen.insert(c.command.as_str()))
        .collect();
    latest.reverse();
    h.commands = latest.into_iter().cloned().collect();
    // An error is resolved when the same command or tool input later succeeded.
    let excess = errors.len().saturating_sub(MAX_ERRORS);
    h.errors = errors[excess..]
        .iter()
        .map(|(e, key)| ErrorNote {
            resolved: last_ok.get(key.as_str()).is_some_and(|&i| i > e.index),
            ..e.clone()
        })
        .collect();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats;
    use serde_json::json;

    #[test]
    fn extracts_the_working_state() {
        let v = json!([
            {"role": "user", "content": "Fix the failing test in tests/test_app.py; do not touch src/legacy.py."},
            {"role": "assistant", "content": "I'll run the tests first.", "tool_calls": [
                {"id": "1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"pytest -q\"}"}}]},
            {"role": "tool", "tool_call_id": "1", "content": "Traceback (most recent call last):\n  File \"src/app.py\", line 3\nKeyError: 'name'\n1 failed, 4 passed"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "2", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"src/app.py\"}"}},
                {"id": "3", "type": "function", "function": {"name": "edit_file", "arguments": "{\"path\": \"src/app.py\", \"old\": \"a\", \"new\": \"b\"}"}}]},
            {"role": "tool", "tool_call_id": "2", "content": "x = 1"},
            {"role": "tool", "tool_call_id": "3", "content": "ok"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "4", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"pytest -q\"}"}}]},
            {"role": "tool", "tool_call_id": "4", "content": "5 passed in 0.2s"},
            {"role": "assistant", "content": "Fixed. Next: update the changelog."}
        ]);
        let m = formats::openai_chat::read(serde_json::from_value(v).unwrap()).unwrap();
        let h = extract(&m);
        assert_eq!(h.user_requests.len(), 1);
        assert!(h.user_requests[0].1.contains("do not touch src/legacy.py"));
        assert_eq!(h.files_read, vec!["src/app.py"]);
        assert_eq!(h.files_modified, vec!["src/app.py"]);
        assert_eq!(h.commands.len(), 1);
        assert_eq!(h.commands[0].outcome, "5 passed in 0.2s");
        assert!(h.commands[0].ok);
        assert!(
            h.errors
                .iter()
                .any(|e| e.text.starts_with("KeyError: 'name'") && e.resolved)
        );
        assert!(h.identifiers.contains(&"tests/test_app.py".to_owned()));
        assert!(h.identifiers.contains(&"KeyError".to_owned()));
        assert_eq!(h.todos, vec!["Fixed. Next: update the changelog."]);
        assert_eq!(h.decisions, vec!["I'll run the tests first."]);
        assert_eq!(h.paths, vec!["tests/test_app.py", "src/legacy.py", "src/app.py"]);
    }

    #[test]
    fn extracts_paths_tests_references_and_earlier_summaries() {
        let v = json!([
            {"role": "user", "content": "The conversation history before this point was compacted into the following summary:\n\n<summary>pi's notes</summary>"},
            {"role": "user", "content": "Codex wrote this one", "compaction": {"source": "codex"}},
            {"role": "user", "content": "<task-notification>\n<summary>Background command done</summary>\n</task-notification>"},
            {"role": "user", "content": "Branch off with git checkout -b fix/parser, see https://example.com/issue/7 and commit 1a2b3c4d; edit setup.cfg."},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"pytest tests/test_p.py::test_empty -v && cat ./conf/app.toml\"}"}}]},
            {"role": "tool", "tool_call_id": "1", "content": "tests/test_p.py::test_empty FAILED\nFAILED tests/test_p.py::test_other - ParseError: bad\nclass ConfigurationError(Exception): pass"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "2", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"pytest tests/test_p.py::test_empty\"}"}}]},
            {"role": "tool", "tool_call_id": "2", "content": "PASSED tests/test_p.py::test_empty\n1 passed"}
        ]);
        let m = formats::native::read(serde_json::from_value(v).unwrap()).unwrap();
        let h = extract(&m);
        assert_eq!(
            h.previous_summaries.len(),
            2,
            "pi's prefix and an importer's compaction key"
        );
        assert_eq!(h.user_requests.len(), 1);
        assert!(h.paths.contains(&"setup.cfg".to_owned()) && h.paths.contains(&"./conf/app.toml".to_owned()));
        assert!(
            !h.paths.iter().any(|p| p.contains("example.com")),
            "a URL is not a path: {:?}",
            h.paths
        );
        assert_eq!(
            h.references,
            vec!["fix/parser", "https://example.com/issue/7", "1a2b3c4d"]
        );
        assert_eq!(
            h.tests,
            vec![
                ("tests/test_p.py::test_other".to_owned(), "failed".to_owned()),
                ("tests/test_p.py::test_empty".to_owned(), "passed".to_owned()),
            ]
        );
        for name in ["ParseError", "ConfigurationError"] {
            assert!(
                h.identifiers.contains(&name.to_owned()),
                "{name} in {:?}",
                h.identifiers
            );
        }
    }
}

#[cfg(test)]
mod ledger_tests;

#[cfg(test)]
mod scan_tests;

#[cfg(test)]
mod spans_tests;
