//! Extraction for the offline summarizer: what a structured handoff needs from older history —
//! user requests verbatim, files read and modified, commands with their last outcome, errors and
//! whether they were resolved, identifiers, open work and the last thing the assistant said —
//! found by scanning messages and tool calls, with no model involved.

use std::borrow::Cow;
use std::hash::BuildHasherDefault;

use rayon::prelude::*;

use super::args::{Arg, Args};
use super::structure::{FastMap, FastSet, Pairing, Shape, is_user_turn};
use crate::model::{Body, Message, Role, ToolInput};

/// Text that starts a summary this library (or a well-known harness) wrote into history: ours,
/// Claude Code's, pi's, and Codex's hand-off. A message an importer marked with a `compaction`
/// key is a summary too, whatever its words.
pub const SUMMARY_PREFIXES: &[&str] = &[
    "[agentcontext: earlier conversation compacted",
    "This session is being continued from a previous conversation",
    "The conversation history before this point was compacted",
    "Another language model started to solve this problem",
];

/// Text that harnesses put in user turns without the user typing it: Claude Code's task
/// notifications, command echoes, interruption markers and reminders. Such a message is never
/// taken for the user's request (its identifiers and paths still count).
pub const NOT_REQUEST_PREFIXES: &[&str] = &[
    "<task-notification>",
    "<local-command-",
    "<command-name>",
    "<command-message>",
    "<system-reminder>",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
    "[Request interrupted by user",
    "Caveat: The messages below were generated",
];

/// What a message is to the search for the user's latest ask ([`latest_ask`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AskKind {
    /// Not the user's ask: an assistant, system or tool message, a user message of tool results
    /// only, or a harness text in a user turn ([`NOT_REQUEST_PREFIXES`]).
    Not,
    /// A real user request.
    Request,
    /// A summary of earlier history ([`SUMMARY_PREFIXES`]): it holds the requests it replaced.
    Summary,
}

/// What the text of a user turn is ([`AskKind`]); `marked` says the message carries an importer's
/// `compaction` key.
pub fn ask_kind_of_text(text: &str, marked: bool) -> AskKind {
    if marked || SUMMARY_PREFIXES.iter().any(|p| text.starts_with(p)) {
        return AskKind::Summary;
    }
    let trimmed = text.trim();
    if trimmed.is_empty() || NOT_REQUEST_PREFIXES.iter().any(|p| trimmed.starts_with(p)) {
        AskKind::Not
    } else {
        AskKind::Request
    }
}

/// What `m` is to the search for the latest ask ([`AskKind`]): a summary by its first text
/// block; else a request when any of its text blocks is one (Claude Code may put a reminder
/// block before the user's own words).
pub fn ask_kind(m: &Message) -> AskKind {
    if !is_user_turn(m) {
        return AskKind::Not;
    }
    let marked = m.extra.contains_key("compaction");
    let mut texts = m.blocks.iter().filter_map(|b| match &b.body {
        Body::Text { text } if !text.trim().is_empty() => Some(text.as_str()),
        _ => None,
    });
    let Some(first) = texts.next() else {
        return if marked { AskKind::Summary } else { AskKind::Not };
    };
    match ask_kind_of_text(first, marked) {
        AskKind::Not if texts.any(|t| ask_kind_of_text(t, false) == AskKind::Request) => AskKind::Request,
        kind => kind,
    }
}

/// Whether `m` is a real user request: a user turn with text that is not only tool results,
/// not a summary of earlier history and not a harness text ([`NOT_REQUEST_PREFIXES`]).
pub fn is_request(m: &Message) -> bool {
    ask_kind(m) == AskKind::Request
}

/// The message at or after `from` that holds the user's latest ask: the latest real request, or a
/// summary of earlier history when no request follows it (it holds the requests it replaced).
/// The one search for "the latest request" — `trim_messages` keeps what it finds, the offline
/// handoff quotes it, the compactor checks summaries against it.
pub fn latest_ask<S: Shape + ?Sized>(messages: &S, from: usize) -> Option<(usize, AskKind)> {
    (from..messages.message_count())
        .rev()
        .map(|i| (i, messages.ask_at(i)))
        .find(|(_, kind)| *kind != AskKind::Not)
}

