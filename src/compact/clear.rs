//! Clearing old tool results (deterministic, no model involved) and deduplicating repeated
//! read-only calls. The tool call (name and input) always stays; user and assistant text is never
//! rewritten; protected and pinned messages are never touched.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use rayon::prelude::*;
use serde_json::Value;

use super::args::{Arg, Args};
use super::select::Protected;
use super::structure::{FxHasher, Pairing, PassThrough, same_text};
use crate::model::{Block, Body, Extra, Message, ResultContent, Role, ToolInput};
use crate::tokens::{self, Encoding};

/// Options of [`clear_tool_results`].
#[derive(Clone, Debug)]
#[allow(clippy::struct_excessive_bools)] // independent switches, each one a caller's option
pub struct ClearOptions {
    /// Tools whose results are never cleared.
    pub exclude_tools: BTreeSet<String>,
    /// Also replace the inputs of cleared calls.
    pub clear_tool_inputs: bool,
    /// Clear only if at least this many tokens are freed (so the prompt cache is not broken for
    /// little gain); 0 clears whatever there is.
    pub clear_at_least: usize,
    /// Keep thinking blocks of old assistant turns (else they are dropped outside the protected set).
    pub keep_thinking: bool,
    /// Count every placeholder exactly (for a caller that keeps the counts of the new messages,
    /// as `Conversation` does). Otherwise, with cached counts, a placeholder clearly smaller than
    /// its result is given an upper bound instead (see [`Cleared::after_exact`]).
    pub count_placeholders: bool,
    /// Placeholders name the call id as the recall id (the caller keeps the originals: a session
    /// log, a result store, its own messages). When false they say that the result is not stored.
    pub recall_ids: bool,
}

impl Default for ClearOptions {
    fn default() -> Self {
        ClearOptions {
            exclude_tools: BTreeSet::new(),
            clear_tool_inputs: false,
            clear_at_least: 0,
            keep_thinking: true,
            count_placeholders: false,
            recall_ids: true,
        }
    }
}

/// One cleared result. The id and the tool name are borrowed from the messages the plan was made
/// from ([`Cleared::into_owned`] copies them, for a report that outlives those messages).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cleared<'a> {
    pub index: usize,
    pub tool_use_id: Cow<'a, str>,
    pub tool_name: Cow<'a, str>,
    pub tokens_before: usize,
    pub tokens_after: usize,
    /// `tokens_after` is the placeholder block's count (what `count_block` gives for it); when
    /// false it is an upper bound, which a caller that recounts the message replaces.
    pub after_exact: bool,
}

impl Cleared<'_> {
    /// This entry with its own copies of the id and the tool name.
    pub fn into_owned(self) -> Cleared<'static> {
        Cleared {
            index: self.index,
            tool_use_id: Cow::Owned(self.tool_use_id.into_owned()),
            tool_name: Cow::Owned(self.tool_name.into_owned()),
            tokens_before: self.tokens_before,
            tokens_after: self.tokens_after,
            after_exact: self.after_exact,
        }
    }
}

/// What a clearing pass did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClearReport<'a> {
    pub cleared: Vec<Cleared<'a>>,
    /// Messages whose tool-call inputs were cleared (`clear_tool_inputs`).
    pub inputs_cleared: Vec<usize>,
    /// Messages whose old thinking blocks were dropped.
    pub thinking_dropped: Vec<usize>,
    pub tokens_freed: usize,
    /// Set when clearing would have freed less than `clear_at_least` and nothing was changed.
    pub skipped_below_minimum: bool,
}

impl ClearReport<'_> {
    /// This report with its own copies of every id and tool name.
    pub fn into_owned(self) -> ClearReport<'static> {
        ClearReport {
            cleared: self.cleared.into_iter().map(Cleared::into_owned).collect(),
            inputs_cleared: self.inputs_cleared,
            thinking_dropped: self.thinking_dropped,
            tokens_freed: self.tokens_freed,
            skipped_below_minimum: self.skipped_below_minimum,
        }
    }
}

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
            recall.len() + id.chars().count() + close.len()
        };
        d.chars + digits + (digits - 1) / 3 + end
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

