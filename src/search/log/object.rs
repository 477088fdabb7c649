//! Whether a log line is one JSON object by its braces, told without parsing it: what the search
//! needs to know of a message record the query cannot match (the log reads a line with anything
//! after its record as one it cannot read, and numbers no message there).
//!
//! One pass over the line, 64 bytes a step: the places of a chunk's quotes, backslashes and
//! braces are bit masks (SSE2 compares through `safe_arch`), the quotes escaped are told from the
//! backslashes by the parity of their runs (simdjson's arithmetic, as `length::string_end` does),
//! the bytes inside strings by a prefix XOR of the quotes left; only a chunk that holds a brace
//! outside a string is looked at byte by byte. A count of the braces outside strings that stops
//! at every quote and backslash (`memchr3`, then `memchr2` inside strings) made a rare word's
//! search 1.6x slower: a tool's output has a backslash every couple of dozen bytes.

/// Bytes a step.
const CHUNK: usize = 64;

/// Whether `raw` is one JSON object by its braces: it opens with `{`, and the `}` that closes it,
/// told by counting the braces outside strings, is followed by JSON's whitespace only (space,
/// tab, line feed, carriage return: what `json.loads` takes after a value). A quote is escaped
/// when an odd run of backslashes is right before it; a string that does not end on the line
/// ends nothing (false). No other syntax is checked.
pub(super) fn one_object(raw: &[u8]) -> bool {
    const EVEN: u64 = 0x5555_5555_5555_5555;
    if raw.first() != Some(&b'{') {
        return false;
    }
    // `inside`: all ones while a string is open at the start of the chunk; `carry`: whether the
    // chunk's first byte is escaped by a backslash at the end of the one before.
    let (mut at, mut depth, mut inside, mut carry) = (0usize, 0usize, 0u64, 0u64);
    let mut padded = [b' '; CHUNK];
    while at < raw.len() {
        // The last bytes are padded with spaces (neither a quote, a backslash nor a brace).
        let chunk: &[u8; CHUNK] = if let Some(chunk) = raw.get(at..at + CHUNK).and_then(|c| c.try_into().ok()) {
            chunk
        } else {
            let rest = &raw[at..];
            padded[..rest.len()].copy_from_slice(rest);
            &padded
        };
        let (backslashes, quotes, braces) = masks(chunk);
        let escaped = if backslashes | carry == 0 {
            0
        } else {
            let backslashes = backslashes & !carry;
            let follows = (backslashes << 1) | carry;
            let odd_starts = backslashes & !EVEN & !follows;
            let (even_starts, overflow) = odd_starts.overflowing_add(backslashes);
            carry = u64::from(overflow);
            (EVEN ^ (even_starts << 1)) & follows
        };
        let quotes = quotes & !escaped;
        if braces != 0 {
            // Bit k: byte k is inside a string (its opening quote included).
            let strings = prefix_xor(quotes) ^ inside;
            let mut outside = braces & !strings;
            while outside != 0 {
                let k = outside.trailing_zeros() as usize;
                outside &= outside - 1;
                match chunk[k] {
                    b'{' => depth += 1,
                    b'}' => {
                        // The line opens with `{`: depth is at least one before any `}`.
                        depth -= 1;
                        if depth == 0 {
                            return raw[at + k + 1..]
                                .iter()
                                .all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'));
                        }
                    }
                    _ => {}
                }
            }
        }
        if quotes.count_ones() % 2 == 1 {
            inside = !inside;
        }
        at += CHUNK;
    }
    false
}

/// Bit k set when an odd number of the bits 0..=k of `x` are.
fn prefix_xor(mut x: u64) -> u64 {
    for shift in [1, 2, 4, 8, 16, 32] {
        x ^= x << shift;
    }
    x
}

/// The masks of a chunk's backslashes, quotes and braces (bit k: byte k). A brace is a byte `b`
/// with `b | 6 == 0x7f`: `{` and `}`, and `y` and DEL, which the caller tells apart (outside a
/// string, where it looks, neither is JSON).
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
fn masks(chunk: &[u8; CHUNK]) -> (u64, u64, u64) {
    use safe_arch::{bitor_m128i, cmp_eq_mask_i8_m128i, load_unaligned_m128i, move_mask_i8_m128i, set_splat_i8_m128i};
    let backslash = set_splat_i8_m128i(0x5c);
    let quote = set_splat_i8_m128i(0x22);
    let six = set_splat_i8_m128i(6);
    let brace = set_splat_i8_m128i(0x7f);
    let (mut backslashes, mut quotes, mut braces) = (0u64, 0u64, 0u64);
    for k in 0..CHUNK / 16 {
        let v = load_unaligned_m128i(chunk[16 * k..16 * (k + 1)].try_into().unwrap_or(&[0; 16]));
        let bits = |m| u64::from(move_mask_i8_m128i(m) as u16) << (16 * k);
        backslashes |= bits(cmp_eq_mask_i8_m128i(v, backslash));
        quotes |= bits(cmp_eq_mask_i8_m128i(v, quote));
        braces |= bits(cmp_eq_mask_i8_m128i(bitor_m128i(v, six), brace));
    }
    (backslashes, quotes, braces)
}

