//! Text mining for the handoff: words, identifiers, paths, references, test statuses, exception
//! types and outcome lines, found in free text and tool outputs by plain scans.

use std::borrow::Cow;
use std::hash::BuildHasherDefault;
use std::sync::LazyLock;

use memchr::memmem;

use super::pieces::Put;
use crate::compact::structure::{FastMap, FastSet};

/// Record an occurrence; lists are deduplicated once at the end by [`last_owned`].
pub(super) fn push_unique(list: &mut impl Put, item: &str) {
    if !item.is_empty() {
        list.put(item);
    }
}

/// Each item once, at the position of its last occurrence (what [`last_owned`] keeps).
#[cfg(test)]
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

/// [`keep_last`] of borrowed texts, each copied once kept: each once, at its last occurrence.
pub(super) fn last_owned(list: Vec<&str>) -> Vec<String> {
    let mut seen: FastSet<&str> = FastSet::with_capacity_and_hasher(list.len(), BuildHasherDefault::default());
    let mut kept: Vec<&str> = list.into_iter().rev().filter(|x| seen.insert(x)).collect();
    kept.reverse();
    kept.into_iter().map(str::to_owned).collect()
}

/// Whether `needle` occurs in `hay`: `str::contains`, which builds a two-way searcher for a
/// haystack too short for its vector search (a word, a short line), where `memmem::find` compares
/// rolling hashes instead (and for a longer one builds a searcher of its own, slower to build).
///
/// In a short haystack the needle's first byte is looked for and the rest compared there (a
/// rolling hash reads every byte of the haystack whatever it holds).
#[inline]
pub(super) fn has(hay: &str, needle: &str) -> bool {
    if hay.len() < 64 {
        let (h, n) = (hay.as_bytes(), needle.as_bytes());
        let Some((&first, rest)) = n.split_first() else {
            return true;
        };
        h.len() >= n.len() && memchr::memchr_iter(first, &h[..=h.len() - n.len()]).any(|p| h[p + 1..].starts_with(rest))
    } else {
        hay.contains(needle)
    }
}

/// `s.trim()`: the ASCII white space at its ends trimmed byte by byte, and `str::trim` only
/// when an end is then a longer character or `\x0b` (white space `u8::is_ascii_whitespace`
/// does not count).
#[inline]
pub(super) fn trimmed(s: &str) -> &str {
    let t = s.trim_ascii();
    let plain = |b: Option<&u8>| b.is_none_or(|&b| b.is_ascii() && b != 0x0b);
    if plain(t.as_bytes().first()) && plain(t.as_bytes().last()) {
        t
    } else {
        s.trim()
    }
}

pub(super) fn first_line(s: &str, max: usize) -> String {
    clip(first_line_of(s), max)
}

/// The first line of `s` that is not blank, trimmed ("" when none is).
pub(super) fn first_line_of(s: &str) -> &str {
    s.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim()
}

pub(super) fn clip(s: &str, max: usize) -> String {
    clipped(s, max).into_owned()
}

/// [`clip`], borrowed when it is `s` whole.
pub(super) fn clipped(s: &str, max: usize) -> Cow<'_, str> {
    // No more bytes than `max` is no more characters (most texts): not counted.
    if s.len() <= max || s.chars().count() <= max {
        Cow::Borrowed(s)
    } else {
        let cut: String = s.chars().take(max.saturating_sub(1)).collect();
        Cow::Owned(format!("{cut}…"))
    }
}

/// The last `n` non-empty lines of `text`, trimmed, in order; only the end of the text is read.
pub(super) fn last_lines(text: &str, n: usize) -> Vec<&str> {
    fn keep<'t>(piece: &'t str, out: &mut Vec<&'t str>) {
        let line = trimmed(piece);
        if !line.is_empty() {
            out.push(line);
        }
    }
    // `text.rsplit('\n')`, the line ends found by one backward search rather than one per line.
    let mut out: Vec<&str> = Vec::with_capacity(n.min(64));
    let mut end = text.len();
    for nl in memchr::memrchr_iter(b'\n', text.as_bytes()) {
        if out.len() == n {
            break;
        }
        keep(&text[nl + 1..end], &mut out);
        end = nl;
    }
    if out.len() < n {
        keep(&text[..end], &mut out);
    }
    out.reverse();
    out
}

/// The outcome line of a tool result: a test summary or exit status line if there is one,
/// else the last non-empty line; and whether it reports no failure ([`reports_failure`]).
pub(super) fn outcome_of(lines: &[&str]) -> (String, bool) {
    let summary = lines.iter().rev().find(|l| names_an_outcome(l));
    let line = summary.or(lines.last()).copied().unwrap_or("(no output)");
    (clip(line, 200), !reports_failure(line))
}

