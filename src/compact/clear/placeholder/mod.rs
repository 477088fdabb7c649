//! The placeholder that replaces a cleared result — `[cleared: result of read_file(path=a.py),
//! 12,345 tokens; recall id call_1]` — and the dedup stub: describing a call briefly, writing
//! and counting the text by parts, and recognising both by the constants that write them.

use std::hash::{BuildHasherDefault, Hasher};

use std::collections::HashMap;

use crate::compact::args::{Arg, Args};
use crate::compact::structure::{FxHasher, PassThrough, same_text};
use crate::model::{ResultContent, ToolInput};
use crate::tokens::Encoding;

mod oneline;

use oneline::{OneLine, shortened, shortened_value};

/// A short rendering of a call: `read_file(path=src/app.py)`, at most about 100 characters.
pub fn describe_call(name: &str, input: &ToolInput) -> String {
    let mut out = String::new();
    describe_into(&mut out, &mut String::new(), name, &Args::of(input), freeform(input));
    out
}

const VALUE_CHARS: usize = 60;
const CALL_CHARS: usize = 100;

/// The text of free-form input (described as it is, not as `{"input": ...}`).
fn freeform(input: &ToolInput) -> Option<&str> {
    match input {
        ToolInput::Freeform(s) => Some(s),
        _ => None,
    }
}

/// [`describe_call`] appended to `out`, from the input read as `args` (or its `freeform` text);
/// `scratch` is working space, reused between calls.
///
/// Every value is shortened to one line of at most 60 characters, then `name(key=value, ...)`
/// to one line of at most 100; both in one pass that stops reading a value or the input where
/// the cut falls.
fn describe_into(out: &mut String, scratch: &mut String, name: &str, args: &Args<'_>, freeform: Option<&str>) {
    let mut call = OneLine::new(out, CALL_CHARS);
    call.push_str(name);
    call.push_str("(");
    match (freeform, args) {
        (Some(s), _) => call.push_str(shortened(scratch, s)),
        (_, Args::Object(members)) => {
            for (i, (k, v)) in members.iter().enumerate() {
                if call.is_full() {
                    break;
                }
                if i > 0 {
                    call.push_str(", ");
                }
                call.push_str(k);
                call.push_str("=");
                match v {
                    Arg::Str(s) => call.push_str(shortened(scratch, s)),
                    Arg::Other(v) => call.push_str(shortened_value(scratch, v)),
                }
            }
        }
        (_, Args::Other(v)) => call.push_str(shortened_value(scratch, v)),
    }
    call.push_str(")");
}

/// Builds placeholders, describing each distinct call (tool name and input text) once.
#[derive(Default)]
pub struct Placeholders<'a> {
    scratch: String,
    /// The opening of each placeholder (`[cleared: result of DESCRIPTION, `), one after the
    /// other.
    described: String,
    /// (tool name, input text) → its description.
    seen: HashMap<CallKey<'a>, Described, BuildHasherDefault<PassThrough>>,
    /// The exact tokens of each opening, once counted (by `Described::slot`).
    opening_tokens: Vec<Option<usize>>,
    /// Working space for the part of a placeholder after its opening.
    tail: String,
}

/// A tool name and input text, hashed once, compared without a library call when short.
#[derive(Clone, Copy)]
struct CallKey<'a> {
    hash: u64,
    name: &'a str,
    args: &'a str,
}

impl<'a> CallKey<'a> {
    fn new(name: &'a str, args: &'a str) -> Self {
        // The lengths seed the hash, so ("ab", "c") and ("a", "bc") differ.
        let mut h = FxHasher::seeded((name.len() as u64) << 32 | args.len() as u64);
        h.write(name.as_bytes());
        h.write(args.as_bytes());
        CallKey {
            hash: h.finish(),
            name,
            args,
        }
    }
}

impl PartialEq for CallKey<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.hash == other.hash
            && same_text(self.name.as_bytes(), other.name.as_bytes())
            && same_text(self.args.as_bytes(), other.args.as_bytes())
    }
}

impl Eq for CallKey<'_> {}

impl std::hash::Hash for CallKey<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