/// `s` on one line, at most [`VALUE_CHARS`] characters, in `scratch`.
fn shortened<'s>(scratch: &'s mut String, s: &str) -> &'s str {
    scratch.clear();
    OneLine::new(scratch, VALUE_CHARS).push_str(s);
    scratch
}

/// A JSON value's compact text on one line, at most [`VALUE_CHARS`] characters, in `scratch`
/// (the value is written only as far as the cut).
fn shortened_value<'s>(scratch: &'s mut String, v: &Value) -> &'s str {
    use std::fmt::Write as _;
    scratch.clear();
    // An error here only means the value was cut short.
    let _ = write!(OneLine::new(scratch, VALUE_CHARS), "{v}");
    scratch
}

/// Appends text as `split_whitespace().join(" ")` would, up to `max` characters: text longer
/// than that keeps its first `max - 1` characters and gets `…`.
struct OneLine<'o> {
    out: &'o mut String,
    max: usize,
    /// Characters written.
    chars: usize,
    /// A whitespace run was seen after the last character written.
    space: bool,
    /// Where the text ends if it must be cut: after `max - 1` characters.
    cut: usize,
    full: bool,
}

impl<'o> OneLine<'o> {
    fn new(out: &'o mut String, max: usize) -> Self {
        let cut = out.len();
        OneLine {
            out,
            max,
            chars: 0,
            space: false,
            cut,
            full: false,
        }
    }

    fn is_full(&self) -> bool {
        self.full
    }

    fn push_str(&mut self, s: &str) {
        if self.full {
            return;
        }
        let bytes = s.as_bytes();
        // Printable ASCII without spaces (names, keys, paths): one run. The check runs over
        // every byte without stopping early, which the compiler turns into wide compares.
        if bytes.iter().fold(true, |ok, &b| ok & (b.wrapping_sub(0x21) < 0x5e)) {
            if !bytes.is_empty() && std::mem::take(&mut self.space) && !self.put(' ') {
                return;
            }
            self.put_ascii(s);
            return;
        }
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i].is_ascii() {
                if is_ascii_space(bytes[i]) {
                    self.space = self.chars > 0;
                    i += 1;
                    continue;
                }
                // A run of ASCII characters that are not whitespace, written at once.
                let start = i;
                while i < bytes.len() && bytes[i].is_ascii() && !is_ascii_space(bytes[i]) {
                    i += 1;
                }
                if std::mem::take(&mut self.space) && !self.put(' ') || !self.put_ascii(&s[start..i]) {
                    return;
                }
            } else {
                let c = s[i..].chars().next().expect("a character starts here");
                i += c.len_utf8();
                if c.is_whitespace() {
                    self.space = self.chars > 0;
                    continue;
                }
                if std::mem::take(&mut self.space) && !self.put(' ') || !self.put(c) {
                    return;
                }
            }
        }
    }

    /// [`put`](Self::put) for each character of an ASCII run.
    fn put_ascii(&mut self, run: &str) -> bool {
        let k = run.len();
        if self.chars + k <= self.max {
            if self.chars < self.max && self.chars + k >= self.max {
                self.cut = self.out.len() + (self.max - 1 - self.chars);
            }
            self.out.push_str(run);
            self.chars += k;
            return true;
        }
        let keep = self.max.saturating_sub(1);
        if self.chars <= keep {
            self.out.push_str(&run[..keep - self.chars]);
        } else {
            self.out.truncate(self.cut);
        }
        self.out.push('…');
        self.full = true;
        false
    }

    /// Write one character; false once the text is over `max` (then cut and closed).
    fn put(&mut self, c: char) -> bool {
        if self.chars == self.max {
            self.out.truncate(self.cut);
            self.out.push('…');
            self.full = true;
            return false;
        }
        if self.chars + 1 == self.max {
            self.cut = self.out.len();
        }
        self.out.push(c);
        self.chars += 1;
        true
    }
}

/// What `char::is_whitespace` says of an ASCII byte.
fn is_ascii_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | b' ')
}