/// What one occurrence of "error", "failed" or "traceback" in a line says of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Said {
    /// Nothing: part of a name (`test_error_path`, `src/errors.rs`, `log.error(`), or a key of
    /// an empty value (`"error": null`, `errors: []`, `failed=0`).
    Nothing,
    /// None happened: a count of none (`0 failed`, `no errors`).
    NoFailure,
    /// A failure (`FAILED`, `error: x`, `"error": "denied"`, `2 errors`, `KeyError: 'k'`).
    Failure,
}

/// What the `word` (ASCII lower case) at `at` in `b` says ([`Said`]); `error` also stands as
/// `errors` and `errored`, and closes an exception type (`ValueError: x`, a line ending in
/// `AssertionError`).
fn said_at(b: &[u8], at: usize, word: &[u8]) -> Said {
    let name_byte = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut end = at + word.len();
    if word == b"error" {
        if at > 0 && name_byte(b[at - 1]) {
            // Inside a name: a failure only as an exception type that opens its line, alone or
            // with its message (`KeyError: 'k'`, pytest's `E   AssertionError`); not in code
            // (`except KeyError:`, `raise KeyError(k)`).
            let start = b[..at]
                .iter()
                .rposition(|&c| !(name_byte(c) || c == b'.'))
                .map_or(0, |k| k + 1);
            let lead = b[..start].trim_ascii();
            let exception =
                b[at] == b'E' && matches!(b.get(end), None | Some(b':')) && (lead.is_empty() || lead == b"E");
            return if exception { Said::Failure } else { Said::Nothing };
        }
        for suffix in [&b"s"[..], b"ed"] {
            if b.len() >= end + suffix.len() && b[end..end + suffix.len()].eq_ignore_ascii_case(suffix) {
                end += suffix.len();
                break;
            }
        }
    }
    let joins = |c: u8| matches!(c, b'/' | b'.' | b'-');
    if at > 0 && (name_byte(b[at - 1]) || joins(b[at - 1])) {
        return Said::Nothing;
    }
    if b.get(end)
        .is_some_and(|&c| name_byte(c) || (joins(c) && b.get(end + 1).is_some_and(|&d| name_byte(d))))
    {
        return Said::Nothing;
    }
    // A count before it: `0 failed`, `no errors`, `3 errors`.
    let before = b[..at].trim_ascii_end();
    let count = &before[before
        .iter()
        .rposition(|c| !c.is_ascii_alphanumeric())
        .map_or(0, |k| k + 1)..];
    if count.eq_ignore_ascii_case(b"no")
        || count.eq_ignore_ascii_case(b"without")
        || (!count.is_empty() && count.iter().all(|&c| c == b'0'))
    {
        return Said::NoFailure;
    }
    // A key (`"error": ...`, `errors=...`): what its value holds.
    let rest = b[end..]
        .strip_prefix(b"\"")
        .or_else(|| b[end..].strip_prefix(b"'"))
        .unwrap_or(&b[end..]);
    let rest = rest.trim_ascii_start();
    let Some(value) = rest.strip_prefix(b":").or_else(|| rest.strip_prefix(b"=")) else {
        return Said::Failure;
    };
    let value = value.trim_ascii_start();
    let empty = [
        &b"null"[..],
        b"none",
        b"nil",
        b"false",
        b"[]",
        b"{}",
        b"\"\"",
        b"''",
        b"0",
    ]
    .iter()
    .any(|e| {
        value.len() >= e.len()
            && value[..e.len()].eq_ignore_ascii_case(e)
            && !value.get(e.len()).is_some_and(|&c| name_byte(c) || c == b'.')
    });
    if empty { Said::Nothing } else { Said::Failure }
}

/// The positions of `word` (ASCII lower case) in `b`, in any ASCII case.
fn positions<'b>(b: &'b [u8], word: &'b [u8]) -> impl Iterator<Item = usize> + 'b {
    let first = word[0];
    let last = b.len().checked_sub(word.len());
    memchr::memchr2_iter(first, first.to_ascii_uppercase(), last.map_or(&b[..0], |l| &b[..=l]))
        .filter(move |&p| b[p..p + word.len()].eq_ignore_ascii_case(word))
}

/// Whether an outcome line reports a failure: "failed", "error" or "traceback" said of the run
/// ([`Said::Failure`]: not a count of none, a key of an empty value or part of a name), or a
/// nonzero exit code (`exit code 2`, `Exit status: 1`, `<returncode>1`, `returncode=-9`).
fn reports_failure(line: &str) -> bool {
    let b = line.as_bytes();
    let said = |word: &'static [u8]| positions(b, word).any(|p| said_at(b, p, word) == Said::Failure);
    let nonzero_after = |word: &'static [u8]| {
        positions(b, word).any(|p| {
            let rest = &b[p + word.len()..];
            let from = rest
                .iter()
                .position(|c| !matches!(c, b' ' | b'\t' | b':' | b'=' | b'"' | b'\'' | b'>'))
                .unwrap_or(rest.len());
            let number = rest[from..].strip_prefix(b"-").unwrap_or(&rest[from..]);
            let digits = number.iter().take_while(|c| c.is_ascii_digit()).count();
            digits > 0 && number[..digits].iter().any(|&c| c != b'0')
        })
    };
    said(b"failed")
        || said(b"error")
        || said(b"traceback")
        || nonzero_after(b"exit code")
        || nonzero_after(b"exit status")
        || nonzero_after(b"returncode")
}

