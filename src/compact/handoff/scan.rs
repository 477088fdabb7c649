//! What one message or one tool call contributes to a handoff, scanned independently (so the
//! scans can run in parallel) and merged in order by [`super::extract`].

use super::pieces::{Kind, Pieces, Touches};
use super::rules::constraints_in;
use super::text::{
    Tests, clip, clipped, error_lines, exception_types, first_line, has, identifier, identifiers_in, last_lines,
    nonempty_words, outcome_of, patch_paths, path, paths_of, references_of, test_statuses, trimmed, words,
};
use super::trail::{argv_command, describe, patch_ops, plan_of, shell_ops, tool_op};
use super::{Command, ErrorNote};
use crate::compact::args::{Arg, Args};
use crate::compact::request::{AskKind, LEDGER_PREFIX, ask_kind, ask_kind_of_text, text_of};
use crate::compact::structure::{Call, is_user_turn};
use crate::model::{Body, Message, Role, ToolInput};

const PATH_KEYS: &[&str] = &[
    "path",
    "file_path",
    "filePath",
    "file",
    "filename",
    "target_file",
    "notebook_path",
];
const COMMAND_KEYS: &[&str] = &["command", "cmd", "script", "code"];

pub(super) fn is_read_tool(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    [
        "read", "view", "cat", "open", "grep", "search", "glob", "find", "list", "ls",
    ]
    .iter()
    .any(|k| n.contains(k))
}

pub(super) fn is_write_tool(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    [
        "write",
        "edit",
        "create",
        "patch",
        "replace",
        "insert",
        "apply",
        "str_replace",
        "multiedit",
    ]
    .iter()
    .any(|k| n.contains(k))
}

/// What one user or assistant message contributes to a handoff.
#[derive(Default)]
pub(super) struct MessageFacts {
    pub(super) summary: Option<String>,
    pub(super) request: Option<(usize, String)>,
    /// Its identifiers, paths, references, lines of open work and decisions, in one buffer.
    pub(super) pieces: Pieces,
    /// Rules the user stated in this message, verbatim.
    pub(super) constraints: Vec<String>,
    /// The text of a task ledger an earlier compaction wrote.
    pub(super) ledger: Option<String>,
    /// Assistant text that is not blank (the last one becomes `last_assistant`).
    pub(super) has_text: bool,
}

pub(super) fn scan_message(i: usize, m: &Message) -> MessageFacts {
    let mut f = MessageFacts::default();
    match m.role {
        Role::User if is_user_turn(m) => {
            let text = text_of(m);
            let kind = ask_kind(m);
            if kind == AskKind::Summary {
                f.summary = Some(text.into_owned());
                return f;
            }
            // The text's words, split once for the three scans (an empty one is none of the
            // three, so only the others are kept).
            let all = nonempty_words(&text);
            identifiers_and_paths(all.iter().copied(), &mut f.pieces);
            references_of(&all, &mut f.pieces.to(Kind::Reference));
            if kind == AskKind::Request {
                f.request = Some((i, text.trim().to_owned()));
                // Only the user's own blocks (not a reminder a harness put before them) state rules.
                for b in m.blocks.iter() {
                    if let Body::Text { text } = &b.body {
                        if ask_kind_of_text(text, false) == AskKind::Request {
                            constraints_in(text, &mut f.constraints);
                        }
                    }
                }
            } else if text.trim_start().starts_with(LEDGER_PREFIX) {
                f.ledger = Some(text.trim().to_owned());
            }
        }
        Role::Assistant => {
            let text = text_of(m);
            if text.trim().is_empty() {
                return f;
            }
            identifiers_and_paths(words(&text).filter(|w| !w.is_empty()), &mut f.pieces);
            for line in text.lines().map(trimmed) {
                if names_open_work(line) {
                    f.pieces.push(Kind::Todo, &clipped(line, 200));
                }
                if states_a_decision(line) {
                    f.pieces.push(Kind::Decision, &clipped(line, 200));
                }
            }
            f.has_text = true;
        }
        _ => {}
    }
    f
}

/// The identifiers and paths of a text's non-empty words (what [`super::text::identifiers_of`] and
/// [`paths_of`] find), in one pass over them.
fn identifiers_and_paths<'t>(words: impl Iterator<Item = &'t str>, pieces: &mut Pieces) {
    for word in words {
        if let Some(w) = identifier(word) {
            pieces.push(Kind::Identifier, w);
        }
        if let Some(p) = path(word) {
            pieces.push(Kind::Path, p);
        }
    }
}

/// Whether `a` starts with `lower` (ASCII lower case) in any ASCII case.
fn starts_folded(a: &[u8], lower: &[u8]) -> bool {
    a.len() >= lower.len() && a[..lower.len()].eq_ignore_ascii_case(lower)
}