/// The latest real user request in `messages` ([`latest_ask`], when it is a request and not a
/// summary): its index and text.
pub fn latest_request(messages: &[Message]) -> Option<(usize, String)> {
    match latest_ask(messages, 0)? {
        (i, AskKind::Request) => Some((i, text_of(&messages[i]).trim().to_owned())),
        _ => None,
    }
}

/// Whether `m` holds a summary of earlier history (see [`SUMMARY_PREFIXES`]).
pub fn is_summary(m: &Message) -> bool {
    m.role == Role::User && ask_kind(m) == AskKind::Summary
}

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
    pub messages: usize,
    pub tool_calls: usize,
}

/// Errors kept in a handoff (the latest).
const MAX_ERRORS: usize = 50;

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

fn is_read_tool(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    [
        "read", "view", "cat", "open", "grep", "search", "glob", "find", "list", "ls",
    ]
    .iter()
    .any(|k| n.contains(k))
}

fn is_write_tool(name: &str) -> bool {
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

/// Record an occurrence; lists are deduplicated once at the end by [`keep_last`].
fn push_unique(list: &mut Vec<String>, item: &str) {
    if !item.is_empty() {
        list.push(item.to_owned());
    }
}

/// Each item once, at the position of its last occurrence.
fn keep_last(list: &mut Vec<String>) {
    let mut keep = vec![false; list.len()];
    {
        let mut seen: FastSet<&str> = FastSet::with_capacity_and_hasher(list.len(), BuildHasherDefault::default());
        for (i, x) in list.iter().enumerate().rev() {
            keep[i] = seen.insert(x.as_str());
        }
    }
    let mut i = 0;
    list.retain(|_| {
        i += 1;
        keep[i - 1]
    });
}

/// The text of a message's text blocks joined by newlines ([`Message::joined_text`]), borrowed
/// when there is only one.
fn text_of(m: &Message) -> Cow<'_, str> {
    let mut texts = m.blocks.iter().filter_map(|b| match &b.body {
        Body::Text { text } => Some(text.as_str()),
        _ => None,
    });
    match (texts.next(), texts.next()) {
        (None, _) => Cow::Borrowed(""),
        (Some(only), None) => Cow::Borrowed(only),
        _ => Cow::Owned(m.joined_text()),
    }
}

/// `line` in ASCII lower case, in `buf` (reused between lines).
fn lowered<'b>(buf: &'b mut String, line: &str) -> &'b str {
    buf.clear();
    buf.push_str(line);
    buf.make_ascii_lowercase();
    buf
}

fn first_line(s: &str, max: usize) -> String {
    let line = s.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
    clip(line, max)
}

fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        let cut: String = s.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

/// The outcome line of a tool result: a test summary or exit status line if there is one,
/// else the last non-empty line.
/// The last `n` non-empty lines of `text`, trimmed, in order; only the end of the text is read.
fn last_lines(text: &str, n: usize) -> Vec<&str> {
    let mut out: Vec<&str> = text
        .rsplit('\n')
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(n)
        .collect();
    out.reverse();
    out
}

fn outcome_of(lines: &[&str]) -> (String, bool) {
    let summary = lines.iter().rev().find(|l| names_an_outcome(l));
    let line = summary.or(lines.last()).copied().unwrap_or("(no output)");
    let l = line.to_ascii_lowercase();
    let failed = l.contains("failed") && !l.contains(" 0 failed")
        || l.contains("error")
        || l.contains("exit code: 1")
        || l.contains("exit code 1")
        || l.contains("<returncode>1")
        || l.contains("traceback");
    (clip(line, 200), !failed)
}