/// Whether `line` contains, in any ASCII case, " passed", " failed", "test result:", "exit code",
/// "exit status", "returncode", or "error" not inside a name nor as a key of an empty value
/// ([`Said::Nothing`]): each has an `e`, so only the positions of `e` and `E` are looked at, each
/// against the words whose first `e` it can be.
pub(super) fn names_an_outcome(line: &str) -> bool {
    let b = line.as_bytes();
    // `word` at `i` positions before `p` (ASCII case folded).
    let at = |p: usize, i: usize, word: &[u8]| {
        p >= i && b.len() - (p - i) >= word.len() && b[p - i..p - i + word.len()].eq_ignore_ascii_case(word)
    };
    memchr::memchr2_iter(b'e', b'E', b).any(|p| {
        at(p, 5, b" passed")
            || at(p, 5, b" failed")
            || at(p, 1, b"test result:")
            || at(p, 0, b"exit code")
            || at(p, 0, b"exit status")
            || (at(p, 0, b"error") && said_at(b, p, b"error") != Said::Nothing)
            || at(p, 1, b"returncode")
    })
}

/// Error lines near the end of a tool result (where outputs put them): the root cause of
/// tracebacks and lines that say error or failed.
pub(super) fn error_lines(lines: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    let starts = |l: &str, p: &str| l.get(..p.len()).is_some_and(|x| x.eq_ignore_ascii_case(p));
    for &l in lines {
        // `Error:` and `Exception:` need an `E`, `error[` a `[`: most lines have neither.
        let capital = memchr::memchr(b'E', l.as_bytes()).is_some();
        let is_root_cause =
            (capital && (has(l, "Error:") || has(l, "Exception:")) || l.ends_with("Error")) && !l.starts_with("File ");
        let bracket = || memchr::memchr(b'[', l.as_bytes()).is_some() && has(l, "error[");
        if is_root_cause || starts(l, "error") || starts(l, "failed ") || bracket() {
            out.push(clip(l, 200));
        }
    }
    out.dedup();
    out.truncate(3);
    out
}

/// The pieces of `text` between separators (quotes, brackets, `,`, `;` and whitespace), as
/// `str::split` with those separators gives them (empty pieces included), scanning bytes.
pub(super) fn words(text: &str) -> impl Iterator<Item = &str> {
    let bytes = text.as_bytes();
    let mut start = 0;
    let mut i = 0;
    let mut done = false;
    std::iter::from_fn(move || {
        while i < bytes.len() {
            // Word bytes (most) in a tight loop; a separator or a character to decode stops it.
            match BYTE_CLASS[usize::from(bytes[i])] {
                WORD => i += 1,
                SEPARATOR => {
                    let word = &text[start..i];
                    i += 1;
                    start = i;
                    return Some(word);
                }
                _ => {
                    let c = text[i..].chars().next().expect("a character starts here");
                    if c.is_whitespace() {
                        let word = &text[start..i];
                        i += c.len_utf8();
                        start = i;
                        return Some(word);
                    }
                    i += c.len_utf8();
                }
            }
        }
        if done {
            return None;
        }
        done = true;
        Some(&text[start..])
    })
}

const WORD: u8 = 0;
const SEPARATOR: u8 = 1;
/// The first byte of a character past ASCII, which may be white space.
const LEAD: u8 = 2;

/// What each byte is to [`words`]: an ASCII separator, the first byte of a longer character, or
/// part of a word (other ASCII bytes, and the continuation bytes of a character, never looked
/// at alone since a character is stepped over whole).
static BYTE_CLASS: [u8; 256] = {
    let mut class = [WORD; 256];
    let separators = b"\"'`()[]{}<>,;\t\n\x0b\x0c\r ";
    let mut k = 0;
    while k < separators.len() {
        class[separators[k] as usize] = SEPARATOR;
        k += 1;
    }
    let mut b = 0xC0;
    while b < 256 {
        class[b] = LEAD;
        b += 1;
    }
    class
};

/// `word` without the ASCII characters `start` accepts at its start and those `end` accepts at its end
/// (`trim_start_matches` and `trim_end_matches` with them, byte by byte: an ASCII byte is never
/// part of another character in UTF-8).
fn trim_ascii_of(word: &str, start: impl Fn(u8) -> bool, end: impl Fn(u8) -> bool) -> &str {
    let b = word.as_bytes();
    let mut to = b.len();
    while to > 0 && end(b[to - 1]) {
        to -= 1;
    }
    let mut from = 0;
    while from < to && start(b[from]) {
        from += 1;
    }
    &word[from..to]
}