impl std::fmt::Write for OneLine<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.push_str(s);
        if self.full { Err(std::fmt::Error) } else { Ok(()) }
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

/// The result block `block` with its content replaced by `text` (id, error flag and unknown
/// fields kept).
fn with_text(block: &Block, tool_use_id: &str, is_error: Option<bool>, text: String) -> Block {
    Block {
        body: Body::ToolResult {
            tool_use_id: tool_use_id.to_owned(),
            content: ResultContent::Text(text),
            is_error,
        },
        extra: copy_extra(&block.extra),
        item: block.item.clone(),
    }
}

/// A copy of `extra`; an empty map (the usual case) is made rather than cloned, which skips the
/// generic clone of its (empty) table and entries.
fn copy_extra(extra: &Extra) -> Extra {
    if extra.is_empty() { Extra::new() } else { extra.clone() }
}

/// The result block at `at` with its id and error flag, unless it is not a result or was already
/// replaced by a placeholder or a stub.
fn live_result(messages: &[Message], at: (usize, usize)) -> Option<(&Block, &str, Option<bool>)> {
    let block = &messages[at.0].blocks[at.1];
    match &block.body {
        Body::ToolResult {
            tool_use_id,
            content,
            is_error,
        } if !is_placeholder(content) => Some((block, tool_use_id.as_str(), *is_error)),
        _ => None,
    }
}

fn result_tokens(enc: Encoding, b: &Block) -> usize {
    tokens::count_block(enc, b)
}

/// Clear every completed, paired tool result outside `protected`: its content becomes a
/// placeholder naming the call, its size and a recall id (the call id). Returns the new messages
/// (only changed messages differ) and a report. Nothing changes when fewer than
/// `clear_at_least` tokens would be freed.
pub fn clear_tool_results<'m>(
    messages: &'m [Message],
    pairing: &Pairing<'m>,
    protected: &Protected,
    enc: Encoding,
    options: &ClearOptions,
) -> (Vec<Message>, ClearReport<'m>) {
    let (changed, report) = plan_clear(messages, pairing, protected, enc, options);
    (apply(messages, changed), report)
}

/// `messages` with the messages at the given positions replaced (positions in increasing order,
/// as the plans give them; any order is accepted). Only the unchanged messages are copied.
pub fn apply(messages: &[Message], mut changed: Vec<(usize, Message)>) -> Vec<Message> {
    if !changed.is_sorted_by_key(|(i, _)| *i) {
        changed.sort_by_key(|(i, _)| *i);
    }
    let mut out = Vec::with_capacity(messages.len());
    let mut changed = changed.into_iter().peekable();
    for (i, m) in messages.iter().enumerate() {
        let mut new = None;
        // A later entry for the same position wins, as assignment in order would have it.
        while let Some((_, m)) = changed.next_if(|(at, _)| *at == i) {
            new = Some(m);
        }
        out.push(new.unwrap_or_else(|| m.clone()));
    }
    debug_assert!(changed.next().is_none(), "a changed position past the end");
    out
}

/// What [`clear_tool_results`] would change, without copying the rest: the new versions of the
/// changed messages (by position) and the report.
pub fn plan_clear<'m>(
    messages: &'m [Message],
    pairing: &Pairing<'m>,
    protected: &Protected,
    enc: Encoding,
    options: &ClearOptions,
) -> (Vec<(usize, Message)>, ClearReport<'m>) {
    plan_clear_counted(messages, None, pairing, protected, enc, options)
}

/// From this many clearable results on, results are counted and placeholders built on all
/// cores when counting is exact (BPE); otherwise the work per result is a few allocations,
/// which one thread does faster than two can share.
const PARALLEL_RESULTS: usize = 256;

/// One result to clear: the report entry, where the block is and its placeholder.
type ResultPlan<'m> = (Cleared<'m>, (usize, usize), String);

/// What replaces a block: a result's new text, or a whole new block.
enum Replacement {
    Text(String),
    Block(Box<Block>),
}

