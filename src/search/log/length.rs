//! A log record's searchable text, or only its length, read straight from its raw JSON: one pass
//! over the bytes, strings crossed eight bytes at a time to their next quote, backslash or
//! control character, escapes decoded, no tree and no copy but the text's own. The length is for
//! the records a regular expression's prefilter rules out (BM25 still needs each one's length);
//! the text for the records that are searched.
//!
//! It answers only for what it reads with certainty: a record of JSON objects, arrays, strings,
//! `true`/`false`/`null` and plain integers (no fraction, no exponent, at most 18 digits, not
//! `-0`), with no control character anywhere, no escape in a key, no lone surrogate escape, and
//! no deeper than [`MAX_DEPTH`]. Anything else (a float, a huge number, a torn or malformed line)
//! is left to the parser (`text::record_text_len`, `text::record_text_into`), which is the
//! reference: where this answers, it answers what the parser does.

use super::text::SKIP_KEYS;

/// Deeper nesting is left to the parser (which refuses nesting over 128).
const MAX_DEPTH: usize = 64;

/// The most keys of text values open at once (in the objects being read, outer ones included); a
/// record with more is left to the parser.
const MAX_KEYS: usize = 24;

/// The length of `record_text(raw)` when this scanner is certain of it (see the module); None:
/// not known, the caller parses the record.
pub(super) fn quick_len(raw: &str) -> Option<usize> {
    let mut len = Length::default();
    scan(raw, &mut len).then_some(len.len)
}

/// [`quick_len`] of a record that holds no `\u` escape (in any string, text or not); None also
/// when it holds one. A record without one holds a literal of plain characters in its text only
/// where its raw bytes hold it (see `raw`): what a regular expression's search of a whole buffer
/// needs to know of a line its literals were not found in (instead of a search for `\u` of
/// every line's bytes).
///
/// Read from the line's bytes: None also when they are not UTF-8 (checked here, string by
/// string, only where a string holds a byte that is not ASCII; no check of the whole line first).
pub(super) fn quick_len_plain(raw: &[u8]) -> Option<usize> {
    let mut len = Length::default();
    (scan_bytes(raw, &mut len) && !len.unicode).then_some(len.len)
}

/// `record_text(raw)` into `out` (cleared first) when this scanner is certain of it (see the
/// module); false: not known (`out` holds a part of the text), the caller parses the record.
pub(super) fn quick_text(raw: &str, out: &mut String) -> bool {
    out.clear();
    scan(raw, out)
}

fn scan(raw: &str, out: &mut impl Out) -> bool {
    run(raw, raw.as_bytes(), true, out)
}

/// [`scan`] of a line's bytes, for an out that takes pieces as their places ([`Out::RAW`]): false
/// also when they are not UTF-8. A record the scanner reads has no byte that is not ASCII outside
/// its strings (keys included), so it is UTF-8 when each of its strings is: only a string that
/// holds such a byte is checked (the whole line was checked before, a tenth of a search).
fn scan_bytes<O: Out>(raw: &[u8], out: &mut O) -> bool {
    O::RAW && run("", raw, false, out)
}

fn run(s: &str, b: &[u8], utf8: bool, out: &mut impl Out) -> bool {
    let mut s = Scanner {
        s,
        b,
        utf8,
        i: 0,
        out,
        keys: [(0, 0); MAX_KEYS],
        open_keys: 0,
    };
    s.record().is_some() && {
        s.skip_spaces();
        s.i == s.b.len()
    }
}

/// Where the text goes: pieces (strings, numbers) joined by line breaks, as `text::Sink` joins
/// them.
trait Out {
    /// Whether pieces are given as their places in the raw bytes ([`raw`](Self::raw)), not
    /// decoded.
    const RAW: bool = false;
    /// A piece starts (after a line break if anything came before).
    fn start(&mut self);
    fn run(&mut self, text: &str);
    fn char(&mut self, c: char);
    /// (With [`RAW`](Self::RAW).) The piece is the raw bytes `from..to`, its escapes decoded:
    /// `less` bytes fewer.
    fn raw(&mut self, from: usize, to: usize, less: usize) {
        let _ = (from, to, less);
    }
    /// (With [`RAW`](Self::RAW).) The next piece given holds a `\u` escape.
    fn decoded(&mut self) {}
    /// (With [`RAW`](Self::RAW).) A string holds a `\u` escape (a piece of the text or not).
    fn unicode(&mut self) {}
}

/// The text as its length and the places of its pieces in the raw bytes, for counting a query's
/// plain words there: exact only where no piece holds a `\u` escape (which can write any
/// character).
#[derive(Default)]
pub(super) struct Pieces {
    pub(super) len: usize,
    /// Byte ranges of the raw record, in order: the characters of a string (between its quotes),
    /// the digits of a number.
    pub(super) spans: Vec<(usize, usize)>,
    exact: bool,
}

