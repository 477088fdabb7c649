//! Transcript files: a JSON array of messages, a request body (`{"system", "messages"}` or
//! `{"input"}`), or JSON Lines with one message per line. Parsed from bytes with no Python objects
//! involved; errors name the file and the line (JSON Lines) or message index (JSON arrays).

use std::fs::File;
use std::io::{BufRead, BufReader, Read as _, Seek as _, SeekFrom};
use std::ops::ControlFlow;
use std::path::Path;

use serde::de::{SeqAccess, Visitor};
use serde::{Deserialize as _, Deserializer as _};
use serde_json::Value;

use super::detect::detect;
use crate::error::{Error, Location, Result};
use crate::files::{OpenError, human, open_regular};
use crate::model::{Format, Message};

/// A parsed transcript and the format it was read in.
#[derive(Debug)]
pub struct Transcript {
    pub format: Format,
    pub messages: Vec<Message>,
}

/// The largest transcript file read unless the caller allows more: 1 GiB (the largest real
/// session in the test corpus is 4 MB; parsed, a transcript takes several times its size).
pub const DEFAULT_MAX_BYTES: u64 = 1 << 30;

/// Read and parse the transcript file at `path`, a regular file of at most `max_bytes` bytes.
///
/// The file is parsed as it is read, through a buffer, and each message read as soon as it is
/// parsed: neither the file's bytes nor its parsed JSON are ever held whole. It is read as it was
/// when it was opened: its first `len` bytes, `len` being its size then (a file that is appended
/// to while it is read, such as a live session's log, reads the same on every pass). A file that
/// reports no size (some special file systems) is read whole into memory first.
pub fn read_path(path: &Path, format: Option<Format>, max_bytes: u64) -> Result<Transcript> {
    let name = path.display().to_string();
    let (file, len) = open_transcript(path, &name, max_bytes)?;
    if len == 0 {
        let bytes = read_to_limit(file, &name, max_bytes)?;
        return read_text(&mut &bytes[..], &name, format);
    }
    read_text(&mut FileText { file, len }, &name, format)
}

/// The bytes of a transcript file: a regular file (a FIFO, device or socket is refused before it
/// is read) of at most `max_bytes` bytes (checked before reading, and while reading for a file
/// that grows or does not report its size).
pub fn read_transcript_bytes(path: &Path, max_bytes: u64) -> Result<Vec<u8>> {
    let name = path.display().to_string();
    let (file, _) = open_transcript(path, &name, max_bytes)?;
    read_to_limit(file, &name, max_bytes)
}

fn io_error(name: &str, source: std::io::Error) -> Error {
    Error::Io {
        path: name.to_owned(),
        source,
    }
}

fn too_large(name: &str, size: &str, max_bytes: u64) -> Error {
    io_error(
        name,
        std::io::Error::new(
            std::io::ErrorKind::FileTooLarge,
            format!(
                "is {size}, over the {} ({max_bytes} bytes) limit for a transcript; pass a larger max_bytes \
                 (Conversation.from_file, agentcontext.load) or --max-bytes (CLI) to read it",
                human(max_bytes)
            ),
        ),
    )
}

/// Open a transcript file (`name` in errors) that must be regular and, by its reported size, at
/// most `max_bytes`.
fn open_transcript(path: &Path, name: &str, max_bytes: u64) -> Result<(File, u64)> {
    let (file, meta) = open_regular(path).map_err(|e| match e {
        OpenError::Io(source) => io_error(name, source),
        OpenError::Directory => io_error(name, is_a_directory()),
        OpenError::Special(what) => io_error(
            name,
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("is {what}, not a regular file; only regular files are read as transcripts"),
            ),
        ),
    })?;
    if meta.len() > max_bytes {
        return Err(too_large(
            name,
            &format!("{} ({} bytes)", human(meta.len()), meta.len()),
            max_bytes,
        ));
    }
    Ok((file, meta.len()))
}

/// Read `file` to its end, refusing it once it is over `max_bytes`.
fn read_to_limit(file: File, name: &str, max_bytes: u64) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(name, e))?;
    if bytes.len() as u64 > max_bytes {
        return Err(too_large(
            name,
            "larger than that (it grew while being read)",
            max_bytes,
        ));
    }
    Ok(bytes)
}

fn is_a_directory() -> std::io::Error {
    #[cfg(unix)]
    return std::io::Error::from_raw_os_error(libc::EISDIR);
    #[cfg(not(unix))]
    return std::io::Error::new(std::io::ErrorKind::IsADirectory, "is a directory");
}