/// [`plan_clear`] reusing cached counts (`counts[i]` of message `i`) for the results it clears,
/// so only the placeholders are counted.
pub fn plan_clear_counted<'m>(
    messages: &'m [Message],
    counts: Option<&[tokens::MessageTokens]>,
    pairing: &Pairing<'m>,
    protected: &Protected,
    enc: Encoding,
    options: &ClearOptions,
) -> (Vec<(usize, Message)>, ClearReport<'m>) {
    let cached = |(mi, bi): (usize, usize)| counts.and_then(|c| c.get(mi)).and_then(|mt| mt.tool(bi));
    let (protected_messages, protected_calls) = protected.flags(messages.len(), pairing.calls.len());
    let candidates: Vec<usize> = pairing
        .calls
        .iter()
        .enumerate()
        .filter(|&(ci, c)| {
            c.result.is_some_and(|at| {
                !(protected_calls[ci]
                    || protected_messages[at.0]
                    || protected_messages[c.at.0]
                    || options.exclude_tools.contains(c.name))
            })
        })
        .map(|(ci, _)| ci)
        .collect();
    // The result of one call, cleared, if that frees tokens.
    let clear_result = |placeholders: &mut Placeholders<'m>, ci: usize| -> Option<ResultPlan<'m>> {
        let c = &pairing.calls[ci];
        let id = if options.recall_ids { c.id } else { "" };
        let at = c.result?;
        let (block, _, _) = live_result(messages, at)?;
        let Body::ToolUse { input, .. } = &messages[c.at.0].blocks[c.at.1].body else {
            return None;
        };
        let before = cached(at).unwrap_or_else(|| result_tokens(enc, block));
        // An `arguments` text is described once per distinct call, and its placeholder counted
        // by parts (see `Placeholders::count`).
        let described = match input {
            ToolInput::Raw(args) => Some(placeholders.describe_arguments(c.name, args)),
            _ => None,
        };
        let text = match described {
            Some(d) => {
                let mut text = String::new();
                placeholders.write_new(d, before, id, &mut text);
                text
            }
            None => placeholders.placeholder(c.name, input, before, id),
        };
        // With cached counts, unless every placeholder is asked for: when the result is clearly
        // larger than any count of its placeholder, the placeholder is not counted here and the
        // report holds that bound (a caller that keeps counts fills in the exact figure). A
        // byte-level BPE token covers at least one byte (and chars / 4 is below the byte count);
        // the heuristic is allowed two tokens a byte.
        let per_byte = if matches!(enc, Encoding::Heuristic) { 2 } else { 1 };
        let bound = tokens::TOOL_BLOCK_OVERHEAD + per_byte * text.len();
        let bounded = counts.is_some() && before > bound && !options.count_placeholders;
        let after = if bounded {
            bound
        } else {
            // What `count_block` gives for a result whose content is this text.
            tokens::TOOL_BLOCK_OVERHEAD
                + match described {
                    Some(d) if enc.is_bpe() => placeholders.count(d, before, id, enc),
                    _ => enc.count(&text),
                }
        };
        (after < before).then(|| {
            let cleared = Cleared {
                index: at.0,
                tool_use_id: Cow::Borrowed(c.id),
                tool_name: Cow::Borrowed(c.name),
                tokens_before: before,
                tokens_after: after,
                after_exact: !bounded,
            };
            (cleared, at, text)
        })
    };
    let exact_counting = enc.is_bpe();
    let mut report = ClearReport::default();
    // (message, block) → replacement block
    let mut replace: Vec<((usize, usize), Replacement)> = Vec::new();
    let mut placeholders = Placeholders::default();
    // Exact counting of placeholders is worth spreading over threads; with cached counts most
    // placeholders are not counted at all (see the bound above), and threads only cost.
    let parallel = exact_counting && counts.is_none() && candidates.len() >= PARALLEL_RESULTS;
    let results: Vec<ResultPlan<'m>> = if parallel {
        candidates
            .par_iter()
            .with_min_len(PARALLEL_RESULTS / 2)
            .map_init(Placeholders::default, |placeholders, &ci| {
                clear_result(placeholders, ci)
            })
            .flatten_iter()
            .collect()
    } else {
        Vec::new()
    };
    // Written straight into the report and the replacements (serially, with room made for
    // every candidate), without a list of results in between.
    let planned = if parallel { results.len() } else { candidates.len() };
    report.cleared.reserve_exact(planned);
    replace.reserve_exact(planned);
    let serial: &[usize] = if parallel { &[] } else { &candidates };
    let serial = serial.iter().filter_map(|&ci| clear_result(&mut placeholders, ci));
    // A message whose only block is the result (an OpenAI `tool` message, a Responses output)
    // is built here, while it is fresh in the cache; nothing else can change it (thinking and
    // call inputs are in other messages). Messages of several blocks are built below.
    let mut direct: Vec<(usize, Message)> = Vec::with_capacity(planned);
    for (cleared, at, text) in results.into_iter().chain(serial) {
        report.cleared.push(cleared);
        let m = &messages[at.0];
        if m.blocks.len() == 1 {
            direct.push((at.0, message_with(m, Arc::new([with_placeholder(&m.blocks[0], text)]))));
        } else {
            replace.push((at, Replacement::Text(text)));
        }
    }
    report.tokens_freed = report.cleared.iter().map(|c| c.tokens_before - c.tokens_after).sum();
    if options.clear_tool_inputs {
        for &ci in &candidates {
            let c = &pairing.calls[ci];
            if c.result.is_none_or(|at| live_result(messages, at).is_none()) {
                continue;
            }
            let call_block = &messages[c.at.0].blocks[c.at.1];
            if let Body::ToolUse { id, name, input } = &call_block.body {
                let summary = format!("[input cleared: {} chars]", input.as_text().chars().count());
                let mut obj = serde_json::Map::new();
                obj.insert("cleared".into(), Value::String(summary));
                let cleared = Block {
                    body: Body::ToolUse {
                        id: id.clone(),
                        name: name.clone(),
                        input: ToolInput::Json(Value::Object(obj)),
                    },
                    extra: call_block.extra.clone(),
                    item: call_block.item.clone(),
                };
                let was = cached(c.at).unwrap_or_else(|| result_tokens(enc, call_block));
                let now = result_tokens(enc, &cleared);
                if now < was {
                    report.tokens_freed += was - now;
                    report.inputs_cleared.push(c.at.0);
                    replace.push((c.at, Replacement::Block(Box::new(cleared))));
                }
            }
        }
    }
    let mut drop_thinking: BTreeSet<usize> = BTreeSet::new();
    if !options.keep_thinking {
        for (i, m) in messages.iter().enumerate() {
            if m.role == Role::Assistant && !protected.messages.contains(&i) {
                let freed: usize = m
                    .blocks
                    .iter()
                    .filter(|b| matches!(b.body, Body::Thinking { .. } | Body::RedactedThinking { .. }))
                    .map(|b| result_tokens(enc, b))
                    .sum();
                if freed > 0 {
                    report.tokens_freed += freed;
                    drop_thinking.insert(i);
                }
            }
        }
    }
    if report.tokens_freed < options.clear_at_least || report.tokens_freed == 0 {
        let skipped = report.tokens_freed > 0;
        return (
            Vec::new(),
            ClearReport {
                skipped_below_minimum: skipped,
                ..ClearReport::default()
            },
        );
    }
    report.thinking_dropped = drop_thinking.iter().copied().collect();
    // Results and call inputs never share a position: one sorted list, consumed in order.
    replace.sort_unstable_by_key(|(at, _)| *at);
    let mut touched: Vec<usize> = replace
        .iter()
        .map(|&((mi, _), _)| mi)
        .chain(drop_thinking.iter().copied())
        .collect();
    touched.sort_unstable();
    touched.dedup();
    let mut replace = replace.into_iter().peekable();
    let mut changed: Vec<(usize, Message)> = touched
        .into_iter()
        .map(|mi| {
            let m = &messages[mi];
            let drop = drop_thinking.contains(&mi);
            let mut blocks = Vec::with_capacity(m.blocks.len());
            for (bi, b) in m.blocks.iter().enumerate() {
                if let Some((_, new)) = replace.next_if(|(at, _)| *at == (mi, bi)) {
                    blocks.push(match new {
                        Replacement::Block(block) => *block,
                        Replacement::Text(text) => with_placeholder(b, text),
                    });
                } else if !(drop && matches!(b.body, Body::Thinking { .. } | Body::RedactedThinking { .. })) {
                    blocks.push(b.clone());
                }
            }
            (mi, message_with(m, blocks.into()))
        })
        .collect();
    // Both lists are in message order as a rule; the stable sort only checks that when so.
    if changed.is_empty() {
        changed = direct;
    } else {
        changed.append(&mut direct);
    }
    changed.sort_by_key(|&(mi, _)| mi);
    (changed, report)
}