/// Whether a line of assistant text names open work: it starts with `next` or contains `todo`,
/// `next:`, `next step`, `still need` or `remaining:`, in any ASCII case (no lower-case copy:
/// each needle is compared where a byte of it that prose has few of is: the `x` of `next`, the
/// `d` of `todo` and of `still need`, the `:` of `remaining:`).
pub(super) fn names_open_work(line: &str) -> bool {
    let b = line.as_bytes();
    // `needle` starts `back` bytes before `p`.
    let at = |p: usize, back: usize, needle: &[u8]| p >= back && starts_folded(&b[p - back..], needle);
    starts_folded(b, b"next")
        || memchr::memchr2_iter(b'x', b'X', b).any(|p| at(p, 2, b"next:") || at(p, 2, b"next step"))
        || memchr::memchr2_iter(b'd', b'D', b).any(|p| at(p, 2, b"todo") || at(p, 9, b"still need"))
        || memchr::memchr_iter(b':', b).any(|p| at(p, 9, b"remaining:"))
}

/// Whether a line of assistant text states an intent or a decision: it starts with `i'll `, `i
/// will `, `let's `, `decided`, `the fix is`, `the cause is` or `root cause`, in any ASCII case.
pub(super) fn states_a_decision(line: &str) -> bool {
    let b = line.as_bytes();
    [
        &b"i'll "[..],
        b"i will ",
        b"let's ",
        b"decided",
        b"the fix is",
        b"the cause is",
        b"root cause",
    ]
    .iter()
    .any(|p| starts_folded(b, p))
}

/// Calls from which on extraction runs on all cores.
pub(super) const PARALLEL_CALLS: usize = 256;

/// What one tool call contributes to a handoff.
#[derive(Default)]
pub(super) struct CallFacts {
    /// Its identifiers, paths, references, the file read, the files modified, the files touched
    /// with what it did to each (the artifact trail) and the call in one line, in one buffer.
    pub(super) pieces: Pieces,
    pub(super) tests: Tests,
    pub(super) command: Option<Command>,
    pub(super) errors: Vec<(ErrorNote, String)>,
    /// The call's key and the message of its result, when it succeeded.
    pub(super) ok: Option<(String, usize)>,
    /// An edit that names no file (SWE-agent's `edit`): it edits the file opened last.
    pub(super) edits_open_file: bool,
    /// The TODO list or plan the call set.
    pub(super) plan: Option<Vec<(String, String)>>,
}

pub(super) fn scan_call(messages: &[Message], c: &Call<'_>, (reads, writes): (bool, bool)) -> CallFacts {
    let mut f = CallFacts::default();
    let Body::ToolUse { input, .. } = &messages[c.at.0].blocks[c.at.1].body else {
        return f;
    };
    let args = Args::of(input);
    let path_key = str_member(&args, PATH_KEYS);
    let path = path_key.map(|(_, p)| p);
    if let Some(p) = path {
        identifiers_in(p, &mut f.pieces.to(Kind::Identifier));
        if writes {
            f.pieces.push(Kind::Modified, p);
        } else if reads {
            f.pieces.push(Kind::Read, p);
        }
    }
    if let ToolInput::Freeform(text) = input {
        patch_paths(text).for_each(|p| f.pieces.push(Kind::Modified, p));
    } else if let Some(patch) = args.get("input").and_then(Arg::as_str) {
        patch_paths(patch).for_each(|p| f.pieces.push(Kind::Modified, p));
    }
    if let Some(p) = path {
        f.pieces.push(Kind::Path, p);
    }
    f.pieces.also(Kind::Modified, Kind::Path);
    let full_command = scan_input(&args, path_key.map(|(k, _)| k), &mut f);
    trail(c.name, input, &args, path, full_command, (reads, writes), &mut f);
    let command = full_command.map(|s| first_line(s, 160));
    let Some(at) = c.result else { return f };
    let Body::ToolResult { content, is_error, .. } = &messages[at.0].blocks[at.1].body else {
        return f;
    };
    if crate::compact::clear::is_placeholder(content) {
        return f;
    }
    // Exception types are named anywhere in an output (a traceback, a class in a file read).
    let text = content.text();
    exception_types(&text, &mut f.pieces.to(Kind::Identifier));
    // File contents are evidence of code, not of failures or outcomes: a read that the tool
    // did not mark as an error has nothing more to give.
    if crate::compact::clear::is_placeholder(content)
        || (reads && !writes && *is_error != Some(true) && command.is_none())
    {
        return f;
    }
    let key = command
        .clone()
        .unwrap_or_else(|| format!("{}({})", c.name, path.unwrap_or("")));
    test_statuses(&text, &mut f.tests);
    // Outputs put their outcome and their errors at the end: only the last lines are read.
    let tail_lines = last_lines(&text, 60);
    let (outcome, mut ok) = outcome_of(&tail_lines[tail_lines.len().saturating_sub(30)..]);
    if *is_error == Some(true) {
        ok = false;
    }
    let traceback = tail_lines
        .iter()
        .any(|l| l.starts_with("Traceback (most recent call last)"));
    if !ok || traceback {
        for line in error_lines(&tail_lines) {
            identifiers_in(&line, &mut f.pieces.to(Kind::Identifier));
            let note = ErrorNote {
                text: format!("{line} (from {})", clip(&key, 100)),
                index: at.0,
                resolved: false,
            };
            f.errors.push((note, key.clone()));
        }
    }
    if ok {
        f.ok = Some((key, at.0));
    }
    if let Some(cmd) = command {
        f.command = Some(Command {
            command: cmd,
            outcome,
            ok,
            index: at.0,
        });
    }
    f
}

