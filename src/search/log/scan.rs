//! One pass over a log's records: each line classified (not a message, unreadable, a message
//! that cannot match, a message counted), a batch of lines at a time in parallel.

use rayon::prelude::*;
use serde_json::Value;

use super::BATCH_BYTES;
use super::length::{Pieces, quick_len_plain, quick_pieces};
use super::lines::{Blocks, Span};
use super::object::one_object;
use super::text::{record_text_into, record_text_len};
use crate::search::{Counted, Mark, Query, Stats};

enum Line {
    Other,
    /// A line that cannot be read as a record.
    Unreadable,
    /// A message that cannot match.
    Skipped,
    /// A message parsed and counted.
    Message(Counted),
}

/// A line of the log (without its line break), classified. The raw prefilter runs on the bytes
/// of a message record first: only a line that may match is decoded (lossily) and parsed (or,
/// where every record counts in the statistics, one that cannot match is parsed for its length).
///
/// `marks`: what the raw prefilter found searching the whole buffer (see [`Marks`]), None when it
/// did not search it. `buf` is a buffer for the text (reused from line to line: no allocation per
/// line).
fn classify(query: &Query, line: &[u8], marks: Option<Marks>, buf: &mut Buffers) -> Line {
    let raw = line.strip_suffix(b"\r").unwrap_or(line);
    // The log reads a line that is not UTF-8 as one it cannot read (it is not JSON), so it is no
    // message here either: neither searched nor numbered.
    if !decodes_as_the_log_does(raw) {
        return Line::Unreadable;
    }
    let message = raw.starts_with(br#"{"type":"message""#);
    if query.counts_every_record() {
        return classify_every(query, raw, message, marks, buf);
    }
    let verdict = match (message, marks) {
        (false, _) | (true, Some(Marks { escape: true, .. })) => None,
        (true, Some(Marks { literal: false, .. })) => Some(false),
        (true, Some(Marks { literal: true, .. })) if query.raw_marks_are_exact() => Some(true),
        (true, _) => query.may_match_raw_bytes(raw),
    };
    if verdict == Some(false) && !query.counts_every_record() {
        return cannot_match(raw);
    }
    // A line that holds one of the words, counted in its bytes where the scanner reads them
    // (it checks that they are UTF-8 string by string): what `classify_text` does with it,
    // without a check of the whole line first.
    if message
        && verdict == Some(true)
        && let Some(units) = query.raw_units()
        && quick_pieces(raw, &mut buf.pieces)
    {
        return Line::Message(count_raw(units, raw, &buf.pieces));
    }
    // Valid UTF-8 (the rule) is checked by the fast validator; only a line that is not is
    // decoded with replacement characters.
    match std::str::from_utf8(raw) {
        Ok(text) => classify_text(query, text, verdict, buf),
        Err(_) => classify_text(query, &String::from_utf8_lossy(raw), verdict, buf),
    }
}

/// Whether the log (Python's `json.loads` of the line's bytes, which decodes them as UTF-8 with
/// `surrogatepass`) can decode `raw`: UTF-8, where the three-byte form of a surrogate
/// (`ED A0..BF 80..BF`) is taken too. An ASCII line is checked a word at a time.
fn decodes_as_the_log_does(raw: &[u8]) -> bool {
    let mut rest = raw;
    loop {
        if rest.is_ascii() {
            return true;
        }
        match std::str::from_utf8(rest) {
            Ok(_) => return true,
            Err(e) => {
                let at = e.valid_up_to();
                match rest.get(at..at + 3) {
                    Some(&[0xED, b1, b2]) if (0xA0..=0xBF).contains(&b1) && (0x80..=0xBF).contains(&b2) => {
                        rest = &rest[at + 3..];
                    }
                    _ => return false,
                }
            }
        }
    }
}

/// [`classify`] for a query that counts every record (a regular expression), whose buffer search
/// looks for its literals only (`\u` escapes are not searched for: a line holds one in a string
/// or is not read by `length`'s scanner). A message none of the literals was found in, or whose
/// bytes the expression does not match where it can tell from them (`Query::raw_regex`), is only
/// measured, by the scanner, where it is UTF-8 and holds no `\u` escape (with none, its text
/// holds a literal, or a match, only where its bytes do: it cannot match); every other line is
/// classified as before (the decoded line searched for the literals and escapes, read whole
/// where it may match).
fn classify_every(query: &Query, raw: &[u8], message: bool, marks: Option<Marks>, buf: &mut Buffers) -> Line {
    // Whether the line cannot match once it is known to be UTF-8 with no `\u` escape: none of the
    // literals was found in it, or the expression itself does not match its bytes.
    let ruled_out = |raw: &[u8]| match marks {
        Some(Marks { literal: false, .. }) => true,
        _ => query.raw_regex().is_some_and(|re| !re.is_match(raw)),
    };
    let verdict = (message && matches!(marks, Some(Marks { literal: true, .. }))).then_some(true);
    // (Without literals, the expression is not searched for in the bytes first: the search of
    // the text follows wherever it matches them, and `\d{4,}` matches most records' bytes.)
    if message
        && marks.is_some()
        && let Some(len) = quick_len_plain(raw)
        && ruled_out(raw)
    {
        return Line::Message(Counted {
            tf: vec![0.0; query.units()],
            len,
            matches: 0,
        });
    }
    match std::str::from_utf8(raw) {
        Ok(text) => classify_text(query, text, verdict, buf),
        Err(_) => classify_text(query, &String::from_utf8_lossy(raw), verdict, buf),
    }
}

/// A message the raw text says cannot match: not parsed (that is the prefilter's gain: a syntax
/// check of every such line made a rare word's search 2.2x slower); only a line whose first
/// object does not end where the line does ([`one_object`]: torn, cut, records joined without a
/// line break, any text after the record) is taken for unreadable there, as the log reads it. A
/// record that is one object by its braces but cannot be parsed otherwise (a bad number, a
/// missing comma) is counted as a message there, and as unreadable where it is parsed for its
/// text.
fn cannot_match(raw: &[u8]) -> Line {
    if one_object(raw) {
        Line::Skipped
    } else {
        Line::Unreadable
    }
}

/// [`classify`] of the decoded line; `verdict`: the raw prefilter's on its bytes, if it gave one.
fn classify_text(query: &Query, raw: &str, verdict: Option<bool>, buf: &mut Buffers) -> Line {
    let raw = raw.strip_suffix('\r').unwrap_or(raw);
    let is_message = if raw.starts_with(r#"{"type":"message""#) {
        true
    } else if raw.starts_with(r#"{"type":"compaction""#)
        || raw.starts_with(r#"{"type":"session""#)
        || raw.trim().is_empty()
    {
        false
    } else {
        match serde_json::from_str::<Value>(raw) {
            Ok(v) => v.get("type").and_then(Value::as_str) == Some("message"),
            Err(_) => return Line::Unreadable,
        }
    };
    if !is_message {
        return Line::Other;
    }
    if verdict.or_else(|| query.may_match_raw(raw.as_bytes())) == Some(false) {
        if !query.counts_every_record() {
            return cannot_match(raw.as_bytes());
        }
        // What parsing it and counting no match would find, the text never built.
        return match record_text_len(raw) {
            Some(len) => Line::Message(Counted {
                tf: vec![0.0; query.units()],
                len,
                matches: 0,
            }),
            None => Line::Unreadable,
        };
    }
    if let Some(units) = query.raw_units()
        && quick_pieces(raw.as_bytes(), &mut buf.pieces)
    {
        return Line::Message(count_raw(units, raw.as_bytes(), &buf.pieces));
    }
    if record_text_into(raw, &mut buf.text) {
        Line::Message(count(query, &buf.text))
    } else {
        Line::Unreadable
    }
}

/// [`count`] of a record's text, counted in the raw record: each unit's matches in its bytes
/// that lie in a piece of the text (`pieces`), not starting at an escape's letter. A plain word
/// holds no character JSON escapes, so none of its matches in the text crosses an escape or a
/// piece's end, and each is one in the raw bytes; a match in the raw bytes that is not one (in a
/// key, a skipped value, after a `\`) is passed over from its second byte on, so it hides no
/// match that overlaps it (as the search of the text finds them, leftmost first).
fn count_raw(units: &[regex::bytes::Regex], raw: &[u8], pieces: &Pieces) -> Counted {
    let spans = &pieces.spans;
    let tf: Vec<usize> = units
        .iter()
        .map(|re| {
            let (mut n, mut at, mut piece) = (0, 0, 0);
            while let Some(m) = re.find_at(raw, at) {
                while piece < spans.len() && spans[piece].1 <= m.start() {
                    piece += 1;
                }
                let inside = spans.get(piece).is_some_and(|&(from, to)| {
                    from <= m.start()
                        && m.end() <= to
                        && raw[from..m.start()].iter().rev().take_while(|&&c| c == b'\\').count() % 2 == 0
                });
                if inside {
                    n += 1;
                    at = m.end();
                } else {
                    at = m.start() + 1;
                }
            }
            n
        })
        .collect();
    Counted {
        matches: tf.iter().sum(),
        tf: tf.into_iter().map(|c| c as f64).collect(),
        len: pieces.len,
    }
}

/// What the raw prefilter's search of a whole buffer found in a line: one of its literals (with
/// [`Query::raw_marks_are_exact`], a match of the prefilter itself), a `\u` escape.
#[derive(Clone, Copy, Debug, Default)]
struct Marks {
    literal: bool,
    escape: bool,
}

pub(super) fn count(query: &Query, text: &str) -> Counted {
    let counts = query.count(text);
    Counted {
        matches: counts.iter().sum(),
        tf: counts.into_iter().map(|c| c as f64).collect(),
        len: text.len(),
    }
}

/// A message that matched: where its record is, and its counts.
pub(super) struct Found {
    pub(super) message: usize,
    pub(super) line: usize,
    pub(super) offset: u64,
    pub(super) len: usize,
}

/// What a pass over a log's records found.
pub(super) struct Scanned {
    pub(super) stats: Stats,
    /// The counts of the messages that match, and where each is.
    pub(super) matched: Vec<Counted>,
    pub(super) found: Vec<Found>,
    pub(super) messages: usize,
    /// Lines that could not be read as a record.
    pub(super) skipped: usize,
}

/// A worker's buffers: a record's text, or its pieces' places; a task's lines' places and marks.
#[derive(Default)]
struct Buffers {
    text: String,
    pieces: Pieces,
    ranges: Vec<(usize, usize)>,
    marks: Vec<Marks>,
}

thread_local! {
    /// A worker's buffers, kept from task to task and search to search (a fresh text grown for
    /// every task was 5% of a common word's search, in page faults).
    static BUFFERS: std::cell::RefCell<Buffers> = std::cell::RefCell::new(Buffers::default());
}

/// The largest text buffer a worker keeps after a task (a huge record's is let go).
const TEXT_KEPT: usize = 1 << 20;

/// Lines examined by one task: the raw filter searches their bytes at once.
const LINES_PER_TASK: usize = 128;

/// [`classify`] each of the lines `spans` of `batch`, in parallel, a few hundred lines a task: one
/// search of a task's bytes for the raw filter's literals marks the lines that need a closer look,
/// and the others are ruled out unread (a search per line cost more than the search itself on
/// short lines).
fn classify_lines(query: &Query, batch: &[u8], spans: &[Span], out: &mut Vec<Line>) {
    out.clear();
    out.resize_with(spans.len(), || Line::Other);
    crate::parallel::install(|| {
        out.par_chunks_mut(LINES_PER_TASK)
            .zip(spans.par_chunks(LINES_PER_TASK))
            .for_each(|(out, lines)| {
                BUFFERS.with_borrow_mut(|buf| {
                    let mut ranges = std::mem::take(&mut buf.ranges);
                    let mut marks = std::mem::take(&mut buf.marks);
                    ranges.clear();
                    ranges.extend(lines.iter().map(|s| (s.start, s.end)));
                    marks.clear();
                    marks.resize(lines.len(), Marks::default());
                    // A regular expression's lines are told to hold a `\u` escape by the scanner.
                    let escapes = !query.counts_every_record();
                    let searched = query
                        .raw_needs_look(batch, &ranges, escapes, |i, mark| match mark {
                            Mark::Literal => marks[i].literal = true,
                            Mark::Escape => marks[i].escape = true,
                        })
                        .is_some();
                    for ((slot, span), &marks) in out.iter_mut().zip(lines).zip(&marks) {
                        *slot = classify(query, &batch[span.start..span.end], searched.then_some(marks), buf);
                    }
                    (buf.ranges, buf.marks) = (ranges, marks);
                    if buf.text.capacity() > TEXT_KEPT {
                        buf.text = String::new();
                    }
                    if buf.pieces.spans.capacity() > TEXT_KEPT / 16 {
                        buf.pieces = Pieces::default();
                    }
                });
            });
    });
}

/// Read the records after the header (`offset` bytes, line 1) a buffer at a time, examining each
/// buffer's lines in parallel.
pub(super) fn scan(reader: impl std::io::Read + Send, query: &Query, offset: u64) -> std::io::Result<Scanned> {
    let mut stats = Stats::new(query.units());
    let mut matched: Vec<Counted> = Vec::new();
    let mut found: Vec<Found> = Vec::new();
    let mut messages = 0usize;
    let mut skipped = 0usize;
    let mut blocks = Blocks::new(reader, 2, offset, BATCH_BYTES);
    let mut spans: Vec<Span> = Vec::new();
    // The lines of a batch classified (kept from batch to batch: no allocation per batch).
    let mut classified: Vec<Line> = Vec::new();
    let mut more = true;
    while more {
        more = blocks.next_batch(&mut spans)?;
        let (batch, ahead) = blocks.read_ahead();
        // The next buffer is read while this one's lines are examined.
        crate::parallel::install(|| {
            rayon::join(
                || {
                    if more {
                        ahead.run();
                    }
                },
                || classify_lines(query, batch, &spans, &mut classified),
            )
        });
        for (span, kind) in spans.iter().zip(classified.drain(..)) {
            match kind {
                Line::Other => {}
                Line::Unreadable => skipped += 1,
                Line::Skipped => messages += 1,
                Line::Message(counted) => {
                    stats.add(&counted);
                    if counted.matches > 0 {
                        matched.push(counted);
                        found.push(Found {
                            message: messages,
                            line: span.line,
                            offset: span.offset,
                            len: span.end - span.start,
                        });
                    }
                    messages += 1;
                }
            }
        }
    }
    Ok(Scanned {
        stats,
        matched,
        found,
        messages,
        skipped: skipped + blocks.skipped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::testing::xorshift;
    use crate::search::log::text::parsed_text;

    /// What a line counts as with nothing prefiltered: every record parsed for its text.
    fn parsed(query: &Query, line: &[u8]) -> Option<(usize, usize)> {
        // A line that is not UTF-8 is not read (the log cannot decode it).
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if !decodes_as_the_log_does(line) {
            return None;
        }
        parsed_text(&String::from_utf8_lossy(line)).map(|t| {
            let c = count(query, &t);
            (c.matches, c.len)
        })
    }

    /// Words queries and regular expressions, with and without a raw prefilter, some of them
    /// matching characters JSON escapes, or across an escape.
    fn queries() -> [Query; 19] {
        [
            Query::words("needle").unwrap(),
            Query::words("NEEDLE hay").unwrap(),
            Query::words("kelvin").unwrap(),
            Query::words("\u{FFFD}").unwrap(),
            Query::regex("ne+dle").unwrap(),
            Query::regex(r"(?i)hay\b").unwrap(),
            Query::regex(r"m\d+\.py").unwrap(),
            Query::regex(r"\w+").unwrap(),
            Query::regex(r"[A-Z]\w+Error\b").unwrap(),
            Query::regex(r"(?i)needle\W+\w+").unwrap(),
            Query::regex("caf.|12").unwrap(),
            Query::regex(r"e\d").unwrap(),
            Query::words("\u{1F600} caf\u{e9}").unwrap(),
            Query::regex(r"needle\nhay").unwrap(),
            Query::regex(r#"["\\/]\w"#).unwrap(),
            Query::regex(r"\t\S|\u{1F600}").unwrap(),
            Query::words("\"needle hay\"").unwrap(),
            Query::words("quokka-7731").unwrap(),
            // An assertion on the character before the match: `\n` is a line break before it in
            // the text, a word character in the bytes.
            Query::regex(r"\bneedle").unwrap(),
        ]
    }

    /// What the search of a buffer holding only `line` marks in it; it rules the line out only
    /// where the search of the line rules it out (a line it marks may still be ruled out line by
    /// line).
    /// `escapes`: whether `\u` escapes are searched for too (as for a words query; a regular
    /// expression's search of a buffer leaves them to `length`'s scanner).
    fn marked_by_the_buffer_search(query: &Query, line: &[u8], escapes: bool) -> Option<Marks> {
        let mut marks = Marks::default();
        let searched = query
            .raw_needs_look(line, &[(0, line.len())], escapes, |_, mark| match mark {
                Mark::Literal => marks.literal = true,
                Mark::Escape => marks.escape = true,
            })
            .is_some();
        let ruled_out = escapes && searched && !marks.literal && !marks.escape;
        if ruled_out {
            let stripped = line.strip_suffix(b"\r").unwrap_or(line);
            assert_eq!(
                query.may_match_raw_bytes(stripped),
                Some(false),
                "{:?}",
                String::from_utf8_lossy(line)
            );
        }
        searched.then_some(marks)
    }

    /// What a message's content is made of: words, escapes (some in words), bytes that are not
    /// UTF-8.
    const PIECES: [&[u8]; 32] = [
        b"QUOKKA-7731",
        b"-7731",
        b"\\ud83d\\ude00",
        b"\\ud83d",
        b"\\u00e9",
        b"\\\\needle",
        b"\\\"hay",
        "\u{1F600}".as_bytes(),
        b"needle",
        b"NeEdLe",
        b"nee\\u0064le",
        b"ne\\nedle",
        b"hay",
        b"m12.py",
        b"m\\u0031.py",
        b"\xff",
        b"\xe2\x82",
        "\u{212A}elvin".as_bytes(),
        b" ",
        b"\\\"",
        b"\\/",
        b"\\\\u0041",
        b"error",
        b"x",
        "\u{FFFD}".as_bytes(),
        b"kelvin",
        b"\\t",
        b"12",
        b"ValueError",
        b"Valu\\u0065Error",
        "caf\u{e9}".as_bytes(),
        b"\\n\\n",
    ];

    #[test]
    fn the_byte_prefilter_never_drops_a_message_that_matches() {
        let pieces = PIECES;
        // What follows the content: numbers JSON writes in more than one way, one out of range.
        let huge = format!(r#"","n":{}}}]}}"#, "9".repeat(400));
        let closings: [&[u8]; 5] = [
            br#""}]}"#,
            br#"","n":12}]}"#,
            br#"","n":1.5e3}]}"#,
            br#"","n":-0.0}]}"#,
            huge.as_bytes(),
        ];
        // JSON's own whitespace after the record (others, and a cut that leaves a `}` last, make a
        // record that looks whole but does not parse: counted as a message unparsed, by design).
        let endings: [&[u8]; 4] = [b"", b" ", b"\r", b"\t \r"];
        let queries = queries();
        let mut rng = xorshift(0x5eed_0030_0000_0005);
        let mut next = move |n: usize| (rng() % n as u64) as usize;
        let (mut skipped, mut matched, mut ruled_out) = (0, 0, 0);
        // One buffer for every line, as a worker reuses it.
        let mut buf = Buffers::default();
        for _ in 0..3000 {
            let mut line = br#"{"type":"message","index":0,"data":[{"role":"user","content":""#.to_vec();
            for _ in 0..next(6) {
                line.extend_from_slice(pieces[next(pieces.len())]);
            }
            line.extend_from_slice(closings[next(closings.len())]);
            if next(8) == 0 {
                line.truncate(line.len() - [1, 3][next(2)]);
            }
            line.extend_from_slice(endings[next(endings.len())]);
            for query in &queries {
                let reference = parsed(query, &line);
                ruled_out += usize::from(query.counts_every_record() && query.may_match_raw(&line) == Some(false));
                // Both searches of the buffer, as production runs them and with escapes marked
                // for every query (a regular expression's classification ignores those marks).
                let escapes = next(2) == 0 || !query.counts_every_record();
                let marks = marked_by_the_buffer_search(query, &line, escapes);
                match classify(query, &line, marks, &mut buf) {
                    Line::Skipped => {
                        skipped += 1;
                        // Never a record that matches (one that does not parse may be taken for a
                        // message there: the huge number).
                        assert_ne!(
                            reference.map(|r| r.0 > 0),
                            Some(true),
                            "{:?}",
                            String::from_utf8_lossy(&line)
                        );
                    }
                    Line::Unreadable => assert_eq!(reference, None, "{:?}", String::from_utf8_lossy(&line)),
                    Line::Message(c) => {
                        matched += usize::from(c.matches > 0);
                        assert_eq!(reference, Some((c.matches, c.len)));
                    }
                    Line::Other => panic!("a message record"),
                }
            }
        }
        // Both sides are exercised: lines ruled out unparsed, and lines that match.
        // (and regular expressions' records ruled out raw, parsed for their length only).
        assert!(
            skipped > 3000 && matched > 1000 && ruled_out > 3000,
            "{skipped} {matched} {ruled_out}"
        );
    }

    #[test]
    fn escapes_inside_and_across_matches_count_as_the_decoded_text() {
        let record = |content: &str| {
            format!(r#"{{"type":"message","index":0,"data":[{{"role":"user","content":"{content}"}}]}}"#)
        };
        let mut buf = Buffers::default();
        for (query, content, matches) in [
            // The `n` of `\n` is not a letter of the text; the `\\` before `needle` is one backslash.
            (Query::words("nneedle").unwrap(), r"\nneedle", 0),
            (Query::words("needle").unwrap(), r"\nneedle \\needle \tneedle", 3),
            (Query::regex(r"\\needle").unwrap(), r"\\needle \needle", 1),
            // Matches across an escape.
            (Query::regex(r"needle\nhay").unwrap(), r"needle\nhay needle\\nhay", 1),
            (Query::regex(r#"say "hi""#).unwrap(), r#"say \"hi\" say \\hi \"hi"#, 1),
            (Query::words(r#""needle hay""#).unwrap(), r"needle\n\thay", 1),
            // `\u` escapes, a surrogate pair among them, in and around words.
            (Query::words("caf\u{e9}").unwrap(), r"caf\u00e9 CAF\u00c9 caf\u00e", 0),
            (Query::words("caf\u{e9}").unwrap(), r"caf\u00e9 CAF\u00C9 cafe", 2),
            (Query::words("needle").unwrap(), r"nee\u0064le \u004eEEDLE", 2),
            (
                Query::regex("\u{1F600}+").unwrap(),
                r"\ud83d\ude00\ud83d\ude00 \ud83d\ude00",
                2,
            ),
            (Query::regex(r"a.b").unwrap(), r"a\ud83d\ude00b a\u00e9b", 2),
        ] {
            let line = record(content);
            let expected = parsed_text(&line).map(|t| count(&query, &t).matches);
            assert_eq!(
                expected,
                Some(matches).filter(|_| !content.ends_with("00e")),
                "{content}"
            );
            match classify(&query, line.as_bytes(), None, &mut buf) {
                Line::Message(c) => assert_eq!(Some(c.matches), expected, "{content}"),
                Line::Unreadable => assert_eq!(expected, None, "{content}"),
                _ => panic!("{content}"),
            }
        }
    }

    #[test]
    fn words_counted_in_the_raw_record_are_the_texts_counts() {
        // Matches the raw bytes hold but the text does not: in keys, in skipped values, over an
        // escape's letter (`\bbb` is a backspace and `bb`), next to a number, overlapping true ones.
        let pieces: [&str; 16] = [
            r#""bb""#,
            r#""\bbb""#,
            r#""\\bbb""#,
            r#""x\nneedle needle""#,
            r#""needle\\\nneedle""#,
            r#""\u006eeedle""#,
            r#"{"needle":"bb needle"}"#,
            r#"{"id":"needle","type":"bb"}"#,
            r#"{"content":"nEEdle","n":12}"#,
            "12",
            "1212",
            r#""12,12""#,
            "1.5",
            "[12,12]",
            "\"caf\u{e9} \u{212A}elvin\"",
            r#""a\"needle\"b""#,
        ];
        let queries = [
            Query::words("bb").unwrap(),
            Query::words("needle").unwrap(),
            Query::words("nneedle bb").unwrap(),
            Query::words("12").unwrap(),
            Query::words("12,12").unwrap(),
            Query::words("kelvin caf\u{e9}").unwrap(),
        ];
        let mut rng = xorshift(0x5eed_0038_0000_0031);
        let mut next = move |n: usize| (rng() % n as u64) as usize;
        let (mut pieces_buf, mut counted) = (Pieces::default(), 0);
        for _ in 0..3000 {
            let items: Vec<&str> = (0..next(6)).map(|_| pieces[next(pieces.len())]).collect();
            let raw = format!(
                r#"{{"type":"message","index":12,"data":[{}],"needle":"bb"}}"#,
                items.join(",")
            );
            let Some(text) = parsed_text(&raw) else { continue };
            for query in &queries {
                let units = query.raw_units().unwrap();
                if quick_pieces(raw.as_bytes(), &mut pieces_buf) {
                    counted += 1;
                    let c = count_raw(units, raw.as_bytes(), &pieces_buf);
                    let expected = count(query, &text);
                    assert_eq!((c.tf, c.len), (expected.tf, expected.len), "{raw}");
                }
            }
        }
        assert!(counted > 5000, "{counted}");
        assert!(Query::words("a/b").unwrap().raw_units().is_none());
        assert!(Query::regex("needle").unwrap().raw_units().is_none());
    }

    #[test]
    fn a_message_that_cannot_match_is_one_only_when_its_record_ends_the_line() {
        let one = r#"{"type":"message","index":1,"data":[{"role":"user","content":"a }{ b } {\"c\": \"}{\"} \\"}]}"#;
        assert!(matches!(cannot_match(one.as_bytes()), Line::Skipped));
        assert!(matches!(cannot_match(format!("{one} \t").as_bytes()), Line::Skipped));
        for line in [
            format!("{one} x}}"),
            format!("{one}}}"),
            format!("{one}\u{a0}}}"),
            format!("{one}\u{b}"),
            format!("{one}{one}"),
            one[..one.len() - 1].to_string(),
        ] {
            assert!(matches!(cannot_match(line.as_bytes()), Line::Unreadable), "{line:?}");
            // As the whole classification has it, for a query it cannot match.
            let query = Query::words("quokka").unwrap();
            let marks = marked_by_the_buffer_search(&query, line.as_bytes(), true);
            let mut buf = Buffers::default();
            assert!(
                matches!(classify(&query, line.as_bytes(), marks, &mut buf), Line::Unreadable),
                "{line:?}"
            );
        }
    }
}
