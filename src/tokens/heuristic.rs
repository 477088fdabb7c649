//! A fast token estimate for text, aware that prose, code, digits, whitespace and non-Latin
//! scripts tokenize very differently.
//!
//! One pass over the bytes sorts each into a class through a 256-entry table and counts bytes and
//! runs per class. The estimate is a linear function of those counts whose weights were fitted
//! (least squares on relative error) against exact counts over the shared transcript corpus; see
//! `benches/calibrate_heuristic.py` for the fit and the README for the measured error.

use super::Encoding;

/// Byte classes.
const LETTER: u8 = 0;
const DIGIT: u8 = 1;
const PUNCT: u8 = 2;
const SPACE: u8 = 3;
const NEWLINE: u8 = 4;
const CONT: u8 = 5;
/// Lead byte of a 2-byte character (Latin extensions, Greek, Cyrillic, Hebrew, Arabic, ...).
const LEAD2: u8 = 6;
/// Lead byte of a 3-byte character in U+3000..U+DFFF (CJK, kana, Hangul).
const LEAD_CJK: u8 = 7;
/// Lead byte of any other 3-byte character (symbols, box drawing, Indic scripts, ...).
const LEAD3: u8 = 8;
/// Lead byte of a 4-byte character (emoji, rare CJK).
const LEAD4: u8 = 9;
const CLASSES: usize = 10;

static CLASS: [u8; 256] = {
    let mut t = [PUNCT; 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        t[i] = if b.is_ascii_alphabetic() {
            LETTER
        } else if b.is_ascii_digit() {
            DIGIT
        } else if b == b'\n' || b == b'\r' {
            NEWLINE
        } else if b == b' ' || b == b'\t' || b == 0x0b || b == 0x0c {
            SPACE
        } else if b < 0x80 {
            PUNCT
        } else if b < 0xC0 {
            CONT
        } else if b < 0xE0 {
            LEAD2
        } else if b >= 0xE3 && b <= 0xED {
            LEAD_CJK
        } else if b < 0xF0 {
            LEAD3
        } else {
            LEAD4
        };
        i += 1;
    }
    t
};

/// Byte and run counts per class.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Features {
    pub bytes: [u64; CLASSES],
    pub runs: [u64; CLASSES],
}

/// Classes whose runs are counted, each with its field in the run accumulator.
const RUN_CLASSES: [u8; 4] = [LETTER, DIGIT, PUNCT, SPACE];
/// Bits per packed counter; a chunk is at most `2^FIELD - 1` bytes so no field overflows.
const FIELD: u32 = 6;
const CHUNK: usize = (1 << FIELD) - 1;
const FIELD_MASK: u64 = (1 << FIELD) - 1;

/// Per byte: a 1 in the packed field of its class.
static BYTE_INC: [u64; 256] = {
    let mut t = [0u64; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = 1 << (CLASS[i] as u32 * FIELD);
        i += 1;
    }
    t
};

/// Per (class of the previous byte, byte): a 1 in the packed run field of the byte's class when
/// the byte starts a run of a counted class.
static RUN_INC: [u64; CLASSES * 256] = {
    let mut t = [0u64; CLASSES * 256];
    let mut prev = 0;
    while prev < CLASSES {
        let mut b = 0;
        while b < 256 {
            let c = CLASS[b];
            let mut k = 0;
            while k < RUN_CLASSES.len() {
                if RUN_CLASSES[k] == c && c as usize != prev {
                    t[prev * 256 + b] = 1 << (k as u32 * FIELD);
                }
                k += 1;
            }
            b += 1;
        }
        prev += 1;
    }
    t
};

impl Features {
    /// Count bytes and runs per class in one pass.
    ///
    /// The counters live packed in two registers (6 bits per class) and are flushed every 63
    /// bytes, so the loop has no store-to-load dependency; the class of the previous byte is
    /// looked up from the byte itself, so no lookup waits on the one before.
    pub fn of(text: &str) -> Features {
        let bytes = text.as_bytes();
        let mut out = Features::default();
        // A class other than the first byte's, so the first byte starts a run.
        let mut prev = match bytes.first() {
            Some(&b) if CLASS[b as usize] == LETTER => DIGIT as usize,
            _ => LETTER as usize,
        };
        for chunk in bytes.chunks(CHUNK) {
            let (mut counts, mut runs) = (0u64, 0u64);
            for &b in chunk {
                counts += BYTE_INC[b as usize];
                runs += RUN_INC[prev * 256 + b as usize];
                prev = CLASS[b as usize] as usize;
            }
            for c in 0..CLASSES {
                out.bytes[c] += (counts >> (c as u32 * FIELD)) & FIELD_MASK;
            }
            for (k, &c) in RUN_CLASSES.iter().enumerate() {
                out.runs[c as usize] += (runs >> (k as u32 * FIELD)) & FIELD_MASK;
            }
        }
        out
    }