/// Where the opening of a placeholder is in a [`Placeholders`] and how many characters it has.
#[derive(Clone, Copy, Debug)]
pub struct Described {
    start: usize,
    end: usize,
    chars: usize,
    /// Its place among the distinct descriptions.
    slot: usize,
}

impl<'a> Placeholders<'a> {
    /// The description of a call to `name` whose `arguments` text is `args`.
    pub fn describe_arguments(&mut self, name: &'a str, args: &'a str) -> Described {
        let Placeholders {
            scratch,
            described,
            seen,
            opening_tokens,
            ..
        } = self;
        *seen.entry(CallKey::new(name, args)).or_insert_with(|| {
            opening_tokens.push(None);
            let start = described.len();
            let [open, comma, ..] = PLACEHOLDER_PARTS;
            described.push_str(open);
            describe_into(described, scratch, name, &Args::raw(args), None);
            described.push_str(comma);
            Described {
                start,
                end: described.len(),
                chars: described[start..].chars().count(),
                slot: opening_tokens.len() - 1,
            }
        })
    }

    /// The exact tokens of the placeholder for the call `d` describes under `enc` (what
    /// `enc.count` gives for the text [`write`](Self::write) writes).
    ///
    /// For the BPE encodings the opening (`[cleared: result of CALL, `) is counted once per
    /// distinct call and only the rest for each placeholder: both encodings' pre-tokenizers always
    /// split the text where the opening ends (a single space after a non-space character, before
    /// a digit, is a piece of its own), and a BPE count is the sum over those pieces.
    pub fn count(&mut self, d: Described, tokens: usize, id: &str, enc: Encoding) -> usize {
        if enc == Encoding::Approximate {
            // What `count` gives for the text, from its length alone.
            return Encoding::approximate(Self::chars(d, tokens, id));
        }
        if !enc.is_bpe() {
            let mut text = std::mem::take(&mut self.tail);
            text.clear();
            self.write(d, tokens, id, &mut text);
            let n = enc.count(&text);
            self.tail = text;
            return n;
        }
        // Both through the count memo: the same results are cleared again on every call of a
        // framework that passes the whole list.
        let opening =
            *self.opening_tokens[d.slot].get_or_insert_with(|| enc.count_cached(&self.described[d.start..d.end]));
        self.tail.clear();
        push_tail(&mut self.tail, tokens, id);
        opening + enc.count_cached(&self.tail)
    }

    /// The placeholder for the call `d` describes, appended to `out`.
    pub fn write(&self, d: Described, tokens: usize, id: &str, out: &mut String) {
        let opening = &self.described[d.start..d.end];
        out.reserve(opening.len() + TAIL_BYTES + id.len());
        out.push_str(opening);
        push_tail(out, tokens, id);
    }

    /// The characters of that placeholder, without writing it.
    pub fn chars(d: Described, tokens: usize, id: &str) -> usize {
        let [_, _, recall, close] = PLACEHOLDER_PARTS;
        let digits = tokens.checked_ilog10().unwrap_or(0) as usize + 1;
        let end = if id.is_empty() {
            NOT_STORED.len()
        } else {
            // Ids are ASCII as a rule: their length, without counting characters one by one.
            let chars = if id.is_ascii() { id.len() } else { id.chars().count() };
            recall.len() + chars + close.len()
        };
        d.chars + digits + (digits - 1) / 3 + end
    }

    /// The bytes of that placeholder, without writing it.
    pub fn bytes(d: Described, tokens: usize, id: &str) -> usize {
        let [_, _, recall, close] = PLACEHOLDER_PARTS;
        let digits = tokens.checked_ilog10().unwrap_or(0) as usize + 1;
        let end = if id.is_empty() {
            NOT_STORED.len()
        } else {
            recall.len() + id.len() + close.len()
        };
        (d.end - d.start) + digits + (digits - 1) / 3 + end
    }

    /// [`placeholder`] for a call to `name` whose `arguments` text is `args`.
    pub fn for_arguments(&mut self, name: &'a str, args: &'a str, tokens: usize, id: &str) -> String {
        let d = self.describe_arguments(name, args);
        let mut out = String::new();
        self.write_new(d, tokens, id, &mut out);
        out
    }