/// Identifiers worth keeping verbatim: paths with an extension, test names, error types.
pub(super) fn identifiers_in(text: &str, out: &mut impl Put) {
    identifiers_of(words(text), out);
}

/// [`identifiers_in`] over the [`words`] of a text, split once.
pub(super) fn identifiers_of<'t>(words: impl IntoIterator<Item = &'t str>, out: &mut impl Put) {
    for word in words {
        if let Some(w) = identifier(word) {
            push_unique(out, w);
        }
    }
}

/// The identifier a word is ([`identifiers_of`]), if any.
pub(super) fn identifier(word: &str) -> Option<&str> {
    let edge = |b: u8| matches!(b, b'.' | b':' | b'!' | b'?');
    let w = trim_ascii_of(word, edge, edge);
    if w.len() < 4 || w.len() > 120 {
        return None;
    }
    // Most words are none of the three: no `/`, no `:`, not `test_...`, not `...Error` or
    // `...Exception`.
    if !w.ends_with(['r', 'n']) && !w.starts_with("test_") && !w.bytes().any(|b| b == b'/' || b == b':') {
        return None;
    }
    let looks_like_path = w.contains('/')
        && w.rsplit('/')
            .next()
            .is_some_and(|f| f.contains('.') && !f.ends_with('.'))
        && !w.starts_with("http");
    let test_name = w.starts_with("test_") || has(w, "::test_");
    let error_type =
        (w.ends_with("Error") || w.ends_with("Exception")) && w.chars().next().is_some_and(char::is_uppercase);
    (looks_like_path || test_name || error_type).then_some(w)
}

/// The non-empty [`words`] of `text`.
pub(super) fn nonempty_words(text: &str) -> Vec<&str> {
    words(text).filter(|w| !w.is_empty()).collect()
}

/// Extensions that make a bare word a file name: common source and config ones.
fn known_extension(ext: &str) -> bool {
    matches!(
        ext,
        "py" | "pyi"
            | "rs"
            | "ts"
            | "tsx"
            | "js"
            | "jsx"
            | "mjs"
            | "go"
            | "java"
            | "kt"
            | "c"
            | "h"
            | "cc"
            | "cpp"
            | "hpp"
            | "rb"
            | "php"
            | "cs"
            | "swift"
            | "md"
            | "rst"
            | "txt"
            | "toml"
            | "yaml"
            | "yml"
            | "json"
            | "jsonl"
            | "cfg"
            | "ini"
            | "sh"
            | "sql"
            | "html"
            | "css"
            | "lock"
            | "ex"
            | "exs"
            | "scala"
            | "vue"
    )
}

/// File paths in free text or a command, given as its [`words`] (split once for several scans):
/// words with a slash whose last part has an extension, or that start with `/`, `./`, `../` or
/// `~/` and have two parts, and bare file names with a [`known_extension`]; not URLs.
pub(super) fn paths_of<'t>(words: impl IntoIterator<Item = &'t str>, out: &mut impl Put) {
    for word in words {
        if let Some(w) = path(word) {
            push_unique(out, w);
        }
    }
}

/// The file path a word is ([`paths_of`]), if any.
pub(super) fn path(word: &str) -> Option<&str> {
    // A path has a `/` or (a bare file name) a `.`: most words have neither.
    if !word.bytes().any(|b| b == b'/' || b == b'.') {
        return None;
    }
    let w = trim_ascii_of(
        word,
        |b| matches!(b, b':' | b'!' | b'?' | b'='),
        |b| matches!(b, b'.' | b':' | b'!' | b'?' | b'='),
    );
    if w.len() < 3 || w.len() > 200 || has(w, "://") {
        return None;
    }
    if !w.contains('/') {
        // A bare file name counts when its extension is a common source or config one.
        let known = w.rsplit_once('.').is_some_and(|(stem, ext)| {
            !stem.is_empty()
                && known_extension(ext)
                && stem.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        });
        return known.then_some(w);
    }
    let last = w.rsplit('/').next().unwrap_or("");
    let has_extension = last.contains('.') && !last.ends_with('.') && !last.starts_with('.');
    let rooted = |p: &str| {
        (p.starts_with('/') || p.starts_with("./") || p.starts_with("../") || p.starts_with("~/"))
            && p.matches('/').count() >= 2
    };
    let plain = |p: &str| p.bytes().all(|b| b.is_ascii_alphanumeric() || b"/._-~@+".contains(&b));
    if plain(w) && (has_extension || rooted(w)) {
        return Some(w);
    }
    let (dir, pattern) = w
        .rsplit_once('/')
        .filter(|(d, p)| p.contains('*') && !d.contains('*'))?;
    // A glob in its last part under a rooted directory (`~/logs/run-42*.jsonl`) names the files
    // it matches there: kept as written.
    (rooted(&w[..=dir.len()]) && plain(dir) && plain(&pattern.replace('*', ""))).then_some(w)
}

