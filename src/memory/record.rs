//! One memory record: a markdown file that starts with front matter.
//!
//! ```text
//! ---
//! name: user-role
//! description: The user is a data scientist working on observability
//! type: user
//! updated: 2026-11-30T20:45:16Z
//! ---
//! body
//! ```
//!
//! Values are plain text to the end of the line, or a JSON (YAML double-quoted) string when they
//! start with `"`, or a single-quoted string (`''` for a quote). Unknown keys are allowed.

use std::fmt;

/// The longest record file the index reads (bytes); the store refuses to write larger ones.
pub const MAX_RECORD_BYTES: u64 = 100_000;
/// The longest name (characters).
pub const MAX_NAME_CHARS: usize = 100;
/// The longest description (characters).
pub const MAX_DESCRIPTION_CHARS: usize = 300;

/// What a record is about, in the order the index lists them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// Who the user is and how they like to work.
    User,
    /// Corrections and confirmations, with their reason.
    Feedback,
    /// Goals and context that cannot be derived from the code or git.
    Project,
    /// Where external information lives.
    Reference,
}

impl Kind {
    pub const ALL: [Kind; 4] = [Kind::User, Kind::Feedback, Kind::Project, Kind::Reference];
    pub const EXPECTED: &'static str = "\"user\", \"feedback\", \"project\", \"reference\"";

    pub fn name(self) -> &'static str {
        match self {
            Kind::User => "user",
            Kind::Feedback => "feedback",
            Kind::Project => "project",
            Kind::Reference => "reference",
        }
    }

    pub fn parse(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == s)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A parsed and validated record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// The record's name: the file name without `.md`, a slug.
    pub name: String,
    pub description: String,
    pub kind: Kind,
    /// The `updated` value as written (an ISO 8601 date or date-time), when present.
    pub updated: Option<String>,
    /// The file name inside the memory directory.
    pub file: String,
    /// The text after the front matter.
    pub body: String,
    /// Size of the file in bytes.
    pub bytes: u64,
}

/// Whether `name` is a record name: 1 to 100 of `a-z 0-9 - _`, starting with a letter or digit.
pub fn is_slug(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= MAX_NAME_CHARS
        && b[0].is_ascii_alphanumeric()
        && !b[0].is_ascii_uppercase()
        && b.iter()
            .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-' || c == b'_')
}

/// Front matter fields, in file order.
pub type Fields = Vec<(String, String)>;

/// The front matter's fields in file order, and the body. Errors say what is wrong and on which
/// line of the file.
pub fn split_front_matter(text: &str) -> Result<(Fields, &str), String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(mut rest) = text.strip_prefix("---\n").or_else(|| text.strip_prefix("---\r\n")) else {
        return Err("no front matter (the file must start with a line \"---\")".into());
    };
    let mut fields: Vec<(String, String)> = Vec::new();
    let mut line_no = 1;
    loop {
        line_no += 1;
        if rest.is_empty() {
            return Err("front matter is not closed (no line \"---\" after it)".into());
        }
        let (line, next) = match rest.find('\n') {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => (rest, ""),
        };
        rest = next;
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.trim_end() == "---" {
            return Ok((fields, rest));
        }
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            return Err(format!("line {line_no}: expected \"key: value\", got {:?}", clip(line)));
        };
        let key = key.trim();
        if key.is_empty() || !key.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-') {
            return Err(format!("line {line_no}: bad key {:?}", clip(key)));
        }
        let value = unquote(value.trim()).map_err(|e| format!("line {line_no}: {key}: {e}"))?;
        if fields.iter().any(|(k, _)| k == key) {
            return Err(format!("line {line_no}: {key} appears twice"));
        }
        fields.push((key.to_owned(), value));
    }
}

fn clip(s: &str) -> String {
    s.chars().take(60).collect()
}

fn unquote(v: &str) -> Result<String, String> {
    if v.starts_with('"') {
        serde_json::from_str::<String>(v).map_err(|_| "unterminated or invalid double-quoted value".to_owned())
    } else if let Some(inner) = v.strip_prefix('\'') {
        match inner.strip_suffix('\'') {
            Some(s) if !s.replace("''", "").contains('\'') => Ok(s.replace("''", "'")),
            _ => Err("unterminated or invalid single-quoted value".to_owned()),
        }
    } else {
        Ok(v.to_owned())
    }
}

fn is_iso_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 10
        && b[..4].iter().all(u8::is_ascii_digit)
        && b[4] == b'-'
        && b[5..7].iter().all(u8::is_ascii_digit)
        && b[7] == b'-'
        && b[8..10].iter().all(u8::is_ascii_digit)
        && (b.len() == 10 || b[10] == b'T' || b[10] == b' ')
}