/// `m` with `blocks` as its blocks (role, form, origin and unknown fields kept).
fn message_with(m: &Message, blocks: Arc<[Block]>) -> Message {
    Message {
        role: m.role,
        blocks,
        form: m.form,
        origin: m.origin,
        extra: copy_extra(&m.extra),
    }
}

/// The result block `b` with its content replaced by a placeholder's `text`.
fn with_placeholder(b: &Block, text: String) -> Block {
    match &b.body {
        Body::ToolResult {
            tool_use_id, is_error, ..
        } => with_text(b, tool_use_id, *is_error, text),
        _ => unreachable!("placeholders replace results"),
    }
}

/// Whether a result was already cleared or deduplicated by this module.
pub fn is_placeholder(content: &ResultContent) -> bool {
    matches!(content, ResultContent::Text(t) if t.starts_with("[cleared: result of ") || t.starts_with("[superseded: "))
}

/// Replace the results of earlier calls to the same read-only tool with the same input by a
/// short stub pointing to the latest one. Protected messages are left alone.
pub fn dedup_repeated_calls<'m>(
    messages: &[Message],
    pairing: &Pairing<'m>,
    protected: &Protected,
    read_only: &BTreeSet<String>,
) -> (Vec<Message>, Vec<Cleared<'m>>) {
    // (name, canonical input) → the latest completed call
    let mut latest: HashMap<(String, String), usize> = HashMap::new();
    let canonical = |input: &ToolInput| match input {
        ToolInput::Freeform(s) => s.clone(),
        other => other.to_object().to_string(),
    };
    let input_of = |ci: usize| {
        let c = &pairing.calls[ci];
        match &messages[c.at.0].blocks[c.at.1].body {
            Body::ToolUse { input, .. } => Some(input),
            _ => None,
        }
    };
    for (ci, c) in pairing.calls.iter().enumerate() {
        if c.result.is_some() && read_only.contains(c.name) {
            if let Some(input) = input_of(ci) {
                latest.insert((c.name.to_owned(), canonical(input)), ci);
            }
        }
    }
    let mut replace: HashMap<(usize, usize), Block> = HashMap::new();
    let mut stubbed = Vec::new();
    for (ci, c) in pairing.calls.iter().enumerate() {
        let (Some(at), Some(input)) = (c.result, input_of(ci)) else {
            continue;
        };
        if !read_only.contains(c.name) || protected.messages.contains(&at.0) {
            continue;
        }
        let later = latest[&(c.name.to_owned(), canonical(input))];
        if later == ci {
            continue;
        }
        let Some((block, tool_use_id, is_error)) = live_result(messages, at) else {
            continue;
        };
        let text = format!(
            "[superseded: {} was called again later (call {}); its latest result is the current one]",
            describe_call(c.name, input),
            pairing.calls[later].id
        );
        let before = tokens::count_block(Encoding::Heuristic, block);
        let new = with_text(block, tool_use_id, is_error, text);
        let after = tokens::count_block(Encoding::Heuristic, &new);
        if after >= before {
            continue;
        }
        stubbed.push(Cleared {
            index: at.0,
            tool_use_id: Cow::Borrowed(c.id),
            tool_name: Cow::Borrowed(c.name),
            tokens_before: before,
            tokens_after: after,
            // Counted with the heuristic, whatever the conversation's encoding.
            after_exact: false,
        });
        replace.insert(at, new);
    }
    // Only the messages holding a stubbed result are rebuilt; the rest are shared.
    let mut changed: HashMap<usize, Message> = HashMap::new();
    for ((mi, bi), block) in replace {
        let m = changed.entry(mi).or_insert_with(|| messages[mi].clone());
        Arc::make_mut(&mut m.blocks)[bi] = block;
    }
    let out = apply(messages, changed.into_iter().collect());
    (out, stubbed)
}