/// URLs, branch names (`git checkout -b NAME`, `git switch NAME`, `git push origin NAME`) and
/// commit hashes (7 to 40 hex digits with at least one digit and one letter) in a text, given as
/// its non-empty [`words`] ([`nonempty_words`]).
pub(super) fn references_of(all: &[&str], out: &mut impl Put) {
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

/// Test names, each with a status (`passed`, `failed`, `error`, `skipped`, `ran`, `named`), in
/// the order found: the names one after another in one text (a call's tests take two
/// allocations, not one per name).
#[derive(Debug, Default)]
pub(super) struct Tests {
    names: String,
    /// Where each name ends in `names`, and its status.
    ends: Vec<(usize, &'static str)>,
}

impl Tests {
    pub(super) fn push(&mut self, name: &str, status: &'static str) {
        self.names.push_str(name);
        self.ends.push((self.names.len(), status));
    }

    /// Room for `count` more names of `bytes` bytes together.
    pub(super) fn reserve(&mut self, count: usize, bytes: usize) {
        self.names.reserve(bytes);
        self.ends.reserve(count);
    }

    /// The names and their statuses, in the order pushed.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&str, &'static str)> {
        let mut start = 0;
        self.ends.iter().map(move |&(end, status)| {
            let name = &self.names[start..end];
            start = end;
            (name, status)
        })
    }
}

/// Test statuses a test runner printed: pytest's `PASSED`/`FAILED`/`ERROR` next to a node id (in
/// either order, as `-v` and the short summary print them) and cargo's `test NAME ... ok|FAILED`.
/// Each test once per output, with the last status it got there.
pub(super) fn test_statuses(text: &str, out: &mut Tests) {
    static UNITTEST: LazyLock<memmem::Finder<'static>> = LazyLock::new(|| memmem::Finder::new(b" ... "));
    static NODE_ID: LazyLock<memmem::Finder<'static>> = LazyLock::new(|| memmem::Finder::new(b"::"));
    let unittest = UNITTEST.find(text.as_bytes()).is_some();
    if !unittest && NODE_ID.find(text.as_bytes()).is_none() {
        return; // no node id and no unittest line, nothing to read (most outputs)
    }
    let mut found = Found::default();
    if unittest {
        for line in text.lines() {
            if line.starts_with("test") && has(line, " ... ") {
                // unittest and Django: `test_name (module.Class) ... ok`.
                let (name, rest) = line.split_once(" ... ").unwrap_or((line, ""));
                let first = rest.split_whitespace().next().unwrap_or("");
                if let (Some(st), Some((method, _))) =
                    (status(first.trim_end_matches(['.', ','])), name.split_once(" ("))
                {
                    if method.starts_with("test") && name.ends_with(')') {
                        found.note(name.trim(), st);
                    }
                }
                continue;
            }
            if has(line, "::") {
                node_id_line(line, &mut found);
            }
        }
    } else {
        // Only lines with a node id can hold a status: found by searching the text for `::`.
        let bytes = text.as_bytes();
        let mut from = 0;
        while let Some(hit) = NODE_ID.find(&bytes[from..]).map(|h| from + h) {
            let start = memchr::memrchr(b'\n', &bytes[from..hit]).map_or(from, |p| from + p + 1);
            let end = memchr::memchr(b'\n', &bytes[hit..]).map_or(bytes.len(), |p| hit + p);
            // As `str::lines` gives it: without the `\r` of a `\r\n`.
            let line = &text[start..end];
            node_id_line(line.strip_suffix('\r').unwrap_or(line), &mut found);
            if end == bytes.len() {
                break;
            }
            from = end + 1;
        }
    }
    let found = found.list;
    out.reserve(found.len(), found.iter().map(|(n, _)| n.len()).sum());
    for (name, st) in found {
        out.push(name, st);
    }
}

/// The status a test runner printed as a word.
fn status(w: &str) -> Option<&'static str> {
    match w {
        "PASSED" | "ok" => Some("passed"),
        "FAILED" | "FAIL" => Some("failed"),
        "ERROR" => Some("error"),
        "skipped" | "SKIPPED" => Some("skipped"),
        _ => None,
    }
}

/// A pytest line with a node id (`NODE STATUS`, `STATUS NODE`, `test NODE ... STATUS`).
fn node_id_line<'t>(line: &'t str, found: &mut Found<'t>) {
    let is_test = |w: &str| has(w, "::") && (has(w, ".py") || has(w, "test"));
    let line = trimmed(line);
    let Some((a, b)) = two_words(line) else {
        return;
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
        found.note(name, st);
    }
}

/// The first two words of `line` as `split_whitespace` gives them: read byte by byte while they
/// and the space between them are ASCII (a pytest line), by `split_whitespace` otherwise.
fn two_words(line: &str) -> Option<(&str, &str)> {
    let b = line.as_bytes();
    // Unicode's white space among ASCII characters (`u8::is_ascii_whitespace` lacks `\x0b`).
    let space = |x: u8| matches!(x, b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | b' ');
    let mut at = [(0, 0); 2];
    let mut i = 0;
    for word in &mut at {
        while i < b.len() && space(b[i]) {
            i += 1;
        }
        let start = i;
        while i < b.len() && !space(b[i]) {
            if !b[i].is_ascii() {
                let mut parts = line.split_whitespace();
                return parts.next().zip(parts.next());
            }
            i += 1;
        }
        if start == i {
            return None;
        }
        *word = (start, i);
    }
    Some((&line[at[0].0..at[0].1], &line[at[1].0..at[1].1]))
}