impl Out for Pieces {
    const RAW: bool = true;
    fn start(&mut self) {
        if self.len > 0 {
            self.len += 1;
        }
    }
    fn run(&mut self, text: &str) {
        self.len += text.len();
    }
    fn char(&mut self, c: char) {
        self.len += c.len_utf8();
    }
    fn raw(&mut self, from: usize, to: usize, less: usize) {
        self.len += to - from - less;
        self.spans.push((from, to));
    }
    fn decoded(&mut self) {
        self.exact = false;
    }
}

/// The length of `record_text(raw)` and its pieces' places in `raw` (see [`Pieces`]) when this
/// scanner is certain of them and no piece holds a `\u` escape; false: not known (`out` holds a
/// part).
///
/// Read from the line's bytes: false also when they are not UTF-8 (see [`quick_len_plain`]).
pub(super) fn quick_pieces(raw: &[u8], out: &mut Pieces) -> bool {
    out.len = 0;
    out.spans.clear();
    out.exact = true;
    scan_bytes(raw, out) && out.exact
}

/// Only the text's length, and whether a string held a `\u` escape.
#[derive(Default)]
struct Length {
    len: usize,
    unicode: bool,
}

impl Out for Length {
    const RAW: bool = true;
    fn start(&mut self) {
        if self.len > 0 {
            self.len += 1;
        }
    }
    fn run(&mut self, text: &str) {
        self.len += text.len();
    }
    fn char(&mut self, c: char) {
        self.len += c.len_utf8();
    }
    fn raw(&mut self, from: usize, to: usize, less: usize) {
        self.len += to - from - less;
    }
    fn unicode(&mut self) {
        self.unicode = true;
    }
}

impl Out for String {
    fn start(&mut self) {
        if !self.is_empty() {
            self.push('\n');
        }
    }
    fn run(&mut self, text: &str) {
        self.push_str(text);
    }
    fn char(&mut self, c: char) {
        self.push(c);
    }
}