/// Whether `line` contains, in any ASCII case, " passed", " failed", "test result:", "exit code",
/// "exit status", "returncode" or "error": one pass, each position checked only against the
/// words that start with its letter.
fn names_an_outcome(line: &str) -> bool {
    let b = line.as_bytes();
    let at = |i: usize, word: &[u8]| {
        b.len() - i >= word.len()
            && b[i..i + word.len()]
                .iter()
                .zip(word)
                .all(|(x, y)| x.to_ascii_lowercase() == *y)
    };
    (0..b.len()).any(|i| match b[i].to_ascii_lowercase() {
        b' ' => at(i, b" passed") || at(i, b" failed"),
        b't' => at(i, b"test result:"),
        b'e' => at(i, b"exit code") || at(i, b"exit status") || at(i, b"error"),
        b'r' => at(i, b"returncode"),
        _ => false,
    })
}

/// Error lines near the end of a tool result (where outputs put them): the root cause of
/// tracebacks and lines that say error or failed.
fn error_lines(lines: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    let starts = |l: &str, p: &str| l.get(..p.len()).is_some_and(|x| x.eq_ignore_ascii_case(p));
    for &l in lines {
        let is_root_cause =
            (l.contains("Error:") || l.contains("Exception:") || l.ends_with("Error")) && !l.starts_with("File ");
        if is_root_cause || starts(l, "error") || starts(l, "failed ") || l.contains("error[") {
            out.push(clip(l, 200));
        }
    }
    out.dedup();
    out.truncate(3);
    out
}

/// The pieces of `text` between separators (quotes, brackets, `,`, `;` and whitespace), as
/// `str::split` with those separators gives them (empty pieces included), scanning bytes.
fn words(text: &str) -> impl Iterator<Item = &str> {
    let bytes = text.as_bytes();
    let mut start = 0;
    let mut i = 0;
    let mut done = false;
    std::iter::from_fn(move || {
        while i < bytes.len() {
            let b = bytes[i];
            let (width, separator) = if b.is_ascii() {
                (
                    1,
                    matches!(
                        b,
                        b'"' | b'\'' | b'`' | b'(' | b')' | b'[' | b']' | b'{' | b'}' | b'<' | b'>' | b',' | b';'
                    ) || matches!(b, b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | b' '),
                )
            } else {
                let c = text[i..].chars().next().expect("a character starts here");
                (c.len_utf8(), c.is_whitespace())
            };
            i += width;
            if separator {
                let word = &text[start..i - width];
                start = i;
                return Some(word);
            }
        }
        if done {
            return None;
        }
        done = true;
        Some(&text[start..])
    })
}

/// Identifiers worth keeping verbatim: paths with an extension, test names, error types.
fn identifiers_in(text: &str, out: &mut Vec<String>) {
    for word in words(text) {
        let w = word.trim_matches(|c: char| c == '.' || c == ':' || c == '!' || c == '?');
        if w.len() < 4 || w.len() > 120 {
            continue;
        }
        let looks_like_path = w.contains('/')
            && w.rsplit('/')
                .next()
                .is_some_and(|f| f.contains('.') && !f.ends_with('.'))
            && !w.starts_with("http");
        let test_name = w.starts_with("test_") || w.contains("::test_");
        let error_type =
            (w.ends_with("Error") || w.ends_with("Exception")) && w.chars().next().is_some_and(char::is_uppercase);
        if looks_like_path || test_name || error_type {
            push_unique(out, w);
        }
    }
}

/// Extensions that make a bare word a file name.
const KNOWN_EXTENSIONS: &[&str] = &[
    "py", "pyi", "rs", "ts", "tsx", "js", "jsx", "mjs", "go", "java", "kt", "c", "h", "cc", "cpp", "hpp", "rb", "php",
    "cs", "swift", "md", "rst", "txt", "toml", "yaml", "yml", "json", "jsonl", "cfg", "ini", "sh", "sql", "html",
    "css", "lock", "ex", "exs", "scala", "vue",
];