/// The artifact trail of one call: what it did to which files (a file tool's path, a patch, a
/// shell command's verbs), described in one line; and the plan it set.
fn trail(
    name: &str,
    input: &ToolInput,
    args: &Args<'_>,
    path: Option<&str>,
    command: Option<&str>,
    (reads, writes): (bool, bool),
    f: &mut CallFacts,
) {
    let subcommand = args.get("command").and_then(Arg::as_str).filter(|s| !s.contains(' '));
    if let Some(p) = path {
        if let Some(op) = tool_op(name, subcommand, reads, writes) {
            f.pieces.touch(p, op);
        }
    }
    if let ToolInput::Freeform(text) = input {
        patch_ops(text, &mut f.pieces);
    } else if let Some(patch) = args.get("input").and_then(Arg::as_str) {
        patch_ops(patch, &mut f.pieces);
    }
    let argv = if command.is_none() { argv_command(args) } else { None };
    let shell = command.or(argv.as_deref());
    if let (Some(cmd), None) = (shell, subcommand.filter(|_| path.is_some())) {
        shell_ops(cmd, &mut f.pieces);
    }
    let touched = f.pieces.touches().next().is_some();
    f.edits_open_file = !touched && writes && path.is_none() && name.eq_ignore_ascii_case("edit");
    if touched || f.edits_open_file {
        let command = subcommand.filter(|_| path.is_some()).or(shell);
        f.pieces
            .push_with(Kind::Described, |out| describe(name, path, command, out));
    }
    if args.get("todos").is_some() || args.get("plan").is_some() {
        f.plan = plan_of(args);
    }
}

/// The command, paths, references and test names a tool input names (past its path, which
/// [`scan_call`] reads): the full command, when there is one.
fn scan_input<'s>(args: &'s Args<'_>, path_key: Option<&str>, f: &mut CallFacts) -> Option<&'s str> {
    let command = str_member(args, COMMAND_KEYS);
    let full_command = command.map(|(_, c)| c);
    if let Some(cmd) = full_command {
        // An empty word is no path, reference or test name.
        let all = nonempty_words(cmd);
        paths_of(all.iter().copied(), &mut f.pieces.to(Kind::Path));
        references_of(&all, &mut f.pieces.to(Kind::Reference));
        for &word in &all {
            if has(word, "::test_") || (word.starts_with("test_") && word.len() > 5) {
                f.tests.push(word, "ran");
            }
        }
    }
    // Other inputs (contents written, edits, patches, queries, URLs to fetch) name paths, test
    // names, URLs and commits too.
    let used = [path_key, command.map(|(k, _)| k)];
    for_other_strings(args, |k| used.iter().flatten().any(|u| *u == k), &mut |text| {
        let all = nonempty_words(text);
        paths_of(all.iter().copied(), &mut f.pieces.to(Kind::Path));
        references_of(&all, &mut f.pieces.to(Kind::Reference));
        for &word in &all {
            let w = word.trim_end_matches([':', '.', ',']);
            if has(w, "::test_") || (w.starts_with("test_") && w.len() > 8) {
                f.tests.push(w, "named");
            }
        }
    });
    full_command
}

/// The first of `keys` whose member is a string: the key and the string.
fn str_member<'s>(args: &'s Args<'_>, keys: &[&'static str]) -> Option<(&'static str, &'s str)> {
    keys.iter()
        .find_map(|k| args.get(k).and_then(Arg::as_str).map(|v| (*k, v)))
}

/// Call `each` with every string value of a tool input (nested ones included) except the
/// top-level members whose key `skip` accepts.
fn for_other_strings(args: &Args<'_>, skip: impl Fn(&str) -> bool, each: &mut impl FnMut(&str)) {
    fn walk(v: &serde_json::Value, each: &mut impl FnMut(&str)) {
        match v {
            serde_json::Value::String(s) => each(s),
            serde_json::Value::Array(items) => items.iter().for_each(|x| walk(x, each)),
            serde_json::Value::Object(map) => map.values().for_each(|x| walk(x, each)),
            _ => {}
        }
    }
    match args {
        Args::Object(members) => {
            for (k, v) in members {
                if skip(k) {
                    continue;
                }
                match v {
                    Arg::Str(s) => each(s),
                    Arg::Other(v) => walk(v, each),
                }
            }
        }
        Args::Other(v) => walk(v, each),
    }
}