/// [`masks`] a byte at a time: elsewhere, and the reference of the tests.
#[cfg_attr(all(target_arch = "x86_64", target_feature = "sse2"), cfg(test))]
fn masks_by_bytes(chunk: &[u8; CHUNK]) -> (u64, u64, u64) {
    let (mut backslashes, mut quotes, mut braces) = (0u64, 0u64, 0u64);
    for (k, &c) in chunk.iter().enumerate() {
        backslashes |= u64::from(c == b'\\') << k;
        quotes |= u64::from(c == b'"') << k;
        braces |= u64::from(c | 6 == 0x7f) << k;
    }
    (backslashes, quotes, braces)
}

#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
fn masks(chunk: &[u8; CHUNK]) -> (u64, u64, u64) {
    masks_by_bytes(chunk)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::testing::xorshift;
    use serde_json::Value;

    /// The braces counted a byte at a time (a backslash escapes the byte after it, inside a string
    /// or not, as the masks' arithmetic reads it; only an escaped quote or backslash is not read
    /// as itself).
    fn one_object_by_bytes(raw: &[u8]) -> bool {
        if raw.first() != Some(&b'{') {
            return false;
        }
        let (mut depth, mut string, mut escaped) = (0usize, false, false);
        for (i, &c) in raw.iter().enumerate() {
            if escaped {
                escaped = false;
                if c == b'"' || c == b'\\' {
                    continue;
                }
            }
            match c {
                b'\\' => escaped = true,
                b'"' => string = !string,
                b'{' if !string => depth += 1,
                b'}' if !string => {
                    depth -= 1;
                    if depth == 0 {
                        return raw[i + 1..].iter().all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'));
                    }
                }
                _ => {}
            }
        }
        false
    }

    #[test]
    fn masks_are_the_bytes_masks() {
        let mut rng = xorshift(0x5eed_0047_0000_0001);
        let alphabet = b"{}y\x7f\"\\ a{}\xff\x80\x22\x5c";
        for _ in 0..2000 {
            let chunk: [u8; CHUNK] = std::array::from_fn(|_| alphabet[(rng() % alphabet.len() as u64) as usize]);
            assert_eq!(masks(&chunk), masks_by_bytes(&chunk));
        }
    }

    #[test]
    fn a_line_is_one_object_as_its_braces_counted_a_byte_at_a_time_say() {
        // Generated lines of JSON-ish pieces (braces, quotes and runs of backslashes inside and
        // outside strings, long enough to cross chunks): the masks' count is the count a byte at
        // a time; every line that parses as an object is one object, and one that is not cannot
        // parse.
        let pieces = [
            "{",
            "}",
            "\"",
            "\\\"",
            "\\\\",
            "\\\\\\\"",
            "\\",
            " ",
            "\t",
            ",",
            ":",
            "]",
            "[",
            "a",
            "\"k\":",
            "}{",
            "} {\"",
            "{\"",
            "\"x\"",
            "1",
            " x}",
            "\u{a0}",
            "\u{b}",
            "y",
            "\u{7f}",
            "0123456789abcdef0123456789",
        ];
        let mut rng = xorshift(0x5eed_0047_0000_0002);
        let mut next = move |n: usize| (rng() % n as u64) as usize;
        let (mut refused, mut valid, mut long) = (0, 0, 0);
        for _ in 0..200_000 {
            let line: String = (0..next(24)).map(|_| pieces[next(pieces.len())]).collect();
            let line = format!("{{\"type\":\"message\",\"data\":\"{line}");
            long += usize::from(line.len() > CHUNK);
            let one = one_object(line.as_bytes());
            assert_eq!(one, one_object_by_bytes(line.as_bytes()), "{line:?}");
            let parses = serde_json::from_str::<Value>(&line).is_ok_and(|v| v.is_object());
            valid += usize::from(parses);
            if !one {
                refused += 1;
                assert!(!parses, "{line:?}");
            }
        }
        assert!(
            refused > 1000 && valid > 100 && long > 10_000,
            "{refused} {valid} {long}"
        );
    }

    #[test]
    fn text_after_a_record_is_not_one_object() {
        let one = r#"{"type":"message","index":1,"data":[{"role":"user","content":"a }{ b } {\"c\": \"}{\"} \\"}]}"#;
        assert!(serde_json::from_str::<Value>(one).is_ok() && one_object(one.as_bytes()));
        assert!(one_object(format!("{one} \t\r\n").as_bytes()));
        // A record over many chunks, with a quote and a backslash at a chunk's end.
        let long = format!(
            r#"{{"type":"message","data":[{{"content":"{}\\\"{}\\\\"}}]}}"#,
            "x".repeat(61),
            "}".repeat(200)
        );
        assert!(serde_json::from_str::<Value>(&long).is_ok() && one_object(long.as_bytes()));
        for record in [one, long.as_str()] {
            for after in ["", " ", "\r\n\t "] {
                assert!(!one_object(format!("{record}{after}{record}").as_bytes()), "{after:?}");
            }
            for line in [
                format!("{record} x}}"),
                format!("{record}}}"),
                format!("{record}\u{a0}"),
                format!("{record}\u{a0}}}"),
                format!("{record}\u{b}"),
                format!(r#"{record} {{"a": 1}}"#),
                record[..record.len() - 1].to_string(),
            ] {
                assert!(!one_object(line.as_bytes()), "{line:?}");
            }
        }
        for line in ["", " {}", "\"a\"}", "{", "{\"}", "{\"\\\"}"] {
            assert!(!one_object(line.as_bytes()), "{line:?}");
        }
        assert!(one_object(b"{}") && one_object(b"{\"\\\\\"}"));
    }
}
