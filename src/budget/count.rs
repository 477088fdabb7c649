//! Counting lines and characters over large byte slices, fast: the loops are written so the
//! compiler turns them into wide SIMD compares (byte lanes accumulated in u8, flushed before they
//! can overflow).

/// Bytes per lane block; 32 covers SSE2 (two registers) and AVX2 (one).
const LANES: usize = 32;
/// Blocks accumulated in u8 lanes before they are flushed (255 is the most a u8 lane can hold).
const FLUSH_BLOCKS: usize = 255;

/// Number of `\n` bytes and of UTF-8 characters (bytes that are not continuation bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TextCounts {
    pub newlines: usize,
    pub chars: usize,
}

/// Count newlines and characters of `bytes` (which may start or end inside a character; only
/// non-continuation bytes count as characters).
pub fn text_counts(bytes: &[u8]) -> TextCounts {
    let mut out = TextCounts::default();
    let mut blocks = bytes.chunks_exact(LANES);
    let mut pending = 0usize;
    let mut nl = [0u8; LANES];
    let mut ch = [0u8; LANES];
    for block in &mut blocks {
        for i in 0..LANES {
            nl[i] += u8::from(block[i] == b'\n');
            // Continuation bytes are 0b10xx_xxxx.
            ch[i] += u8::from(block[i] & 0xC0 != 0x80);
        }
        pending += 1;
        if pending == FLUSH_BLOCKS {
            flush(&mut nl, &mut ch, &mut out);
            pending = 0;
        }
    }
    flush(&mut nl, &mut ch, &mut out);
    for &b in blocks.remainder() {
        out.newlines += usize::from(b == b'\n');
        out.chars += usize::from(b & 0xC0 != 0x80);
    }
    out
}

fn flush(nl: &mut [u8; LANES], ch: &mut [u8; LANES], out: &mut TextCounts) {
    out.newlines += nl.iter().map(|&n| usize::from(n)).sum::<usize>();
    out.chars += ch.iter().map(|&n| usize::from(n)).sum::<usize>();
    *nl = [0; LANES];
    *ch = [0; LANES];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_obvious_count() {
        let samples = [
            String::new(),
            "a\nb\n".into(),
            "\n".repeat(10_000),
            "漢字\n🎉 é\r\n".repeat(3_000),
            "x".repeat(8_161),
        ];
        for s in &samples {
            let c = text_counts(s.as_bytes());
            assert_eq!(c.newlines, s.matches('\n').count());
            assert_eq!(c.chars, s.chars().count());
        }
    }
}