/// Tests found in one output, each once (where first found) with the last status it got: looked
/// up by a linear search while few, by a map past [`Found::FEW`].
#[derive(Default)]
struct Found<'t> {
    list: Vec<(&'t str, &'static str)>,
    at: FastMap<&'t str, usize>,
}

impl<'t> Found<'t> {
    const FEW: usize = 16;

    fn note(&mut self, name: &'t str, st: &'static str) {
        let k = if self.list.len() <= Self::FEW {
            self.list.iter().position(|(n, _)| *n == name)
        } else {
            if self.at.is_empty() {
                self.at.extend(self.list.iter().enumerate().map(|(k, (n, _))| (*n, k)));
            }
            self.at.get(name).copied()
        };
        if let Some(k) = k {
            self.list[k].1 = st;
        } else {
            if self.list.len() > Self::FEW {
                self.at.insert(name, self.list.len());
            }
            self.list.push((name, st));
        }
    }
}

/// Exception and error type names (`KeyError`, `ConfigurationError`, `IOException`) anywhere in
/// `text`: found by the suffix, then read back to the start of the word.
pub(super) fn exception_types(text: &str, out: &mut impl Put) {
    // One pass over the text for both suffixes (each starts with an `E`, rare in most outputs):
    // the names ending in `Error` first, then those ending in `Exception`, each in text order.
    let b = text.as_bytes();
    // Tracebacks repeat the same names: each is pushed once per text.
    let mut seen: FastSet<&str> = FastSet::default();
    let mut take = |at: usize, len: usize| {
        let end = at + len;
        if b.get(end).is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_') {
            return;
        }
        let start = b[..at]
            .iter()
            .rposition(|b| !(b.is_ascii_alphanumeric() || *b == b'_'))
            .map_or(0, |p| p + 1);
        let word = &text[start..end];
        if word.len() > len && word.len() <= 80 && word.as_bytes()[0].is_ascii_uppercase() && seen.insert(word) {
            push_unique(out, word);
        }
    };
    let mut exceptions: Vec<usize> = Vec::new();
    for at in memchr::memchr_iter(b'E', b) {
        if b[at..].starts_with(b"Error") {
            take(at, "Error".len());
        } else if b[at..].starts_with(b"Exception") {
            exceptions.push(at);
        }
    }
    for at in exceptions {
        take(at, "Exception".len());
    }
}