/// File paths in free text or a command: words with a slash whose last part has an extension,
/// or that start with `/`, `./`, `../` or `~/` and have two parts, and bare file names with a
/// [`KNOWN_EXTENSIONS`] extension; not URLs.
fn paths_in(text: &str, out: &mut Vec<String>) {
    for word in words(text) {
        let w = word
            .trim_end_matches(['.', ':', '!', '?', '='])
            .trim_start_matches([':', '!', '?', '=']);
        if w.len() < 3 || w.len() > 200 || w.contains("://") {
            continue;
        }
        if !w.contains('/') {
            // A bare file name counts when its extension is a common source or config one.
            let known = w.rsplit_once('.').is_some_and(|(stem, ext)| {
                !stem.is_empty()
                    && KNOWN_EXTENSIONS.contains(&ext)
                    && stem.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
            });
            if known {
                push_unique(out, w);
            }
            continue;
        }
        let last = w.rsplit('/').next().unwrap_or("");
        let has_extension = last.contains('.') && !last.ends_with('.') && !last.starts_with('.');
        let rooted = (w.starts_with('/') || w.starts_with("./") || w.starts_with("../") || w.starts_with("~/"))
            && w.matches('/').count() >= 2;
        let plain = w.bytes().all(|b| b.is_ascii_alphanumeric() || b"/._-~@+".contains(&b));
        if plain && (has_extension || rooted) {
            push_unique(out, w);
        }
    }
}

/// URLs, branch names (`git checkout -b NAME`, `git switch NAME`, `git push origin NAME`) and
/// commit hashes (7 to 40 hex digits with at least one digit and one letter).
fn references_in(text: &str, out: &mut Vec<String>) {
    let all: Vec<&str> = words(text).filter(|w| !w.is_empty()).collect();
    for (k, &w) in all.iter().enumerate() {
        if w.starts_with("http://") || w.starts_with("https://") {
            push_unique(out, w.trim_end_matches(['.', ':', '!', '?']));
        } else if (7..=40).contains(&w.len())
            && w.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            && w.bytes().any(|b| b.is_ascii_digit())
            && w.bytes().any(|b| b.is_ascii_alphabetic())
        {
            push_unique(out, w);
        } else if w == "git" {
            let rest = &all[k + 1..all.len().min(k + 5)];
            let branch = match rest {
                ["checkout" | "switch", "-b" | "-c", name, ..] | ["push", _, name, ..] | ["branch", name, ..] => {
                    Some(*name)
                }
                ["switch" | "checkout", name, ..] if !name.starts_with('-') && !name.contains('.') => Some(*name),
                _ => None,
            };
            if let Some(name) = branch.filter(|n| n.len() >= 3 && !n.starts_with('-')) {
                push_unique(out, name);
            }
        }
    }
}