fn one_line(field: &str, value: &str, max: usize) -> Result<(), String> {
    if value.trim().is_empty() {
        return Err(format!("{field} is empty"));
    }
    // U+2028 and U+2029 are line breaks to many readers (not control characters to Rust).
    if value
        .chars()
        .any(|c| c.is_control() || matches!(c, '\u{2028}' | '\u{2029}'))
    {
        return Err(format!("{field} holds a line break or control character"));
    }
    // A bidirectional override or isolate reorders what a reader sees of the rest of the line
    // (the memory index in a prompt, `agentcontext memory index` in a terminal).
    if value.chars().any(is_bidi_control) {
        return Err(format!("{field} holds a bidirectional control character"));
    }
    let n = value.chars().count();
    if n > max {
        return Err(format!("{field} is {n} characters (at most {max})"));
    }
    Ok(())
}

/// The characters that change the direction of the text after them (embeddings, overrides,
/// isolates and marks): U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069.
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Parse and validate the record in file `file` (its name inside the memory directory).
pub fn parse(file: &str, text: &str, bytes: u64) -> Result<Record, String> {
    let stem = file.strip_suffix(".md").unwrap_or(file);
    if !is_slug(stem) {
        return Err("the file name is not a record name (a-z, 0-9, - and _, then .md)".into());
    }
    let (fields, body) = split_front_matter(text)?;
    let get = |key: &str| fields.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str());
    let name = get("name").ok_or("front matter has no name")?;
    if name != stem {
        return Err(format!("name {:?} does not match the file name {file}", clip(name)));
    }
    let description = get("description").ok_or("front matter has no description")?;
    one_line("description", description, MAX_DESCRIPTION_CHARS)?;
    let kind_text = get("type").ok_or("front matter has no type")?;
    let kind =
        Kind::parse(kind_text).ok_or_else(|| format!("type {:?} is not one of {}", clip(kind_text), Kind::EXPECTED))?;
    let updated = get("updated");
    if let Some(u) = updated
        && !is_iso_date(u)
    {
        return Err(format!("updated {:?} is not an ISO 8601 date", clip(u)));
    }
    Ok(Record {
        name: name.to_owned(),
        description: description.to_owned(),
        kind,
        updated: updated.map(str::to_owned),
        file: file.to_owned(),
        body: body.to_owned(),
        bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "---\nname: user-role\ndescription: \"Data scientist: observability\"\ntype: user\n\
                        updated: 2026-11-30T20:45:16Z\n---\nThe body.\n";

    #[test]
    fn parses_a_record() {
        let r = parse("user-role.md", GOOD, 10).unwrap();
        assert_eq!(r.name, "user-role");
        assert_eq!(r.description, "Data scientist: observability");
        assert_eq!(r.kind, Kind::User);
        assert_eq!(r.body, "The body.\n");
        assert_eq!(r.updated.as_deref(), Some("2026-11-30T20:45:16Z"));
    }

    #[test]
    fn refuses_a_bidirectional_control_in_the_description() {
        for c in ['\u{202E}', '\u{2066}', '\u{200F}', '\u{061C}'] {
            let text = format!("---\nname: a\ndescription: ok{c}txt\ntype: user\n---\n");
            assert_eq!(
                parse("a.md", &text, 10).unwrap_err(),
                "description holds a bidirectional control character"
            );
        }
        assert!(
            parse(
                "a.md",
                "---\nname: a\ndescription: \u{5d0}\u{5d1} ok\ntype: user\n---\n",
                10
            )
            .is_ok()
        );
    }

    #[test]
    fn reports_what_is_wrong() {
        let cases = [
            ("no front matter", "hello"),
            ("not closed", "---\nname: a\n"),
            ("no type", "---\nname: a\ndescription: d\n---\n"),
            ("not one of", "---\nname: a\ndescription: d\ntype: misc\n---\n"),
            ("appears twice", "---\nname: a\nname: a\n---\n"),
            ("does not match", "---\nname: b\ndescription: d\ntype: user\n---\n"),
            (
                "ISO 8601",
                "---\nname: a\ndescription: d\ntype: user\nupdated: yesterday\n---\n",
            ),
            ("description is empty", "---\nname: a\ndescription:\ntype: user\n---\n"),
            ("double-quoted", "---\nname: a\ndescription: \"d\ntype: user\n---\n"),
            ("key: value", "---\nname: a\njunk\n---\n"),
        ];
        for (want, text) in cases {
            let err = parse("a.md", text, 1).unwrap_err();
            assert!(err.contains(want), "{want:?} not in {err:?}");
        }
        assert!(parse("A B.md", GOOD, 1).unwrap_err().contains("file name"));
    }

    #[test]
    fn slugs() {
        for ok in ["a", "user-role", "x_1", "0abc"] {
            assert!(is_slug(ok), "{ok}");
        }
        for bad in ["", "-a", "A", "a/b", "..", "a.b", "é", &"a".repeat(101)] {
            assert!(!is_slug(bad), "{bad}");
        }
    }
}