#[cfg(test)]
mod tests {
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
    fn exact_after_counts_are_the_new_messages_counts() {
        use crate::compact::select::protected;
        use crate::compact::testing::chat;
        // Results small and large, so that some placeholders are counted and some bounded.
        let mut turns = vec![serde_json::json!({"role": "user", "content": "go"})];
        for k in 0..40 {
            let id = format!("call_{k}");
            turns.push(serde_json::json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": id, "type": "function", "function": {"name": "read_file",
                 "arguments": format!("{{\"path\": \"src/m{k}.py\"}}")}}]}));
            turns.push(serde_json::json!({"role": "tool", "tool_call_id": id,
                                          "content": "word ".repeat(k * k)}));
        }
        let messages = chat(serde_json::Value::Array(turns));
        for enc in [
            Encoding::O200k,
            Encoding::Cl100k,
            Encoding::Heuristic,
            Encoding::Approximate,
        ] {
            let counts = tokens::count_messages(enc, &messages);
            let pairing = Pairing::of(&messages);
            let protected = protected(&messages, &pairing, 4, 1, &BTreeSet::new());
            let options = ClearOptions::default();
            let (changed, report) = plan_clear_counted(&messages, Some(&counts), &pairing, &protected, enc, &options);
            assert!(report.cleared.iter().any(|c| c.after_exact));
            assert!(report.cleared.iter().any(|c| !c.after_exact));
            for (c, (i, m)) in report.cleared.iter().zip(&changed) {
                assert_eq!(c.index, *i);
                let recount = tokens::count_message(enc, m);
                if c.after_exact {
                    assert_eq!(tokens::MessageTokens::single_result(c.tokens_after), recount);
                } else {
                    assert!(c.tokens_after >= recount.tools[0].tokens);
                }
            }
            // Asked to, the plan counts every placeholder, and clears the same results.
            let counting = ClearOptions {
                count_placeholders: true,
                ..ClearOptions::default()
            };
            let (exact, exact_report) =
                plan_clear_counted(&messages, Some(&counts), &pairing, &protected, enc, &counting);
            assert_eq!(exact, changed);
            assert_eq!(exact_report.cleared.len(), report.cleared.len());
            for (c, (_, m)) in exact_report.cleared.iter().zip(&exact) {
                assert!(c.after_exact);
                assert_eq!(
                    tokens::MessageTokens::single_result(c.tokens_after),
                    tokens::count_message(enc, m)
                );
            }
        }
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
        for enc in [Encoding::O200k, Encoding::Cl100k, Encoding::Heuristic] {
            let mut memo = Placeholders::default();
            for (name, args) in &args_texts {
                let d = memo.describe_arguments(name, args);
                for _ in 0..3 {
                    let n = numbers[next() % numbers.len()];
                    let id = ids[next() % ids.len()];
                    let mut text = String::new();
                    memo.write(d, n, id, &mut text);
                    assert_eq!(memo.count(d, n, id, enc), enc.count(&text), "{enc:?}: {text:?}");
                }
            }
        }
    }

    #[test]
    fn apply_replaces_by_position_in_any_order() {
        let m = |t: &str| Message::text(Role::User, t);
        let messages = vec![m("a"), m("b"), m("c")];
        let out = apply(&messages, vec![(2, m("x")), (0, m("y")), (2, m("z"))]);
        assert_eq!(out, vec![m("y"), m("b"), m("z")]);
        assert_eq!(apply(&messages, Vec::new()), messages);
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

    #[test]
    fn reports_borrow_and_copy_the_same_values() {
        let cleared = Cleared {
            index: 3,
            tool_use_id: Cow::Borrowed("call_1"),
            tool_name: Cow::Borrowed("read_file"),
            tokens_before: 120,
            tokens_after: 20,
            after_exact: true,
        };
        let report = ClearReport {
            cleared: vec![cleared.clone()],
            inputs_cleared: vec![1],
            thinking_dropped: vec![2],
            tokens_freed: 100,
            skipped_below_minimum: false,
        };
        let owned = report.clone().into_owned();
        assert_eq!(owned, report);
        assert!(matches!(owned.cleared[0].tool_use_id, Cow::Owned(_)));
        assert!(matches!(owned.cleared[0].tool_name, Cow::Owned(_)));
        assert_eq!(cleared.into_owned().tool_name, "read_file");
    }

    #[test]
    fn copies_extra_fields() {
        assert!(copy_extra(&Extra::new()).is_empty());
        let mut extra = Extra::new();
        extra.insert("cache_control".into(), serde_json::json!({"type": "ephemeral"}));
        extra.insert("a".into(), serde_json::json!(1));
        let copy = copy_extra(&extra);
        assert_eq!(copy, extra);
        assert_eq!(copy.keys().collect::<Vec<_>>(), ["cache_control", "a"]);
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
                inputs.push(ToolInput::Json(serde_json::json!({ "a": t.clone(), "b": {"c": t} })));
            }
        }
        inputs.push(ToolInput::Json(serde_json::json!([1, "two"])));
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