    /// [`write`](Self::write) into an empty `out`, with room made for the whole text at once.
    pub fn write_new(&self, d: Described, tokens: usize, id: &str, out: &mut String) {
        out.reserve_exact((d.end - d.start) + TAIL_BYTES + id.len());
        self.write(d, tokens, id, out);
    }

    /// [`placeholder`], with `arguments` text described once for every call with the same text.
    pub fn placeholder(&mut self, name: &'a str, input: &'a ToolInput, tokens: usize, id: &str) -> String {
        match input {
            ToolInput::Raw(args) => self.for_arguments(name, args, tokens, id),
            other => {
                let mut description = String::new();
                describe_into(
                    &mut description,
                    &mut self.scratch,
                    name,
                    &Args::of(other),
                    freeform(other),
                );
                placeholder_text(&description, tokens, id)
            }
        }
    }
}

/// The placeholder that replaces a cleared result.
pub fn placeholder(name: &str, input: &ToolInput, tokens: usize, id: &str) -> String {
    placeholder_text(&describe_call(name, input), tokens, id)
}

/// The fixed text of a placeholder, around the description, the tokens and the id.
const PLACEHOLDER_PARTS: [&str; 4] = ["[cleared: result of ", ", ", " tokens; recall id ", "]"];

/// The placeholder around a call's description.
fn placeholder_text(description: &str, tokens: usize, id: &str) -> String {
    let mut out = String::with_capacity(48 + description.len() + id.len());
    push_placeholder(&mut out, description, tokens, id);
    out
}

fn push_placeholder(out: &mut String, description: &str, tokens: usize, id: &str) {
    let [open, comma, ..] = PLACEHOLDER_PARTS;
    out.push_str(open);
    out.push_str(description);
    out.push_str(comma);
    push_tail(out, tokens, id);
}

/// The most bytes a placeholder has after its id-less opening and besides the id: the token
/// count (at most 26 characters with separators) and the fixed text around it.
const TAIL_BYTES: usize = 26 + PLACEHOLDER_PARTS[2].len() + PLACEHOLDER_PARTS[3].len();

/// What follows the description: `12,345 tokens; recall id ID]`.
/// An empty id writes `12,345 tokens; not stored]`: nothing can recall the result.
fn push_tail(out: &mut String, tokens: usize, id: &str) {
    let [_, _, recall, close] = PLACEHOLDER_PARTS;
    push_grouped(out, tokens);
    if id.is_empty() {
        out.push_str(NOT_STORED);
        return;
    }
    out.push_str(recall);
    out.push_str(id);
    out.push_str(close);
}

/// The end of a placeholder whose result is not stored anywhere.
const NOT_STORED: &str = " tokens; not stored]";