/// Test statuses a test runner printed: pytest's `PASSED`/`FAILED`/`ERROR` next to a node id (in
/// either order, as `-v` and the short summary print them) and cargo's `test NAME ... ok|FAILED`.
/// Each test once per output, with the last status it got there.
fn test_statuses(text: &str, out: &mut Vec<(String, String)>) {
    let unittest = text.contains(" ... ");
    if !text.contains("::") && !unittest {
        return; // no node id and no unittest line, nothing to read (most outputs)
    }
    let status = |w: &str| match w {
        "PASSED" | "ok" => Some("passed"),
        "FAILED" | "FAIL" => Some("failed"),
        "ERROR" => Some("error"),
        "skipped" | "SKIPPED" => Some("skipped"),
        _ => None,
    };
    let is_test = |w: &str| w.contains("::") && (w.contains(".py") || w.contains("test"));
    let mut found: Vec<(&str, &'static str)> = Vec::new();
    let mut at: FastMap<&str, usize> = FastMap::default();
    for line in text.lines() {
        if unittest && line.starts_with("test") && line.contains(" ... ") {
            // unittest and Django: `test_name (module.Class) ... ok`.
            let (name, rest) = line.split_once(" ... ").unwrap_or((line, ""));
            let first = rest.split_whitespace().next().unwrap_or("");
            if let (Some(st), Some((method, _))) = (status(first.trim_end_matches(['.', ','])), name.split_once(" (")) {
                if method.starts_with("test") && name.ends_with(')') {
                    let name = name.trim();
                    if let Some(&k) = at.get(name) {
                        found[k].1 = st;
                    } else {
                        at.insert(name, found.len());
                        found.push((name, st));
                    }
                }
            }
            continue;
        }
        if !line.contains("::") {
            continue;
        }
        let line = line.trim();
        let mut parts = line.split_whitespace();
        let (Some(a), Some(b)) = (parts.next(), parts.next()) else {
            continue;
        };
        let hit = if let (Some(st), true) = (status(a), is_test(b)) {
            Some((b, st))
        } else if let (true, Some(st)) = (is_test(a), status(b)) {
            Some((a, st))
        } else if a == "test" && is_test(b) {
            line.rsplit(' ').next().and_then(status).map(|st| (b, st))
        } else {
            None
        };
        if let Some((name, st)) = hit {
            if let Some(&k) = at.get(name) {
                found[k].1 = st;
            } else {
                at.insert(name, found.len());
                found.push((name, st));
            }
        }
    }
    out.extend(found.into_iter().map(|(n, st)| (n.to_owned(), st.to_owned())));
}

/// Exception and error type names (`KeyError`, `ConfigurationError`, `IOException`) anywhere in
/// `text`: found by the suffix, then read back to the start of the word.
fn exception_types(text: &str, out: &mut Vec<String>) {
    // Tracebacks repeat the same names: each is pushed once per text.
    let mut seen: FastSet<&str> = FastSet::default();
    for suffix in ["Error", "Exception"] {
        for (at, _) in text.match_indices(suffix) {
            let end = at + suffix.len();
            if text
                .as_bytes()
                .get(end)
                .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
            {
                continue;
            }
            let start = text[..at]
                .bytes()
                .rposition(|b| !(b.is_ascii_alphanumeric() || b == b'_'))
                .map_or(0, |p| p + 1);
            let word = &text[start..end];
            if word.len() > suffix.len()
                && word.len() <= 80
                && word.as_bytes()[0].is_ascii_uppercase()
                && seen.insert(word)
            {
                push_unique(out, word);
            }
        }
    }
}

/// Paths named in a free-form patch (`*** Update File: x`, `+++ b/x`).
fn patch_paths(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            l.strip_prefix("*** Update File: ")
                .or_else(|| l.strip_prefix("*** Add File: "))
                .or_else(|| l.strip_prefix("*** Delete File: "))
                .or_else(|| l.strip_prefix("+++ b/"))
        })
        .map(|p| p.trim().to_owned())
        .collect()
}

/// What one user or assistant message contributes to a handoff.
#[derive(Default)]
struct MessageFacts {
    summary: Option<String>,
    request: Option<(usize, String)>,
    identifiers: Vec<String>,
    paths: Vec<String>,
    references: Vec<String>,
    todos: Vec<String>,
    decisions: Vec<String>,
    /// Assistant text that is not blank (the last one becomes `last_assistant`).
    has_text: bool,
}

fn scan_message(i: usize, m: &Message) -> MessageFacts {
    let mut f = MessageFacts::default();
    match m.role {
        Role::User if is_user_turn(m) => {
            let text = text_of(m);
            let kind = ask_kind(m);
            if kind == AskKind::Summary {
                f.summary = Some(text.into_owned());
                return f;
            }
            identifiers_in(&text, &mut f.identifiers);
            paths_in(&text, &mut f.paths);
            references_in(&text, &mut f.references);
            if kind == AskKind::Request {
                f.request = Some((i, text.trim().to_owned()));
            }
        }
        Role::Assistant => {
            let text = text_of(m);
            if text.trim().is_empty() {
                return f;
            }
            identifiers_in(&text, &mut f.identifiers);
            paths_in(&text, &mut f.paths);
            let mut buf = String::new();
            for line in text.lines().map(str::trim) {
                let lower = lowered(&mut buf, line);
                if lower.contains("todo")
                    || lower.starts_with("next")
                    || lower.contains("next:")
                    || lower.contains("next step")
                    || lower.contains("still need")
                    || lower.contains("remaining:")
                {
                    f.todos.push(clip(line, 200));
                }
                if lower.starts_with("i'll ")
                    || lower.starts_with("i will ")
                    || lower.starts_with("let's ")
                    || lower.starts_with("decided")
                    || lower.starts_with("the fix is")
                    || lower.starts_with("the cause is")
                    || lower.starts_with("root cause")
                {
                    f.decisions.push(clip(line, 200));
                }
            }
            f.has_text = true;
        }
        _ => {}
    }
    f
}