/// One tool result cut to its budget.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Budgeted {
    pub index: usize,
    pub tool_use_id: String,
    pub tool_name: String,
    pub chars_before: usize,
    pub chars_after: usize,
}

/// Cut every text tool result over its budget (`limit_for(tool name)` chars) to head + marker +
/// tail, the marker naming the call id as the recall id when `recall_ids` (the caller keeps the
/// original: a session log, a result store) or else saying the full text is not stored.
/// Results already cut or cleared are left alone. Returns the changed messages and what was cut.
pub fn plan_result_budgets(
    messages: &[Message],
    pairing: &Pairing,
    limit_for: impl Fn(&str) -> usize,
    strategy: crate::budget::Strategy,
    recall_ids: bool,
) -> (Vec<(usize, Message)>, Vec<Budgeted>) {
    let mut changed: HashMap<usize, Message> = HashMap::new();
    let mut report = Vec::new();
    for c in &pairing.calls {
        let Some(at) = c.result else { continue };
        let limit = limit_for(c.name);
        let Body::ToolResult {
            content: ResultContent::Text(text),
            ..
        } = &messages[at.0].blocks[at.1].body
        else {
            continue;
        };
        if text.len() <= limit
            || text.chars().count() <= limit
            || text.contains("\n[... ")
                && (text.contains(" omitted; full text: recall(id=")
                    || text.contains(" omitted; the full text is not stored"))
        {
            continue;
        }
        let options = crate::budget::Options {
            retrieval: crate::budget::Retrieval {
                recall_id: recall_ids.then(|| c.id.to_owned()),
                path: None,
                unstored: !recall_ids,
            },
            count_omitted_tokens: false,
        };
        let Ok(cut) = crate::budget::truncate(text, limit, crate::budget::Unit::Chars, strategy, &options) else {
            continue;
        };
        if !cut.truncated {
            continue;
        }
        report.push(Budgeted {
            index: at.0,
            tool_use_id: c.id.to_owned(),
            tool_name: c.name.to_owned(),
            chars_before: cut.original.chars,
            chars_after: cut.text.chars().count(),
        });
        let message = changed.entry(at.0).or_insert_with(|| messages[at.0].clone());
        if let Body::ToolResult { content, .. } = &mut Arc::make_mut(&mut message.blocks)[at.1].body {
            *content = ResultContent::Text(cut.text);
        }
    }
    let mut changed: Vec<(usize, Message)> = changed.into_iter().collect();
    changed.sort_by_key(|(i, _)| *i);
    (changed, report)
}