/// `n` with thousands separated by commas.
fn push_grouped(out: &mut String, n: usize) {
    // Digits from the last, into a buffer; then copied out in order.
    let mut buf = [0u8; 26];
    let mut at = buf.len();
    let mut rest = n;
    let mut written = 0;
    loop {
        if written > 0 && written % 3 == 0 {
            at -= 1;
            buf[at] = b',';
        }
        at -= 1;
        buf[at] = b'0' + (rest % 10) as u8;
        written += 1;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    for &b in &buf[at..] {
        out.push(char::from(b));
    }
}

/// Whether a result was already cleared or deduplicated by this module.
pub fn is_placeholder(content: &ResultContent) -> bool {
    matches!(content, ResultContent::Text(t) if is_placeholder_text(t))
}

/// Whether a result's text is a placeholder of this module (a cleared result or a dedup stub):
/// clearing leaves it alone.
pub fn is_placeholder_text(text: &str) -> bool {
    text.starts_with(PLACEHOLDER_PARTS[0]) || text.starts_with(SUPERSEDED)
}

/// How a dedup stub opens.
pub(super) const SUPERSEDED: &str = "[superseded: ";

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    #[test]
    fn describes_calls_briefly() {
        let input = ToolInput::Raw(r#"{"path": "src/app.py", "limit": 200}"#.into());
        assert_eq!(
            describe_call("read_file", &input),
            "read_file(path=src/app.py, limit=200)"
        );
        let long = ToolInput::Raw(format!(r#"{{"command": "{}"}}"#, "x".repeat(500)));
        assert!(describe_call("bash", &long).chars().count() <= 100);
        assert_eq!(
            placeholder("bash", &ToolInput::Freeform("ls -la".into()), 12_345, "c1"),
            "[cleared: result of bash(ls -la), 12,345 tokens; recall id c1]"
        );
        // No id: nothing holds the result, and the placeholder says so.
        let unstored = placeholder("bash", &ToolInput::Freeform("ls -la".into()), 12_345, "");
        assert_eq!(unstored, "[cleared: result of bash(ls -la), 12,345 tokens; not stored]");
        let mut memo = Placeholders::default();
        let d = memo.describe_arguments("read", r#"{"path":"a.py"}"#);
        let mut text = String::new();
        memo.write(d, 7, "", &mut text);
        assert_eq!(Placeholders::chars(d, 7, ""), text.chars().count());
        assert_eq!(memo.count(d, 7, "", Encoding::O200k), Encoding::O200k.count(&text));
    }

    #[test]
    fn placeholder_counts_by_parts_equal_whole_counts() {
        let names = ["read_file", "bash", "", "ツール", "a b", "x1", "grep's"];
        let values = [
            "src/app.py",
            "ls -la && echo 'done'",
            "日本語のテキスト",
            "emoji 🎉🎉 here",
            "   spaced\n\tout   ",
            "12345",
            "ends with digit 7",
            "it's here",
            "…",
            "a/b/c.rs:12",
            "x",
        ];
        let ids = [
            "call_1",
            "toolu_01ABCDEFGHIJKLMNOPQRSTUV",
            "",
            "12",
            " lead",
            "ид_7",
            "a b c",
            "x]",
        ];
        let numbers = [0, 7, 42, 999, 1_000, 12_345, 65_536, 1_234_567, 987_654_321];
        let mut rng = crate::compact::testing::xorshift(0x51ed_270b_27a1_4c0d);
        let mut next = move || rng() as usize;
        let mut args_texts = Vec::new();
        for _ in 0..400 {
            let v = values[next() % values.len()];
            let args = match next() % 5 {
                0 => format!(r#"{{"path": "{v}"}}"#),
                1 => format!(
                    r#"{{"command": "{}", "n": {}}}"#,
                    v.repeat(1 + next() % 12),
                    next() % 1000
                ),
                2 => format!(r#"{{"q": "{v}", "flag": true, "list": [1, "{v}"]}}"#),
                3 => "{}".to_owned(),
                _ => format!("not json {v}"),
            };
            args_texts.push((names[next() % names.len()], args));
        }
        for enc in [
            Encoding::O200k,
            Encoding::Cl100k,
            Encoding::Heuristic,
            Encoding::Approximate,
        ] {
            let mut memo = Placeholders::default();
            for (name, args) in &args_texts {
                let d = memo.describe_arguments(name, args);
                for _ in 0..3 {
                    let n = numbers[next() % numbers.len()];
                    let id = ids[next() % ids.len()];
                    let mut text = String::new();
                    memo.write(d, n, id, &mut text);
                    assert_eq!(memo.count(d, n, id, enc), enc.count(&text), "{enc:?}: {text:?}");
                    assert_eq!(Placeholders::bytes(d, n, id), text.len(), "{text:?}");
                    assert_eq!(Placeholders::chars(d, n, id), text.chars().count(), "{text:?}");
                }
            }
        }
    }

    #[test]
    fn groups_thousands() {
        for (n, text) in [
            (0, "0"),
            (7, "7"),
            (999, "999"),
            (1_000, "1,000"),
            (65_536, "65,536"),
            (1_234_567, "1,234,567"),
            (usize::MAX, "18,446,744,073,709,551,615"),
        ] {
            let mut out = String::new();
            push_grouped(&mut out, n);
            assert_eq!(out, text);
            // The memoized path writes the same text and knows its length beforehand.
            let mut memo = Placeholders::default();
            let d = memo.describe_arguments("read", "{}");
            let mut written = String::new();
            memo.write(d, n, "id", &mut written);
            assert_eq!(written, placeholder("read", &ToolInput::Raw("{}".into()), n, "id"));
            assert_eq!(Placeholders::chars(d, n, "id"), written.chars().count());
            assert!(written.len() <= (d.end - d.start) + TAIL_BYTES + 2);
        }
    }

    /// The plain definition the one-pass version must match byte for byte.
    fn reference_describe(name: &str, input: &ToolInput) -> String {
        fn shorten(s: &str, max: usize) -> String {
            let one_line: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
            if one_line.chars().count() <= max {
                one_line
            } else {
                let cut: String = one_line.chars().take(max.saturating_sub(1)).collect();
                format!("{cut}…")
            }
        }
        let args = match input {
            ToolInput::Freeform(s) => shorten(s, 60),
            other => match other.to_object() {
                Value::Object(map) => map
                    .iter()
                    .map(|(k, v)| {
                        let v = match v {
                            Value::String(s) => shorten(s, 60),
                            other => shorten(&other.to_string(), 60),
                        };
                        format!("{k}={v}")
                    })
                    .collect::<Vec<_>>()
                    .join(", "),
                other => shorten(&other.to_string(), 60),
            },
        };
        shorten(&format!("{name}({args})"), 100)
    }

    #[test]
    fn describes_like_the_plain_definition() {
        // xorshift: deterministic pieces of text with every kind of whitespace and width.
        let mut rng = crate::compact::testing::xorshift(0x9e37_79b9_7f4a_7c15);
        let mut next = move |n: usize| (rng() % n as u64) as usize;
        let pieces = [
            "a",
            "src/app.py",
            " ",
            "  ",
            "\t",
            "\n",
            "\u{b}",
            "\u{c}",
            "\r",
            "\u{a0}",
            "\u{3000}",
            "\u{85}",
            "\u{1c}",
            "é",
            "漢字",
            "🙂",
            "x",
            "word",
            ",",
            "=",
            "(",
            "…",
            "\"",
            "\\",
        ];
        let mut text = |len: usize| (0..len).map(|_| pieces[next(pieces.len())]).collect::<String>();
        let mut inputs = Vec::new();
        for len in [0, 1, 2, 5, 20, 59, 60, 61, 62, 99, 100, 101, 150, 400] {
            for _ in 0..6 {
                let t = text(len);
                inputs.push(ToolInput::Freeform(t.clone()));
                inputs.push(ToolInput::Raw(
                    serde_json::json!({ "v": t.clone(), "k": 1 }).to_string(),
                ));
                inputs.push(ToolInput::Raw(
                    serde_json::json!({ t.clone(): [t.clone(), 2.5] }).to_string(),
                ));
                inputs.push(ToolInput::Raw(t.clone()));
                // Only strings without escapes: the one-pass reading of plain objects.
                let plain: String = t.chars().filter(|&c| c >= ' ' && c != '"' && c != '\\').collect();
                inputs.push(ToolInput::Raw(format!("{{\"v\": \"{plain}\", \"{plain}\": \"w\"}}")));
                inputs.push(ToolInput::Json(Box::new(
                    serde_json::json!({ "a": t.clone(), "b": {"c": t} }),
                )));
            }
        }
        inputs.push(ToolInput::Json(Box::new(serde_json::json!([1, "two"]))));
        inputs.push(ToolInput::Raw("{\"x\": 1e400}".into()));
        for name in ["read_file", "a b\tc", "", &"n".repeat(99), &"n".repeat(120)] {
            for input in &inputs {
                assert_eq!(
                    describe_call(name, input),
                    reference_describe(name, input),
                    "{name:?} {input:?}"
                );
                if let ToolInput::Raw(args) = input {
                    let mut memo = Placeholders::default();
                    for tokens in [0, 7, 999, 1_000, 123_456, 1_234_567] {
                        let d = memo.describe_arguments(name, args);
                        let mut text = String::new();
                        memo.write(d, tokens, "çall_1", &mut text);
                        assert_eq!(text, placeholder(name, input, tokens, "çall_1"));
                        assert_eq!(Placeholders::chars(d, tokens, "çall_1"), text.chars().count());
                    }
                }
                let mut memo = Placeholders::default();
                for _ in 0..2 {
                    assert_eq!(
                        memo.placeholder(name, input, 1_234_567, "id"),
                        format!(
                            "[cleared: result of {}, 1,234,567 tokens; recall id id]",
                            reference_describe(name, input)
                        )
                    );
                }
            }
        }
    }
}