/// Paths named in a free-form patch (`*** Update File: x`, `+++ b/x`).
pub(super) fn patch_paths(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .filter_map(|l| {
            l.strip_prefix("*** Update File: ")
                .or_else(|| l.strip_prefix("*** Add File: "))
                .or_else(|| l.strip_prefix("*** Delete File: "))
                .or_else(|| l.strip_prefix("+++ b/"))
        })
        .map(str::trim)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_glob_under_a_rooted_directory_is_a_path_as_written() {
        let mut out = Vec::new();
        let cmd = "ls -lh ~/.claude/projects/repo/97ab04f7*.jsonl /tmp/*.log **/*.py src/*.rs /a/*/b.txt 2>/dev/null";
        paths_of(cmd.split_whitespace(), &mut out);
        assert_eq!(out, vec!["~/.claude/projects/repo/97ab04f7*.jsonl", "/tmp/*.log"]);
    }

    #[test]
    fn last_owned_keeps_what_keep_last_keeps() {
        // Generated lists over a small alphabet (many repeats), the empty text among them.
        let alphabet = ["a", "b", "", "src/a.py", "KeyError", "b "];
        let mut state = 7u64;
        for len in 0..40 {
            let list: Vec<&str> = (0..len)
                .map(|_| {
                    state = state
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1_442_695_040_888_963_407);
                    alphabet[(state >> 33) as usize % alphabet.len()]
                })
                .collect();
            let mut owned: Vec<String> = list.iter().map(|x| (*x).to_owned()).collect();
            keep_last(&mut owned);
            assert_eq!(last_owned(list.clone()), owned, "{list:?}");
        }
        assert_eq!(last_owned(vec!["x", "y", "x"]), vec!["y".to_owned(), "x".to_owned()]);
    }

    #[test]
    fn tests_give_back_each_name_with_its_status_in_order() {
        let mut tests = Tests::default();
        assert_eq!(tests.iter().count(), 0);
        let pushed = [
            ("tests/a.py::test_x", "passed"),
            ("", "named"),
            ("test_ünï", "failed"),
            ("tests/a.py::test_x", "ran"),
        ];
        tests.reserve(2, 8);
        for (name, status) in pushed {
            tests.push(name, status);
        }
        assert_eq!(tests.iter().collect::<Vec<_>>(), pushed);
    }

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
            " PASSED",
            "a FAILED b",
            "Test Result: ok",
            "RETURNCODE",
            "éerror",
            "eexit code",
            "xreturncodE",
            "E error",
            "ee",
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
    fn an_outcome_fails_only_when_it_reports_a_failure() {
        let cases: [(&[&str], &str, bool); 25] = [
            (
                &[r#"{"error": null, "result": "ok"}"#],
                r#"{"error": null, "result": "ok"}"#,
                true,
            ),
            (&[r#"{"errors": []}"#], r#"{"errors": []}"#, true),
            (
                &["{", r#""error": null,"#, r#""files": ["src/error.rs"]"#, "}"],
                "}",
                true,
            ),
            (&["error_handler.py", "errors/mod.rs", "README.md"], "README.md", true),
            (
                &["tests/test_x.py::test_error_path PASSED"],
                "tests/test_x.py::test_error_path PASSED",
                true,
            ),
            (&["Found 0 errors in 3 files."], "Found 0 errors in 3 files.", true),
            (&["ok: error=None failed=0"], "ok: error=None failed=0", true),
            (
                &["== 0 failed, 41 passed in 2.31s =="],
                "== 0 failed, 41 passed in 2.31s ==",
                true,
            ),
            (&["Exit code: 0"], "Exit code: 0", true),
            (&["<returncode>0</returncode>"], "<returncode>0</returncode>", true),
            (&["class ParseError(Exception):", "pass"], "pass", true),
            (&["except TypeError:"], "except TypeError:", true),
            (
                &[":raises IndexError: when out of range"],
                ":raises IndexError: when out of range",
                true,
            ),
            (
                &[r#"{"error": "permission denied"}"#],
                r#"{"error": "permission denied"}"#,
                false,
            ),
            (&[r#"{"errors": ["x"]}"#], r#"{"errors": ["x"]}"#, false),
            (
                &["error[E0425]: cannot find value `x`", "help: x"],
                "error[E0425]: cannot find value `x`",
                false,
            ),
            (
                &["Traceback (most recent call last):", "File \"a.py\"", "KeyError: 'k'"],
                "KeyError: 'k'",
                false,
            ),
            (&["E   AssertionError"], "E   AssertionError", false),
            (
                &["requests.exceptions.HTTPError: 404"],
                "requests.exceptions.HTTPError: 404",
                false,
            ),
            (&["2 errors generated."], "2 errors generated.", false),
            (
                &["== 1 failed, 41 passed in 2.31s =="],
                "== 1 failed, 41 passed in 2.31s ==",
                false,
            ),
            (
                &["Traceback (most recent call last):"],
                "Traceback (most recent call last):",
                false,
            ),
            (
                &["Process exited with exit status 2"],
                "Process exited with exit status 2",
                false,
            ),
            (&["[exit code 1]"], "[exit code 1]", false),
            (&["<returncode>1</returncode>"], "<returncode>1</returncode>", false),
        ];
        for (lines, line, ok) in cases {
            assert_eq!(outcome_of(lines), (line.to_owned(), ok), "{lines:?}");
        }
    }

    /// Texts at the edges of the fast paths: CRLF line ends, a last line without an end, blank
    /// and whitespace-only lines, non-ASCII letters and whitespace, names at the very start and
    /// end of a text, repeated names past the linear lookup.
    fn edge_texts() -> Vec<String> {
        let mut texts: Vec<String> = [
            "",
            "\n",
            "\r\n\r\n",
            "KeyError",
            "xKeyError: a\nValueError",
            "Error Exception _Error ÉError ÄnError KeyErrorX Key_Error",
            "raise ConfigException(\"x\")\r\nIOException\r\n",
            "tests/a.py::test_x PASSED\r\ntests/a.py::test_y FAILED",
            "PASSED tests/a.py::test_x\n\u{a0}tests/b.py::test_z\u{a0}ERROR\u{a0}\nFAILED tests/a.py::test_x - KeyError",
            "test tests/t.rs::it_works ... ok\ntest_one (m.C) ... ok\ntest_two (m.C) ... FAIL\n",
            "  line one  \n\n\t\n\u{3000}full width\u{3000}\nlast",
            "ünïcødé ::\n::test_ü ok\ntests/ü.py::test_ä SKIPPED",
        ]
        .iter()
        .map(|t| (*t).to_owned())
        .collect();
        let many: Vec<String> = (0..40)
            .map(|k| format!("tests/t.py::test_{} {}\n", k % 23, ["PASSED", "FAILED"][k % 2]))
            .collect();
        let many = many.concat();
        texts.push(many.clone());
        texts.push(many.replace('\n', "\r\n"));
        texts.push("x\n".repeat(100) + "tail ValueError");
        texts
    }

    #[test]
    fn last_lines_are_the_plain_definition() {
        fn plain(text: &str, n: usize) -> Vec<&str> {
            let mut out: Vec<&str> = text
                .rsplit('\n')
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .take(n)
                .collect();
            out.reverse();
            out
        }
        for text in edge_texts() {
            for n in [0, 1, 2, 3, 60] {
                assert_eq!(last_lines(&text, n), plain(&text, n), "{text:?} {n}");
            }
        }
    }

    #[test]
    fn exception_types_are_the_plain_definition() {
        let plain = |text: &str| {
            let mut out = Vec::new();
            let mut seen = std::collections::HashSet::new();
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
                        out.push(word.to_owned());
                    }
                }
            }
            out
        };
        for text in edge_texts() {
            let mut out = Vec::new();
            exception_types(&text, &mut out);
            assert_eq!(out, plain(&text), "{text:?}");
        }
    }

    #[test]
    fn test_statuses_read_every_line_with_a_node_id() {
        // The plain definition: every line, a map of the names found.
        let plain = |text: &str| -> Vec<(String, &'static str)> {
            let unittest = text.contains(" ... ");
            if !unittest && !text.contains("::") {
                return Vec::new();
            }
            let is_test = |w: &str| w.contains("::") && (w.contains(".py") || w.contains("test"));
            let mut found: Vec<(&str, &'static str)> = Vec::new();
            let mut note = |name, st| match found.iter().position(|(n, _)| *n == name) {
                Some(k) => found[k].1 = st,
                None => found.push((name, st)),
            };
            for line in text.lines() {
                if unittest && line.starts_with("test") && line.contains(" ... ") {
                    let (name, rest) = line.split_once(" ... ").unwrap_or((line, ""));
                    let first = rest.split_whitespace().next().unwrap_or("");
                    if let (Some(st), Some((method, _))) =
                        (status(first.trim_end_matches(['.', ','])), name.split_once(" ("))
                    {
                        if method.starts_with("test") && name.ends_with(')') {
                            note(name.trim(), st);
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
                    note(name, st);
                }
            }
            found.into_iter().map(|(n, st)| (n.to_owned(), st)).collect()
        };
        for text in edge_texts() {
            let mut tests = Tests::default();
            test_statuses(&text, &mut tests);
            let got: Vec<(String, &str)> = tests.iter().map(|(n, st)| (n.to_owned(), st)).collect();
            assert_eq!(got, plain(&text), "{text:?}");
        }
    }

    #[test]
    fn trimmed_is_str_trim() {
        let texts = [
            "",
            " ",
            "\x0b",
            "\x0bx",
            "x\x0b",
            " \x0b x \x0b ",
            "\u{a0}x",
            "x\u{85}",
            "\u{3000} a b \u{3000}",
            "\t\r\n\x0c a \x0c",
            "ü",
            " ü ",
            "a",
            "  a b  ",
            "\u{2003}",
        ];
        for t in texts {
            assert_eq!(trimmed(t), t.trim(), "{t:?}");
        }
    }

    #[test]
    fn has_is_str_contains() {
        let long = "x".repeat(70) + "::test_a";
        let hays = [
            "",
            ":",
            "::",
            "a::b",
            "test_x",
            "tests/a.py::test_b",
            "ü::ü",
            "todo",
            "tod",
            "xxtodo",
            "next step",
            "ext",
            long.as_str(),
            "https://x",
        ];
        for hay in hays {
            for needle in [
                "",
                ":",
                "::",
                "::test_",
                "todo",
                ".py",
                "test",
                "://",
                "ü",
                "x",
                "next step",
            ] {
                assert_eq!(has(hay, needle), hay.contains(needle), "{hay:?} {needle:?}");
            }
        }
    }

    #[test]
    fn two_words_and_ascii_trims_are_the_plain_definitions() {
        for line in [
            "",
            " ",
            "a",
            "a b",
            "  a\tb c ",
            "a\u{b}b",
            "a\u{a0}b c",
            "ü b",
            "a ü",
            "a\u{3000}b",
            "tests/a.py::test_x PASSED",
            "\u{2003}x y",
            "x\u{85}y z",
        ] {
            let mut parts = line.split_whitespace();
            assert_eq!(two_words(line), parts.next().zip(parts.next()), "{line:?}");
        }
        for word in ["", ".", "..:", "a.", ".a.", "?!x.py:", "==a=", "ü.:", ".ü", "=:!?"] {
            assert_eq!(
                trim_ascii_of(word, |b| b".:!?".contains(&b), |b| b".:!?".contains(&b)),
                word.trim_matches(|c: char| c == '.' || c == ':' || c == '!' || c == '?'),
                "{word:?}"
            );
            assert_eq!(
                trim_ascii_of(word, |b| b":!?=".contains(&b), |b| b".:!?=".contains(&b)),
                word.trim_end_matches(['.', ':', '!', '?', '='])
                    .trim_start_matches([':', '!', '?', '=']),
                "{word:?}"
            );
        }
    }
}