/// A transcript's text, which can be read from its start as often as a reader that starts over
/// needs: bytes in memory, or the first `len` bytes of an open file.
trait Text {
    type Reader<'a>: BufRead
    where
        Self: 'a;

    /// A reader from the first byte (a byte order mark skipped).
    fn open(&mut self) -> std::io::Result<Self::Reader<'_>>;
}

impl Text for &[u8] {
    type Reader<'a>
        = &'a [u8]
    where
        Self: 'a;

    fn open(&mut self) -> std::io::Result<&[u8]> {
        Ok(self.strip_prefix(BOM).unwrap_or(self))
    }
}

/// The first `len` bytes of a file, read through a buffer.
struct FileText {
    file: File,
    len: u64,
}

impl Text for FileText {
    type Reader<'a> = BufReader<std::io::Take<&'a File>>;

    fn open(&mut self) -> std::io::Result<Self::Reader<'_>> {
        (&self.file).seek(SeekFrom::Start(0))?;
        let mut reader = BufReader::with_capacity(1 << 16, (&self.file).take(self.len));
        if reader.fill_buf()?.starts_with(BOM) {
            reader.consume(BOM.len());
        }
        Ok(reader)
    }
}

const BOM: &[u8] = b"\xef\xbb\xbf";

/// Why reading a file failed: its text (not readable, not JSON, not a transcript's shape) or a
/// message in it.
enum Failure {
    Text(Error),
    Message(Error),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::Message(e)
    }
}

/// Parse and read a transcript from its bytes (see [`read_path`]).
pub fn read_bytes(bytes: &[u8], name: &str, format: Option<Format>) -> Result<Transcript> {
    read_text(&mut &bytes[..], name, format)
}

/// Parse and read a transcript.
///
/// A JSON array or JSON Lines file is parsed one message at a time, and each message read as soon
/// as it is parsed ([`super::read_stream`]), so the parsed JSON of the whole file is never held
/// at once: holding it took about 2.7 times the file's size on top of the messages, and the
/// allocator kept that memory after it was freed.
fn read_text<T: Text>(text: &mut T, name: &str, format: Option<Format>) -> Result<Transcript> {
    let invalid = |location, position, reason: String| Error::InvalidFile {
        path: name.to_owned(),
        location,
        position,
        reason,
    };
    let io = |e: std::io::Error| io_error(name, e);
    // serde_json reports a failed read as its own error.
    let not_json = |e: serde_json::Error| {
        if e.is_io() {
            io(e.into())
        } else {
            invalid(Location::Line, e.line(), format!("not valid JSON: {e}"))
        }
    };
    let Some((first, start_line)) = first_byte(text.open().map_err(io)?).map_err(io)? else {
        return Err(invalid(Location::Line, 1, "the file is empty".into()));
    };
    // Whether a value holds a number that may be an integer out of the 64-bit range.
    let mut huge = false;
    // JSON Lines: the 1-based line of each value, to name the line of a message that is invalid.
    let mut lines: Option<Vec<usize>> = None;
    let result: std::result::Result<(Format, Vec<Message>), Failure> = match first {
        b'[' => super::read_stream(format, Format::OpenAiChat, None, |each| {
            let reader = text.open().map_err(|e| Failure::Text(io(e)))?;
            each_element(reader, &mut huge, each).map_err(|e| Failure::Text(not_json(e)))
        }),
        b'{' => {
            // The whole text as one object, or `None` when more follows it: JSON Lines.
            let document = {
                let mut de = serde_json::Deserializer::from_reader(text.open().map_err(io)?);
                let first = Value::deserialize(&mut de).map_err(not_json)?;
                match de.end() {
                    Ok(()) => Some(first),
                    Err(e) if e.is_io() => return Err(not_json(e)),
                    Err(_) => None,
                }
            };
            if let Some(document) = document {
                read_document(document, format, start_line, &mut huge, &mut lines)
            } else {
                let mut seen = Vec::new();
                let result = super::read_stream(format, Format::Native, None, |each| {
                    seen.clear();
                    let reader = text.open().map_err(|e| Failure::Text(io(e)))?;
                    each_line(reader, &mut seen, &mut huge, each).map_err(|e| match e {
                        LineError::Io(e) => Failure::Text(io(e)),
                        LineError::Invalid(line, reason) => Failure::Text(invalid(Location::Line, line, reason)),
                    })
                });
                lines = Some(seen);
                result
            }
        }
        _ => {
            return Err(invalid(
                Location::Line,
                start_line,
                "not a transcript: expected a JSON array, a JSON object or JSON Lines".into(),
            ));
        }
    };
    let result = match result {
        Err(Failure::Text(e)) => return Err(e),
        Err(Failure::Message(e)) => Err(e),
        Ok(read) => Ok(read),
    };
    if huge {
        no_huge_integer(text, name)?;
    }
    let (format, messages) = result.map_err(|e| match e {
        Error::InvalidMessage { index, reason } => match &lines {
            Some(lines) => invalid(Location::Line, lines.get(index).copied().unwrap_or(0), reason),
            None => invalid(Location::Message, index, reason),
        },
        other => other,
    })?;
    Ok(Transcript { format, messages })
}