/// The first byte at or after `i` that is a quote, a backslash or a control character (what ends
/// a run of a JSON string's characters), eight bytes at a time: a string's runs are short (a
/// `\n` every few dozen bytes in a tool's output), too short for a vector search's setup.
fn next_special(b: &[u8], mut i: usize) -> Option<usize> {
    // Sixteen bytes a step while none is found (most runs are longer than eight), then eight.
    while let Some(chunk) = b.get(i..i + 16) {
        let (low, high) = (specials(&chunk[..8]), specials(&chunk[8..]));
        if low != 0 {
            return Some(i + low.trailing_zeros() as usize / 8);
        }
        if high != 0 {
            return Some(i + 8 + high.trailing_zeros() as usize / 8);
        }
        i += 16;
    }
    while let Some(chunk) = b.get(i..i + 8) {
        let found = specials(chunk);
        if found != 0 {
            return Some(i + (found.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    b.get(i..)?
        .iter()
        .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
        .map(|at| i + at)
}

/// The high bits of the bytes of `chunk` (eight) that are a quote, a backslash or a control
/// character: only the lowest one set is certain (a borrow can set the ones above it), and only
/// the lowest is used.
fn specials(chunk: &[u8]) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let w = u64::from_le_bytes(chunk.try_into().unwrap_or_default());
    let quote = w ^ (ONES * u64::from(b'"'));
    let backslash = w ^ (ONES * u64::from(b'\\'));
    let zero = |x: u64, below: u64| x.wrapping_sub(ONES * below) & !x;
    (zero(quote, 1) | zero(backslash, 1) | zero(w, 0x20)) & HIGH
}

/// Bytes of a string's characters [`plain_block`] crosses at once.
const BLOCK: usize = 32;

/// The `BLOCK` bytes of a string's characters at `i` (a place outside an escape), crossed at once
/// when they are plain: no quote that ends the string, no control character, and only escapes of
/// one character other than `\\` and `\u` (`\"`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`, each
/// checked): the number of escapes (each one byte longer than its character) and the place after
/// the block (after the escaped character when the block ends with a backslash). None: not plain
/// (the caller goes a special byte at a time), or fewer than `BLOCK + 1` bytes left.
///
/// Written as one pass over fixed-size arrays that the compiler turns into vector instructions
/// (SSE2: every byte compared at once): the string scanner's time went to finding the next
/// special byte one at a time (a tool's output has an escape every few dozen bytes).
#[allow(clippy::needless_bitwise_bool)] // no branch per byte: what lets it compile to vector compares
fn plain_block(bytes: &[u8], at: usize) -> Option<(usize, usize)> {
    let block: &[u8; BLOCK + 1] = bytes.get(at..=at + BLOCK)?.try_into().ok()?;
    let (mut quotes, mut escaped_quotes, mut backslashes, mut bad) = (0u8, 0u8, 0u8, 0u8);
    for k in 0..BLOCK {
        let (byte, after) = (block[k], block[k + 1]);
        let backslash = byte == b'\\';
        let simple = (after == b'"')
            | (after == b'/')
            | (after == b'b')
            | (after == b'f')
            | (after == b'n')
            | (after == b'r')
            | (after == b't');
        quotes += u8::from(byte == b'"');
        escaped_quotes += u8::from(backslash & (after == b'"'));
        backslashes += u8::from(backslash);
        bad |= u8::from((byte < 0x20) | (backslash & !simple));
    }
    // With no `\\` in the block every backslash starts an escape (and `at`, outside one, does
    // not follow one): a quote is escaped exactly when a backslash precedes it. The last byte's
    // escape may be of the quote after the block, which is not one of the block's quotes.
    let last_escapes = block[BLOCK - 1] == b'\\';
    if bad != 0 || quotes + u8::from(last_escapes && block[BLOCK] == b'"') != escaped_quotes {
        return None;
    }
    Some((usize::from(backslashes), at + BLOCK + usize::from(last_escapes)))
}

/// Bytes of a string [`string_end`] looks at a step.
const CHUNK: usize = 64;

/// Where a string ends, as [`string_end`] finds it.
#[derive(Debug, PartialEq)]
enum End {
    /// At the quote `quote`, its escapes (none of them `\u`) `less` bytes longer than their
    /// characters; `not_ascii`: from its first byte that is not ASCII to its last, if it has one.
    Closed {
        quote: usize,
        less: usize,
        not_ascii: Option<std::ops::Range<usize>>,
    },
    /// It holds a `\u` escape (before its end): read it another way.
    Unicode,
}

/// What an escape's letter is: 1 for a letter of an escape of one character (`\"`, `\\\\`,
/// `\/`, `\b`, `\f`, `\n`, `\r`, `\t`), 2 for the `u` of a `\u` escape, 0 for one that makes
/// no escape.
const ESCAPE_LETTER: [u8; 256] = {
    let mut table = [0u8; 256];
    let letters = b"\"\\/bfnrt";
    let mut k = 0;
    while k < letters.len() {
        table[letters[k] as usize] = 1;
        k += 1;
    }
    table[b'u' as usize] = 2;
    table
};

/// The end of the string whose characters start at `from` (after its opening quote), crossing
/// [`CHUNK`] bytes a step: the places of a chunk's backslashes, quotes and control characters
/// are bit masks ([`masks`]), the characters escaped are told from the backslashes by the
/// parity of their runs (simdjson's `find_escaped_branchless`, carried from chunk to chunk), and
/// the first quote not escaped ends the string; only the escapes' letters are looked at one by
/// one. None where the parser must tell: a control character, an escape that is not one, no end
/// on the line.
///
/// A tool's output has an escape or a quote every dozen bytes: the scanner stopped at each one
/// outside 32-byte plain blocks (and a block was not plain past a `\\\\` or a quote).
fn string_end(b: &[u8], from: usize) -> Option<End> {
    const EVEN: u64 = 0x5555_5555_5555_5555;
    let (mut at, mut less, mut carry) = (from, 0usize, 0u64);
    // The first and the last byte that is not ASCII, if any.
    let mut high: Option<(usize, usize)> = None;
    let mut padded = [0u8; CHUNK];
    loop {
        // The last bytes of the line are padded with control characters: a string that does not
        // end before them is left to the parser, as one that does not end on the line.
        let chunk: &[u8; CHUNK] = if let Some(chunk) = b.get(at..at + CHUNK) {
            chunk.try_into().ok()?
        } else {
            let rest = b.get(at..)?;
            padded[..rest.len()].copy_from_slice(rest);
            &padded
        };
        let (backslashes, quotes, controls, not_ascii) = masks(chunk);
        // The characters escaped: after an odd run of backslashes (a run that starts on an odd
        // place overflows the add into its end when it is even...: simdjson's arithmetic).
        let backslashes = backslashes & !carry;
        let follows = (backslashes << 1) | carry;
        let odd_starts = backslashes & !EVEN & !follows;
        let (even_starts, overflow) = odd_starts.overflowing_add(backslashes);
        carry = u64::from(overflow);
        let escaped = (EVEN ^ (even_starts << 1)) & follows;
        let ends = quotes & !escaped;
        // The bytes before the first quote that ends the string (all of them if none does).
        let inside = if ends == 0 {
            u64::MAX
        } else {
            (ends & ends.wrapping_neg()) - 1
        };
        if controls & inside != 0 {
            return None;
        }
        let not_ascii = not_ascii & inside;
        if not_ascii != 0 {
            let last = at + 63 - not_ascii.leading_zeros() as usize;
            let first = high.map_or(at + not_ascii.trailing_zeros() as usize, |h| h.0);
            high = Some((first, last));
        }
        let mut letters = escaped & inside;
        less += letters.count_ones() as usize;
        while letters != 0 {
            match ESCAPE_LETTER[usize::from(chunk[letters.trailing_zeros() as usize])] {
                1 => {}
                2 => return Some(End::Unicode),
                _ => return None,
            }
            letters &= letters - 1;
        }
        if ends != 0 {
            return Some(End::Closed {
                quote: at + ends.trailing_zeros() as usize,
                less,
                not_ascii: high.map(|(first, last)| first..last + 1),
            });
        }
        at += CHUNK;
    }
}

/// The masks of a chunk's backslashes, quotes, control characters and bytes that are not ASCII
/// (bit k: byte k): SSE2 compares of sixteen bytes at once and their movemask, through
/// `safe_arch` (no `unsafe`).
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
fn masks(chunk: &[u8; CHUNK]) -> (u64, u64, u64, u64) {
    use safe_arch::{cmp_eq_mask_i8_m128i, load_unaligned_m128i, max_u8_m128i, move_mask_i8_m128i, set_splat_i8_m128i};
    // `\`, `"` and the last control character (all below 0x80: the same as an i8).
    let backslash = set_splat_i8_m128i(0x5c);
    let quote = set_splat_i8_m128i(0x22);
    let control = set_splat_i8_m128i(0x1f);
    let (mut backslashes, mut quotes, mut controls, mut high) = (0u64, 0u64, 0u64, 0u64);
    for k in 0..CHUNK / 16 {
        let v = load_unaligned_m128i(chunk[16 * k..16 * (k + 1)].try_into().unwrap_or(&[0; 16]));
        let bits = |m| u64::from(move_mask_i8_m128i(m) as u16) << (16 * k);
        backslashes |= bits(cmp_eq_mask_i8_m128i(v, backslash));
        quotes |= bits(cmp_eq_mask_i8_m128i(v, quote));
        // A byte below 0x20: the larger of it and 0x1f is 0x1f.
        controls |= bits(cmp_eq_mask_i8_m128i(max_u8_m128i(v, control), control));
        high |= bits(v);
    }
    (backslashes, quotes, controls, high)
}

/// [`masks`] a byte at a time: elsewhere, and the reference of the tests.
#[cfg_attr(all(target_arch = "x86_64", target_feature = "sse2"), cfg(test))]
fn masks_by_bytes(chunk: &[u8; CHUNK]) -> (u64, u64, u64, u64) {
    let (mut backslashes, mut quotes, mut controls, mut high) = (0u64, 0u64, 0u64, 0u64);
    for (k, &c) in chunk.iter().enumerate() {
        backslashes |= u64::from(c == b'\\') << k;
        quotes |= u64::from(c == b'"') << k;
        controls |= u64::from(c < 0x20) << k;
        high |= u64::from(c >= 0x80) << k;
    }
    (backslashes, quotes, controls, high)
}

#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
fn masks(chunk: &[u8; CHUNK]) -> (u64, u64, u64, u64) {
    masks_by_bytes(chunk)
}

/// What a value's strings and numbers count for: the text, or nothing (a skipped key's value,
/// a record's field other than `data`).
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Text,
    Ignore,
}

struct Scanner<'a, O> {
    /// The record as text (for an out that is not [`Out::RAW`]; empty for one that is).
    s: &'a str,
    b: &'a [u8],
    /// Whether `b` is known to be UTF-8 (else each string that holds a byte that is not ASCII is
    /// checked, and one that is not UTF-8 ends the scan: not known).
    utf8: bool,
    i: usize,
    out: &'a mut O,
    /// The keys (places in `b`) read so far in the objects being read, whose values are text:
    /// a key met twice in one object is left to the parser (the last value is the one that
    /// counts, as serde_json's and Python's `json.loads` read it).
    keys: [(u32, u32); MAX_KEYS],
    open_keys: usize,
}

impl<O: Out> Scanner<'_, O> {
    fn skip_spaces(&mut self) {
        // A control character outside a string is left to the parser: JSON's whitespace here is
        // the space.
        while self.b.get(self.i) == Some(&b' ') {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_spaces();
        self.b.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }

    /// The top-level object: only `data` holds text.
    fn record(&mut self) -> Option<()> {
        self.members(|key| if key == b"data" { Mode::Text } else { Mode::Ignore }, 0)
    }

    /// An object's members (at its `{`), each value read in the mode `mode_of` its key gives.
    fn members(&mut self, mode_of: impl Fn(&[u8]) -> Mode, depth: usize) -> Option<()> {
        self.eat(b'{')?;
        if self.peek()? == b'}' {
            self.i += 1;
            return Some(());
        }
        let base = self.open_keys;
        loop {
            self.eat(b'"')?;
            let end = next_special(self.b, self.i)?;
            if self.b[end] != b'"' || !self.utf8_at(self.i, end) {
                return None;
            }
            let mode = mode_of(&self.b[self.i..end]);
            if mode == Mode::Text {
                self.new_key(base, self.i, end)?;
            }
            self.i = end + 1;
            self.eat(b':')?;
            self.value(mode, depth + 1)?;
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    self.open_keys = base;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// Note the key `from..to` of the object whose keys start at `base` in `keys`; None when the
    /// object has it already (or too many keys are open).
    fn new_key(&mut self, base: usize, from: usize, to: usize) -> Option<()> {
        let key = &self.b[from..to];
        let seen = self.keys[base..self.open_keys]
            .iter()
            .any(|&(f, t)| self.b[f as usize..t as usize] == *key);
        if seen || self.open_keys == MAX_KEYS {
            return None;
        }
        self.keys[self.open_keys] = (u32::try_from(from).ok()?, u32::try_from(to).ok()?);
        self.open_keys += 1;
        Some(())
    }

    fn value(&mut self, mode: Mode, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'"' => {
                self.i += 1;
                self.string(mode)?;
            }
            b'{' => {
                let skip = |key: &[u8]| SKIP_KEYS.iter().any(|k| k.as_bytes() == key);
                self.members(|key| if skip(key) { Mode::Ignore } else { mode }, depth)?;
            }
            b'[' => self.array(mode, depth)?,
            b't' => self.literal(b"true")?,
            b'f' => self.literal(b"false")?,
            b'n' => self.literal(b"null")?,
            _ => {
                let start = self.i;
                self.integer()?;
                if mode == Mode::Text {
                    self.out.start();
                    if O::RAW {
                        self.out.raw(start, self.i, 0);
                    } else {
                        self.out.run(&self.s[start..self.i]);
                    }
                }
            }
        }
        Some(())
    }

    fn array(&mut self, mode: Mode, depth: usize) -> Option<()> {
        self.i += 1;
        if self.peek()? == b']' {
            self.i += 1;
            return Some(());
        }
        loop {
            self.value(mode, depth + 1)?;
            match self.peek()? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        self.b[self.i..].starts_with(word).then(|| self.i += word.len())
    }

    /// A plain integer (the parser writes it back with the same digits: no leading zero, no `-0`,
    /// few enough digits to be an i64 or u64).
    fn integer(&mut self) -> Option<()> {
        let negative = self.b[self.i] == b'-';
        if negative {
            self.i += 1;
        }
        let digits = self.b[self.i..].iter().take_while(|c| c.is_ascii_digit()).count();
        let first = *self.b.get(self.i)?;
        if digits == 0 || digits > 18 || (first == b'0' && (digits > 1 || negative)) {
            return None;
        }
        self.i += digits;
        if matches!(self.b.get(self.i), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        Some(())
    }

    /// A string (after its opening quote; ends after its closing one), decoded into the text in
    /// `Text` mode.
    fn string(&mut self, mode: Mode) -> Option<()> {
        let text = mode == Mode::Text;
        if O::RAW {
            return self.string_in_place(text);
        }
        if text {
            self.out.start();
        }
        loop {
            let at = next_special(self.b, self.i)?;
            if text {
                // A quote or a backslash is ASCII: `at` is a character's boundary.
                self.out.run(&self.s[self.i..at]);
            }
            self.i = at + 1;
            match self.b[at] {
                b'"' => return Some(()),
                b'\\' => {}
                _ => return None,
            }
            let c = match *self.b.get(self.i)? {
                b'"' => '"',
                b'\\' => '\\',
                b'/' => '/',
                b'b' => '\u{8}',
                b'f' => '\u{c}',
                b'n' => '\n',
                b'r' => '\r',
                b't' => '\t',
                b'u' => {
                    let c = self.unicode_escape()?;
                    if text {
                        self.out.char(c);
                    }
                    continue;
                }
                _ => return None,
            };
            self.i += 1;
            if text {
                self.out.char(c);
            }
        }
    }

    /// [`string`](Self::string) for an out that takes pieces as their places
    /// ([`Out::RAW`]): the string's characters are not copied or decoded, only its escapes
    /// counted. Crossed [`CHUNK`] bytes a step by [`string_end`]; a string with a `\u` escape
    /// is read again by [`string_by_specials`](Self::string_by_specials).
    fn string_in_place(&mut self, text: bool) -> Option<()> {
        let from = self.i;
        match string_end(self.b, from)? {
            End::Closed { quote, less, not_ascii } => {
                // The string is UTF-8 when the bytes from its first that is not ASCII to its last
                // are (around them it is ASCII).
                if let Some(range) = not_ascii
                    && !self.utf8_at(range.start, range.end)
                {
                    return None;
                }
                self.i = quote + 1;
                if text {
                    self.out.start();
                    self.out.raw(from, quote, less);
                }
                Some(())
            }
            End::Unicode => {
                self.string_by_specials(text)?;
                self.utf8_at(from, self.i - 1).then_some(())
            }
        }
    }

    /// Whether the bytes `from..to` are UTF-8, where the record is not known to be.
    fn utf8_at(&self, from: usize, to: usize) -> bool {
        let bytes = &self.b[from..to];
        self.utf8 || bytes.is_ascii() || std::str::from_utf8(bytes).is_ok()
    }

    /// [`string_in_place`](Self::string_in_place) a special byte at a time (crossing plain
    /// blocks), reading each `\u` escape for its character's length.
    fn string_by_specials(&mut self, text: bool) -> Option<()> {
        let from = self.i;
        let mut less = 0;
        // Blocks are tried once the string has shown an escape (a string without one ends at the
        // first special byte: a key, a short value), and again past a block that was not plain.
        let mut blocks_from = None;
        loop {
            if let Some(start) = blocks_from
                && self.i >= start
            {
                while let Some((escapes, next)) = plain_block(self.b, self.i) {
                    less += escapes;
                    self.i = next;
                }
                blocks_from = Some(self.i + BLOCK);
            }
            let at = next_special(self.b, self.i)?;
            self.i = at + 1;
            match self.b[at] {
                b'"' => {
                    if text {
                        self.out.start();
                        self.out.raw(from, at, less);
                    }
                    return Some(());
                }
                b'\\' => {}
                _ => return None,
            }
            match *self.b.get(self.i)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {
                    self.i += 1;
                    less += 1;
                    blocks_from.get_or_insert(self.i);
                }
                b'u' => {
                    let escape = self.i - 1;
                    let c = self.unicode_escape()?;
                    less += self.i - escape - c.len_utf8();
                    self.out.unicode();
                    if text {
                        self.out.decoded();
                    }
                }
                _ => return None,
            }
        }
    }

    /// A `\u` escape (at its `u`; a surrogate pair is one character); None for a lone surrogate.
    fn unicode_escape(&mut self) -> Option<char> {
        let unit = self.hex4(self.i + 1)?;
        self.i += 5;
        match unit {
            0xD800..=0xDBFF => {
                if !self.b[self.i..].starts_with(b"\\u") {
                    return None;
                }
                let low = self.hex4(self.i + 2)?;
                self.i += 6;
                if !(0xDC00..=0xDFFF).contains(&low) {
                    return None;
                }
                char::from_u32(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))
            }
            _ => char::from_u32(unit),
        }
    }

    fn hex4(&self, at: usize) -> Option<u32> {
        let digits = self.b.get(at..at + 4)?;
        digits
            .iter()
            .try_fold(0u32, |acc, &c| Some(acc * 16 + (c as char).to_digit(16)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::testing::xorshift;
    use crate::search::log::text::parsed_text as record_text;

    #[test]
    fn answers_for_plain_records_and_leaves_the_rest_to_the_parser() {
        for (raw, expected) in [
            (
                r#"{"type":"message","index":3,"data":[{"role":"user","content":"a\nb"}]}"#,
                Some(3),
            ),
            (
                r#"{"data":["", "x", "", 12, -3, true, null, {"id":"skip","n":{"a":"b"}}]}"#,
                Some(10),
            ),
            (r#"{"data":"\u00e9\ud83d\ude00\u4e2d\/"}"#, Some(10)),
            (r#"{"data":"say \"hi\" C:\\x\nnext"}"#, Some(18)),
            // A duplicated key is left to the parser (its last value counts).
            (r#"{"data":"one","data":"two","other":["not", "text"]}"#, None),
            (r#"{"data":[{"content":"one","id":"x","content":"two"}]}"#, None),
            (
                r#"{"data":[{"content":"one","id":"x","id":"y"}],"type":"a","type":"b"}"#,
                Some(3),
            ),
            (r#"{"data":[{"a":"one","b":{"a":"two"}},{"a":"three"}]}"#, Some(13)),
            (r#"{"data":[]}  "#, Some(0)),
            (r#"{"data":1.5}"#, None),
            (r#"{"data":-0}"#, None),
            (r#"{"data":01}"#, None),
            (r#"{"data":1e3}"#, None),
            (r#"{"data":"\ud83d"}"#, None),
            (r#"{"data":"\q"}"#, None),
            (r#"{"d\u0061ta":"x"}"#, None),
            (r#"{"data":"torn"#, None),
            (r#"{"data":"x",}"#, None),
            (r#"{"data":"x"} y"#, None),
            ("{\"data\":\"tab\tinside\"}", None),
            (r#"["data"]"#, None),
        ] {
            assert_eq!(quick_len(raw), expected, "{raw}");
            let mut text = String::new();
            assert_eq!(quick_text(raw, &mut text), expected.is_some(), "{raw}");
            if let Some(n) = expected {
                assert_eq!(record_text(raw).map(|t| t.len()), Some(n), "{raw}");
                assert_eq!(record_text(raw), Some(text), "{raw}");
            }
        }
        let deep = format!(r#"{{"data":{}{}}}"#, "[".repeat(100), "]".repeat(100));
        assert_eq!(quick_len(&deep), None);
    }

    #[test]
    fn where_it_answers_the_parser_agrees() {
        let pieces: [&str; 30] = [
            r#""plain""#,
            r#""""#,
            r#""a\"b\\c\/d\b\f\n\r\t""#,
            r#""\u0041\u00e9\u4e2d\ud83d\ude00""#,
            r#""\ud83d""#,
            r#""\ude00x""#,
            r#""\u12g4""#,
            r#""\x""#,
            "\"caf\u{e9} \u{212A}\"",
            "\"tab\there\"",
            "0",
            "-12",
            "123456789012345678",
            "1234567890123456789",
            "-0",
            "01",
            "1.5",
            "2e3",
            "true",
            "false",
            "null",
            "nul",
            "{}",
            "[]",
            r#"{"id":"x","content":"y"}"#,
            r#"{"tool_call_id":"c1","n":7}"#,
            r#"{"k\u0069":"v"}"#,
            "[1,]",
            "{\"a\":1,}",
            " ",
        ];
        let mut rng = xorshift(0x5eed_0032_0000_0005);
        let mut next = move |n: usize| (rng() % n as u64) as usize;
        let mut answered = 0;
        for _ in 0..4000 {
            let mut data = String::from("[");
            for k in 0..next(6) {
                if k > 0 {
                    data.push(',');
                }
                let piece = pieces[next(pieces.len())];
                match next(3) {
                    0 => data.push_str(piece),
                    1 => data.extend([r#"{"content":"#, piece, "}"]),
                    _ => data.extend(["[", piece, ",", pieces[next(pieces.len())], "]"]),
                }
            }
            data.push(']');
            let mut raw = format!(r#"{{"type":"message","index":{},"data":{data}}}"#, next(1000));
            if next(10) == 0 {
                // A torn line: cut anywhere, at a character's boundary.
                let mut cut = raw.len() - next(8) - 1;
                while !raw.is_char_boundary(cut) {
                    cut -= 1;
                }
                raw.truncate(cut);
            }
            if next(10) == 0 {
                raw.push_str([" ", "\t", "x", "}"][next(4)]);
            }
            if let Some(n) = quick_len(&raw) {
                answered += 1;
                assert_eq!(record_text(&raw).map(|t| t.len()), Some(n), "{raw}");
            }
            let mut text = "left from the line before".to_owned();
            if quick_text(&raw, &mut text) {
                assert_eq!(record_text(&raw), Some(text), "{raw}");
            } else {
                assert_eq!(quick_len(&raw), None, "{raw}");
            }
        }
        // Both sides: most generated records answered, some left to the parser.
        assert!(answered > 400 && answered < 3900, "{answered}");
    }

    /// What [`plain_block`] answers, a byte at a time: the escapes of the block at `i` and the
    /// place after it, when it is plain.
    fn plain_block_reference(b: &[u8], i: usize) -> Option<(usize, usize)> {
        if b.len() < i + BLOCK + 1 {
            return None;
        }
        let (mut at, mut escapes) = (i, 0);
        while at < i + BLOCK {
            match b[at] {
                b'"' => return None,
                c if c < 0x20 => return None,
                b'\\' => {
                    if !matches!(b[at + 1], b'"' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') {
                        return None;
                    }
                    escapes += 1;
                    at += 2;
                }
                _ => at += 1,
            }
        }
        Some((escapes, at))
    }

    /// Records of long strings (escapes every few bytes, as a tool's output has them, with every
    /// kind of escape, quote and control character at every place of a block and across its end).
    fn long_string_records() -> Vec<Vec<u8>> {
        let pieces: [&[u8]; 22] = [
            b"plain text ",
            b"x",
            b"\\n",
            b"\\\"",
            b"\\\\",
            b"\\/",
            b"\\t\\r\\b\\f",
            b"\\u00e9",
            b"\\ud83d\\ude00",
            b"\\ud83d",
            b"\\q",
            b"\\\\\\\"",
            b"\\\\n",
            "caf\u{e9} \u{1F600}".as_bytes(),
            b"\t",
            b"\x01",
            b"\"",
            b"0123456789abcdef0123456789abcdef",
            b"\\n\\n\\n\\n",
            b"\\\"\\\"",
            b"  ",
            b"\\",
        ];
        let mut rng = xorshift(0x5eed_0039_0000_0005);
        let mut next = move |n: usize| (rng() % n as u64) as usize;
        let mut records = Vec::new();
        for _ in 0..3000 {
            let mut content = Vec::new();
            // Mostly escapes that keep a block plain, now and then anything.
            while content.len() < 40 + next(300) {
                let piece = if next(4) == 0 {
                    pieces[next(pieces.len())]
                } else {
                    pieces[next(7)]
                };
                content.extend_from_slice(piece);
            }
            let line = [
                &br#"{"type":"message","index":3,"data":[{"role":"tool","content":""#[..],
                &content,
                br#""},{"id":""#,
                &content[..content.len() / 2],
                br#""}]}"#,
            ]
            .concat();
            records.push(line);
        }
        records
    }

    #[test]
    fn masks_are_the_bytes_ones() {
        let mut rng = xorshift(0x5eed_0040_0000_0005);
        let specials = [b'"', b'\\', 0, 0x1f, 0x20, 0x7f, 0x80, 0x9f, 0xff, b'u'];
        for _ in 0..20_000 {
            let mut chunk = [0u8; CHUNK];
            for c in &mut chunk {
                let r = rng();
                *c = if r % 3 == 0 {
                    specials[(r >> 8) as usize % specials.len()]
                } else {
                    (r >> 16) as u8
                };
            }
            assert_eq!(masks(&chunk), masks_by_bytes(&chunk), "{chunk:?}");
        }
    }

    /// A string crossed a chunk at a time is read as it was a special byte at a time, from every
    /// place of every record (escapes, runs of backslashes, quotes and control characters at
    /// every place of a chunk and across its end, and at the end of the line).
    #[test]
    fn strings_crossed_in_chunks_read_as_a_special_byte_at_a_time() {
        let (mut closed, mut unicode) = (0, 0);
        for line in long_string_records() {
            for cut in [line.len(), line.len() - 7, line.len() / 2 + 3] {
                let b = &line[..cut];
                for from in 0..b.len() {
                    let run = |fast: bool| {
                        let mut out = Length::default();
                        let mut s = Scanner {
                            s: "",
                            b,
                            utf8: true,
                            i: from,
                            out: &mut out,
                            keys: [(0, 0); MAX_KEYS],
                            open_keys: 0,
                        };
                        let r = if fast {
                            s.string_in_place(true)
                        } else {
                            s.string_by_specials(true)
                        };
                        let i = s.i;
                        (r.map(|()| i), out.len, out.unicode)
                    };
                    // (Where neither answers, what was noted on the way does not count.)
                    let (fast, slow) = (run(true), run(false));
                    if fast.0.is_some() || slow.0.is_some() {
                        assert_eq!(fast, slow, "{from} {:?}", String::from_utf8_lossy(b));
                    }
                    match string_end(b, from) {
                        Some(End::Closed { .. }) => closed += 1,
                        Some(End::Unicode) => unicode += 1,
                        None => {}
                    }
                }
            }
        }
        assert!(closed > 100_000 && unicode > 10_000, "{closed} {unicode}");
    }

    /// Read from its bytes, a record is answered for exactly when it is read as text and its
    /// bytes are UTF-8 (whichever string, key or value, text or not, holds the bytes that are not).
    #[test]
    fn bytes_that_are_not_utf8_are_left_to_the_parser() {
        let (mut answered, mut refused) = (0, 0);
        let mut rng = xorshift(0x5eed_0040_0000_0007);
        for line in long_string_records() {
            let mut line = line;
            // A byte put anywhere (in a string, a key, between two values), or a character cut.
            match rng() % 4 {
                0 => {}
                1 => {
                    let at = (rng() as usize) % line.len();
                    line.insert(at, [0xff, 0xc3, 0x80, 0xe2][(rng() % 4) as usize]);
                }
                2 => {
                    let key = line.windows(4).position(|w| w == b"role").unwrap_or(0);
                    line.splice(key..key, "r\u{e9}".bytes());
                }
                _ => line.splice(10..10, [0xc3]).for_each(drop),
            }
            let text = std::str::from_utf8(&line).ok();
            let shown = String::from_utf8_lossy(&line).into_owned();
            let expected = text.and_then(quick_len_plain_of_text);
            assert_eq!(quick_len_plain(&line), expected, "{shown}");
            let mut found = Pieces::default();
            let read = quick_pieces(&line, &mut found);
            let mut of_text = Pieces::default();
            let expected = text.is_some_and(|t| {
                of_text.exact = true;
                scan(t, &mut of_text) && of_text.exact
            });
            assert_eq!(read, expected, "{shown}");
            if read {
                assert_eq!((found.len, &found.spans), (of_text.len, &of_text.spans), "{shown}");
                answered += 1;
            }
            refused += usize::from(text.is_none());
        }
        assert!(answered > 150 && refused > 500, "{answered} {refused}");
    }

    /// [`quick_len_plain`] of a record known to be UTF-8.
    fn quick_len_plain_of_text(raw: &str) -> Option<usize> {
        let mut len = Length::default();
        (scan(raw, &mut len) && !len.unicode).then_some(len.len)
    }

    /// A block's answer is the byte-at-a-time one, at every place of every record.
    #[test]
    fn blocks_of_long_strings_read_as_a_byte_at_a_time() {
        let mut plain = 0;
        for line in long_string_records() {
            for i in 0..line.len() {
                let block = plain_block(&line, i);
                assert_eq!(
                    block,
                    plain_block_reference(&line, i),
                    "{i} {:?}",
                    String::from_utf8_lossy(&line)
                );
                plain += usize::from(block.is_some());
            }
        }
        assert!(plain > 20_000, "{plain}");
    }

    /// Where the scanner reads a record of long strings (blocks crossed), its lengths and
    /// pieces are the parser's.
    #[test]
    fn long_strings_read_in_blocks_are_the_parsers() {
        let (mut answered, mut pieces_read) = (0, 0);
        let mut found = Pieces::default();
        for line in long_string_records() {
            let Ok(raw) = std::str::from_utf8(&line) else { continue };
            let parsed = record_text(raw);
            if let Some(len) = quick_len(raw) {
                answered += 1;
                assert_eq!(parsed.as_ref().map(String::len), Some(len), "{raw}");
            }
            // A `\u` escape, not a `u` after an escaped backslash (`\\u`).
            let (mut unicode, mut at) = (false, 0);
            while let Some(k) = raw[at..].find('\\') {
                unicode |= raw.as_bytes().get(at + k + 1) == Some(&b'u');
                at += k + 2;
            }
            assert_eq!(
                quick_len_plain(raw.as_bytes()),
                quick_len(raw).filter(|_| !unicode),
                "{raw}"
            );
            if quick_pieces(raw.as_bytes(), &mut found) {
                pieces_read += 1;
                let text = parsed.unwrap();
                assert_eq!(found.len, text.len(), "{raw}");
                let decoded: Vec<String> = found
                    .spans
                    .iter()
                    .map(|&(from, to)| serde_json::from_str(&format!("\"{}\"", &raw[from..to])).unwrap())
                    .collect();
                assert_eq!(decoded.join("\n"), text, "{raw}");
            }
        }
        assert!(answered > 300 && pieces_read > 300, "{answered} {pieces_read}");
    }
}