    /// The plain one-counter-per-class loop; the reference for [`Features::of`] in tests.
    #[cfg(test)]
    fn reference(text: &str) -> Features {
        let mut bytes = [0u64; CLASSES];
        let mut runs = [0u64; CLASSES];
        let mut prev = u8::MAX;
        for &b in text.as_bytes() {
            let c = CLASS[b as usize];
            bytes[c as usize] += 1;
            if RUN_CLASSES.contains(&c) {
                runs[c as usize] += u64::from(c != prev);
            }
            prev = c;
        }
        Features { bytes, runs }
    }

    /// The regressors of the linear model, in the order of [`Profile::weights`].
    pub fn regressors(&self) -> [f64; WEIGHTS] {
        let b = |c: u8| self.bytes[c as usize] as f64;
        let r = |c: u8| self.runs[c as usize] as f64;
        [
            r(LETTER),
            b(LETTER),
            r(DIGIT),
            b(DIGIT),
            b(PUNCT),
            r(PUNCT),
            r(SPACE),
            b(NEWLINE),
            b(LEAD2),
            b(LEAD_CJK),
            b(LEAD3),
            b(LEAD4),
        ]
    }
}

/// Number of weights in a [`Profile`].
pub const WEIGHTS: usize = 12;

/// The weights of the estimate for one target tokenizer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Profile {
    /// Per regressor: letter runs (words), letters, digit runs, digits, punctuation bytes,
    /// punctuation runs, space runs, newlines, 2-byte characters, CJK characters, other 3-byte
    /// characters, 4-byte characters.
    pub weights: [f64; WEIGHTS],
}

impl Profile {
    /// Fitted against `o200k_base`.
    pub const O200K: Profile = Profile {
        weights: [
            0.3523, 0.0613, 1.2697, 0.2171, 0.2182, 0.6651, 0.4092, 0.7986, 0.2284, 0.6718, 0.7972, 1.5432,
        ],
    };
    /// Fitted against `cl100k_base`.
    pub const CL100K: Profile = Profile {
        weights: [
            0.4014, 0.0517, 1.2529, 0.2176, 0.2125, 0.6618, 0.4192, 0.7948, 0.3936, 0.9879, 0.9110, 1.7031,
        ],
    };

    /// The profile for a target encoding; the heuristic itself targets `o200k_base`.
    pub fn for_encoding(enc: Encoding) -> Profile {
        match enc {
            Encoding::Cl100k => Profile::CL100K,
            Encoding::O200k | Encoding::Heuristic | Encoding::Approximate => Profile::O200K,
        }
    }

    pub fn apply(&self, f: &Features) -> usize {
        let x = f.regressors();
        let mut est = 0.0;
        for (w, v) in self.weights.iter().zip(x) {
            est += w * v;
        }
        let est = est.round() as usize;
        // Non-empty text is at least one token.
        if est == 0 && f.bytes.iter().any(|&n| n > 0) {
            1
        } else {
            est
        }
    }
}

/// Estimate the tokens of `text` under `profile`.
pub fn estimate(text: &str, profile: Profile) -> usize {
    profile.apply(&Features::of(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_count_bytes_and_runs() {
        let f = Features::of("ab  12\nx");
        assert_eq!(f.bytes[LETTER as usize], 3);
        assert_eq!(f.runs[LETTER as usize], 2);
        assert_eq!(f.runs[SPACE as usize], 1);
        assert_eq!(f.bytes[DIGIT as usize], 2);
        assert_eq!(f.bytes[NEWLINE as usize], 1);
        assert_eq!(f.runs[NEWLINE as usize], 0, "newline runs are not counted");
        let cjk = Features::of("漢字");
        assert_eq!(cjk.bytes[LEAD_CJK as usize], 2);
        assert_eq!(cjk.bytes[CONT as usize], 4);
    }

    #[test]
    fn packed_counters_match_the_plain_loop() {
        let samples = [
            String::new(),
            "a".into(),
            "x".repeat(200),
            "  12 ab,,\n\n漢字 🎉 é".repeat(50),
            (0..3000u32).filter_map(char::from_u32).collect::<String>(),
            "abc def ghi jkl mno pqr stu vwx yz ".repeat(40),
        ];
        for s in &samples {
            assert_eq!(Features::of(s), Features::reference(s), "{s:?}");
        }
    }

    #[test]
    fn empty_is_zero_and_text_is_at_least_one() {
        assert_eq!(estimate("", Profile::O200K), 0);
        assert_eq!(estimate(".", Profile::O200K), 1);
    }
}