/// Calls from which on extraction runs on all cores.
const PARALLEL_CALLS: usize = 256;

/// What one tool call contributes to a handoff.
#[derive(Default)]
struct CallFacts {
    identifiers: Vec<String>,
    paths: Vec<String>,
    references: Vec<String>,
    tests: Vec<(String, String)>,
    read: Option<String>,
    modified: Vec<String>,
    command: Option<Command>,
    errors: Vec<(ErrorNote, String)>,
    /// The call's key and the message of its result, when it succeeded.
    ok: Option<(String, usize)>,
}

fn scan_call(messages: &[Message], c: &super::structure::Call<'_>, (reads, writes): (bool, bool)) -> CallFacts {
    let mut f = CallFacts::default();
    let Body::ToolUse { input, .. } = &messages[c.at.0].blocks[c.at.1].body else {
        return f;
    };
    let args = Args::of(input);
    let path = args.str_field(PATH_KEYS);
    if let Some(p) = path {
        identifiers_in(p, &mut f.identifiers);
        if writes {
            f.modified.push(p.to_owned());
        } else if reads {
            f.read = Some(p.to_owned());
        }
    }
    if let ToolInput::Freeform(text) = input {
        f.modified.extend(patch_paths(text));
    } else if let Some(patch) = args.get("input").and_then(Arg::as_str) {
        f.modified.extend(patch_paths(patch));
    }
    f.paths.extend(path.map(str::to_owned));
    f.paths.extend(f.modified.iter().cloned());
    let full_command = args.str_field(COMMAND_KEYS);
    if let Some(cmd) = full_command {
        paths_in(cmd, &mut f.paths);
        references_in(cmd, &mut f.references);
        for word in words(cmd) {
            if word.contains("::test_") || (word.starts_with("test_") && word.len() > 5) {
                f.tests.push((word.to_owned(), "ran".to_owned()));
            }
        }
    }
    // Other inputs (contents written, edits, patches, queries, URLs to fetch) name paths, test
    // names, URLs and commits too.
    let used = [
        PATH_KEYS.iter().find(|k| args.get(k).and_then(Arg::as_str).is_some()),
        COMMAND_KEYS
            .iter()
            .find(|k| args.get(k).and_then(Arg::as_str).is_some()),
    ];
    for_other_strings(&args, |k| used.iter().flatten().any(|u| **u == k), &mut |text| {
        paths_in(text, &mut f.paths);
        references_in(text, &mut f.references);
        for word in words(text) {
            let w = word.trim_end_matches([':', '.', ',']);
            if w.contains("::test_") || (w.starts_with("test_") && w.len() > 8) {
                f.tests.push((w.to_owned(), "named".to_owned()));
            }
        }
    });
    let command = full_command.map(|s| first_line(s, 160));
    let Some(at) = c.result else { return f };
    let Body::ToolResult { content, is_error, .. } = &messages[at.0].blocks[at.1].body else {
        return f;
    };
    if super::clear::is_placeholder(content) {
        return f;
    }
    // Exception types are named anywhere in an output (a traceback, a class in a file read).
    exception_types(&content.text(), &mut f.identifiers);
    // File contents are evidence of code, not of failures or outcomes: a read that the tool
    // did not mark as an error has nothing more to give.
    if super::clear::is_placeholder(content) || (reads && !writes && *is_error != Some(true) && command.is_none()) {
        return f;
    }
    let key = command
        .clone()
        .unwrap_or_else(|| format!("{}({})", c.name, path.unwrap_or("")));
    let text = content.text();
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
            identifiers_in(&line, &mut f.identifiers);
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

/// Extract a handoff from `messages`.
#[allow(clippy::too_many_lines)] // one walk that feeds every section; being reworked under #13 (handoff)
pub fn extract(messages: &[Message]) -> Handoff {
    let pairing = Pairing::of(messages);
    let mut h = Handoff {
        messages: messages.len(),
        tool_calls: pairing.calls.len(),
        ..Handoff::default()
    };
    let scanned: Vec<MessageFacts> = if messages.len() >= PARALLEL_CALLS {
        messages
            .par_iter()
            .enumerate()
            .map(|(i, m)| scan_message(i, m))
            .collect()
    } else {
        messages.iter().enumerate().map(|(i, m)| scan_message(i, m)).collect()
    };
    let mut last_text = None;
    // Paths and references of messages and of calls, by message index, merged below.
    let mut paths: Vec<(usize, String)> = Vec::new();
    let mut references: Vec<(usize, String)> = Vec::new();
    for (i, f) in scanned.into_iter().enumerate() {
        h.previous_summaries.extend(f.summary);
        h.user_requests.extend(f.request);
        h.identifiers.extend(f.identifiers);
        paths.extend(f.paths.into_iter().map(|p| (i, p)));
        references.extend(f.references.into_iter().map(|r| (i, r)));
        h.todos.extend(f.todos);
        h.decisions.extend(f.decisions);
        if f.has_text {
            last_text = Some(i);
        }
    }
    h.last_assistant = last_text.map(|i| clip(text_of(&messages[i]).trim(), 600));
    // Tool calls: files, commands and their outcomes, errors — scanned in parallel, merged in order.
    let mut kinds: FastMap<&str, (bool, bool)> = FastMap::default();
    for c in &pairing.calls {
        kinds
            .entry(c.name)
            .or_insert_with(|| (is_read_tool(c.name), is_write_tool(c.name)));
    }
    let facts: Vec<CallFacts> = if pairing.calls.len() >= PARALLEL_CALLS {
        pairing
            .calls
            .par_iter()
            .map(|c| scan_call(messages, c, kinds[c.name]))
            .collect()
    } else {
        pairing
            .calls
            .iter()
            .map(|c| scan_call(messages, c, kinds[c.name]))
            .collect()
    };
    let mut last_ok: FastMap<String, usize> = FastMap::default();
    let mut error_keys: Vec<String> = Vec::new();
    for (c, f) in pairing.calls.iter().zip(&facts) {
        paths.extend(f.paths.iter().map(|p| (c.at.0, p.clone())));
        references.extend(f.references.iter().map(|r| (c.at.0, r.clone())));
    }
    // Stable: within one message, in the order found. Each is then kept at its last mention.
    paths.sort_by_key(|(i, _)| *i);
    references.sort_by_key(|(i, _)| *i);
    h.paths = paths.into_iter().map(|(_, p)| p).collect();
    h.references = references.into_iter().map(|(_, r)| r).collect();
    // Each test once, at its last mention, with its latest known status ("ran" only when no
    // runner output said more).
    let mut tests: FastMap<String, (usize, String)> = FastMap::default();
    let mut order = 0;
    for f in &facts {
        for (name, status) in &f.tests {
            order += 1;
            let entry = tests.entry(name.clone()).or_insert_with(|| (0, status.clone()));
            entry.0 = order;
            // A runner's status is kept until another runner's; "ran" beats "named".
            let weak = |st: &str| match st {
                "named" => 0,
                "ran" => 1,
                _ => 2,
            };
            if weak(status) == 2 || weak(status) > weak(&entry.1) {
                entry.1.clone_from(status);
            }
        }
    }
    let mut tests: Vec<(usize, String, String)> = tests.into_iter().map(|(n, (at, st))| (at, n, st)).collect();
    tests.sort_unstable_by_key(|(at, _, _)| *at);
    h.tests = tests.into_iter().map(|(_, n, st)| (n, st)).collect();
    for f in facts {
        h.identifiers.extend(f.identifiers);
        h.files_read.extend(f.read);
        h.files_modified.extend(f.modified);
        for (note, key) in f.errors {
            h.errors.push(note);
            error_keys.push(key);
        }
        if let Some((key, index)) = f.ok {
            last_ok.insert(key, index);
        }
        if let Some(entry) = f.command {
            // One entry per distinct command, at the position of its latest run.
            if let Some(pos) = h.commands.iter().position(|x| x.command == entry.command) {
                h.commands.remove(pos);
            }
            h.commands.push(entry);
        }
    }
    // An error is resolved when the same command or tool input later succeeded.
    for (e, key) in h.errors.iter_mut().zip(&error_keys) {
        e.resolved = last_ok.get(key).is_some_and(|&i| i > e.index);
    }
    // The summary shows the latest few; older ones add nothing but size.
    let excess = h.errors.len().saturating_sub(MAX_ERRORS);
    h.errors.drain(..excess);
    for list in [
        &mut h.files_read,
        &mut h.files_modified,
        &mut h.paths,
        &mut h.references,
        &mut h.identifiers,
        &mut h.todos,
        &mut h.decisions,
    ] {
        keep_last(list);
    }
    h.user_requests.reverse();
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats;
    use serde_json::json;

    #[test]
    fn scans_like_the_plain_definitions() {
        let separator = |c: char| {
            matches!(
                c,
                '"' | '\'' | '`' | '(' | ')' | '[' | ']' | '{' | '}' | '<' | '>' | ',' | ';'
            ) || c.is_whitespace()
        };
        let words_in = [
            "",
            " ",
            "a",
            "see src/app.py, (tests/test_x.py::test_y) and `KeyError`;",
            "tab\tvt\u{b}ff\u{c}nbsp\u{a0}ideo\u{3000}end\u{85}x  ",
            "\"quoted\" 'single' <angle>{brace}[box]",
            "ünïcødé 漢字 mixed/path.rs",
        ];
        for text in words_in {
            assert_eq!(
                words(text).collect::<Vec<_>>(),
                text.split(separator).collect::<Vec<_>>(),
                "{text:?}"
            );
        }
        let needles = [
            " passed",
            " failed",
            "test result:",
            "exit code",
            "exit status",
            "returncode",
            "error",
        ];
        for line in [
            "== 1 failed, 41 passed in 2.31s ==",
            "Exit Code: 0",
            "ERROR collecting",
            "<returncode>1</returncode>",
            "test result: ok.",
            "nothing here",
            "passed",
            "Errors",
            "ünï ERROR",
            "",
            "e",
            "exit statu",
        ] {
            let lower = line.to_ascii_lowercase();
            assert_eq!(
                names_an_outcome(line),
                needles.iter().any(|n| lower.contains(n)),
                "{line:?}"
            );
        }
    }

    #[test]
    fn the_latest_ask_skips_harness_texts_and_falls_back_to_a_summary() {
        let v = json!([
            {"role": "user", "content": "[agentcontext: earlier conversation compacted: 3 earlier messages]\n\nnotes"},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "Port the parser."},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "1", "content": "done"},
            {"role": "user", "content": "<task-notification>\n<summary>Background command done</summary>\n</task-notification>"},
            {"role": "user", "content": "[Request interrupted by user]"},
            {"role": "user", "content": "  "}
        ]);
        let m = formats::openai_chat::read(serde_json::from_value(v).unwrap()).unwrap();
        assert_eq!(latest_ask(&m[..], 0), Some((2, AskKind::Request)));
        assert_eq!(latest_request(&m).map(|(i, _)| i), Some(2));
        assert_eq!(latest_ask(&m[..], 3), None);
        assert_eq!(latest_ask(&m[..2], 0), Some((0, AskKind::Summary)));
        assert_eq!(latest_request(&m[..2]), None, "a summary is not the user's words");
        // A reminder block before the user's own words does not hide the request.
        let v = json!([
            {"role": "user", "content": [
                {"type": "text", "text": "<system-reminder>todo list empty</system-reminder>"},
                {"type": "text", "text": "Rename the module."}]},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": [{"type": "text", "text": "<system-reminder>still empty</system-reminder>"}]}
        ]);
        let m = formats::anthropic::read(serde_json::from_value(v).unwrap(), None).unwrap();
        assert_eq!(latest_ask(&m[..], 0), Some((0, AskKind::Request)));
    }

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