/// Refuse a text with an integer out of the 64-bit range, naming its line.
fn no_huge_integer<T: Text>(text: &mut T, name: &str) -> Result<()> {
    // Only here is the whole text read into memory, to find the literal.
    let mut bytes = Vec::new();
    text.open()
        .and_then(|mut r| r.read_to_end(&mut bytes))
        .map_err(|e| io_error(name, e))?;
    if let Some(offset) = huge_integer(&bytes) {
        let end = bytes[offset..]
            .iter()
            .position(|b| !(b.is_ascii_digit() || *b == b'-'))
            .map_or(bytes.len(), |n| offset + n);
        let literal = String::from_utf8_lossy(&bytes[offset..end.min(offset + 60)]);
        return Err(Error::InvalidFile {
            path: name.to_owned(),
            location: Location::Line,
            position: line_of(&bytes, offset),
            reason: format!(
                "integer {literal} is out of the 64-bit range (it would be rounded); write it as a string or a \
                 float"
            ),
        });
    }
    Ok(())
}

/// A file that is one JSON object: a request body (`{"system", "messages"}` or `{"input"}`), or
/// a single message (JSON Lines of one line, at `line`).
fn read_document(
    document: Value,
    format: Option<Format>,
    line: usize,
    huge: &mut bool,
    lines: &mut Option<Vec<usize>>,
) -> std::result::Result<(Format, Vec<Message>), Failure> {
    match document {
        Value::Object(mut body) if body.get("messages").is_some_and(Value::is_array) => {
            // A null system is no system (as `system=None` is), not an empty one.
            let system = body.shift_remove("system").filter(|s| !s.is_null());
            let Some(Value::Array(values)) = body.shift_remove("messages") else {
                unreachable!()
            };
            *huge = values.iter().chain(&system).any(holds_huge_number);
            super::read_any(values, format, system).map_err(Failure::Message)
        }
        Value::Object(mut body) if body.get("input").is_some_and(Value::is_array) => {
            let Some(Value::Array(values)) = body.shift_remove("input") else {
                unreachable!()
            };
            *huge = values.iter().any(holds_huge_number);
            super::read_any(values, format.or(Some(Format::Responses)), None).map_err(Failure::Message)
        }
        single => {
            *huge = holds_huge_number(&single);
            *lines = Some(vec![line]);
            let format = format
                .or_else(|| detect(std::slice::from_ref(&single)))
                .unwrap_or(Format::Native);
            super::read(format, vec![single])
                .map(|m| (format, m))
                .map_err(Failure::Message)
        }
    }
}

/// The first byte that is not whitespace, and its 1-based line; `None` for a blank text.
fn first_byte(mut reader: impl BufRead) -> std::io::Result<Option<(u8, usize)>> {
    let mut line = 1;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok(None);
        }
        if let Some(i) = buf.iter().position(|b| !b.is_ascii_whitespace()) {
            line += memchr::memchr_iter(b'\n', &buf[..i]).count();
            return Ok(Some((buf[i], line)));
        }
        line += memchr::memchr_iter(b'\n', buf).count();
        let n = buf.len();
        reader.consume(n);
    }
}

/// Parse the JSON array `reader` one element at a time, giving each to `each` until it says stop.
fn each_element(
    reader: impl BufRead,
    huge: &mut bool,
    each: &mut dyn FnMut(Value) -> ControlFlow<()>,
) -> serde_json::Result<()> {
    struct Elements<'a> {
        each: &'a mut dyn FnMut(Value) -> ControlFlow<()>,
        huge: &'a mut bool,
        stopped: &'a mut bool,
    }
    impl<'de> Visitor<'de> for Elements<'_> {
        type Value = ();

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a JSON array")
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<(), A::Error> {
            while let Some(v) = seq.next_element::<Value>()? {
                *self.huge |= holds_huge_number(&v);
                if (self.each)(v).is_break() {
                    *self.stopped = true;
                    return Ok(());
                }
            }
            Ok(())
        }
    }
    let mut de = serde_json::Deserializer::from_reader(reader);
    let mut stopped = false;
    let parsed = de.deserialize_seq(Elements {
        each,
        huge,
        stopped: &mut stopped,
    });
    if stopped {
        // The rest is not looked at: serde_json reports the array as unfinished.
        return Ok(());
    }
    parsed?;
    de.end()
}

enum LineError {
    Io(std::io::Error),
    /// A line that is not one JSON object: its 1-based number and why.
    Invalid(usize, String),
}

/// Parse JSON Lines one line at a time, giving each object to `each` until it says stop, and
/// noting its line in `lines`.
fn each_line(
    mut reader: impl BufRead,
    lines: &mut Vec<usize>,
    huge: &mut bool,
    each: &mut dyn FnMut(Value) -> ControlFlow<()>,
) -> std::result::Result<(), LineError> {
    let mut line = Vec::new();
    let mut number = 0;
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line).map_err(LineError::Io)? == 0 {
            return Ok(());
        }
        number += 1;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<Value>(&line) {
            Ok(v @ Value::Object(_)) => {
                *huge |= holds_huge_number(&v);
                lines.push(number);
                if each(v).is_break() {
                    return Ok(());
                }
            }
            Ok(other) => {
                return Err(LineError::Invalid(
                    number,
                    format!("expected one JSON object per line, got {}", super::type_name(&other)),
                ));
            }
            Err(e) => return Err(LineError::Invalid(number, format!("not valid JSON: {e}"))),
        }
    }
}

/// Whether `v` holds a float as large as an integer out of the 64-bit range would parse to (the
/// cheap test before [`huge_integer`] looks at the bytes).
fn holds_huge_number(v: &Value) -> bool {
    match v {
        Value::Number(n) => n.is_f64() && n.as_f64().is_some_and(|f| f.abs() >= 9.2e18),
        Value::Array(items) => items.iter().any(holds_huge_number),
        Value::Object(map) => map.values().any(holds_huge_number),
        _ => false,
    }
}

/// The offset of the first integer literal (no fraction, no exponent) outside strings that fits
/// neither `i64` nor `u64`: serde_json reads those as floats, rounded, where a Python int of the
/// same value is refused. `bytes` is valid JSON (or JSON Lines).
fn huge_integer(bytes: &[u8]) -> Option<usize> {
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i < bytes.len() && matches!(bytes[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') {
                    i += 1;
                }
                let literal = &bytes[start..i];
                let integer = !literal.iter().any(|b| matches!(b, b'.' | b'e' | b'E'));
                if integer {
                    let text = std::str::from_utf8(literal).unwrap_or("");
                    if text.parse::<i64>().is_err() && text.parse::<u64>().is_err() {
                        return Some(start);
                    }
                }
            }
            _ => i += 1,
        }
    }
    None
}

// Only on error paths: not worth a bytecount dependency.
#[allow(clippy::naive_bytecount)]
fn line_of(bytes: &[u8], offset: usize) -> usize {
    1 + bytes[..offset].iter().filter(|&&b| b == b'\n').count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_out_of_the_64_bit_range_are_refused_with_their_line() {
        let big = b"[{\"role\": \"user\", \"content\": \"x\"},\n {\"role\": \"user\", \"content\": \"y\", \"n\": -100000000000000000000000}]";
        let err = read_bytes(big, "f.json", None).unwrap_err();
        assert!(
            matches!(&err, Error::InvalidFile { position: 2, reason, .. } if reason.contains("-100000000000000000000000")),
            "{err}"
        );
        // Floats, 64-bit extremes and digits inside strings (escaped quotes too) are read as before.
        let ok = br#"[{"role": "user", "content": "\"123456789012345678901234567890", "a": 18446744073709551615, "b": -9223372036854775808, "c": 1e30, "d": 100000000000000000000000.5}]"#;
        assert!(read_bytes(ok, "ok.json", None).is_ok());
        assert_eq!(huge_integer(br#"{"a": "\\", "b": 99999999999999999999}"#), Some(17));
    }
}
