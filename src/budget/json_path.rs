//! A small JSONPath subset for drilling into a stored JSON result: `$` (the root), `.key`,
//! `['key']` / `["key"]`, `[n]` (negative counts from the end) and `[*]` / `.*` (every element
//! or member). `query` answers with the selected value: a string as its own text, anything else
//! as indented JSON; a path with a wildcard answers with the array of every match.

use std::fmt::Write as _;

use serde_json::Value;

use crate::error::{Error, Result};

/// One step of a path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    Key(String),
    Index(i64),
    Wildcard,
}

fn bad(path: &str, reason: impl Into<String>) -> Error {
    Error::JsonPath {
        path: path.to_owned(),
        reason: reason.into(),
    }
}

/// The steps of `path`. The leading `$` may be left out (`items[0]` is `$.items[0]`).
pub fn parse(path: &str) -> Result<Vec<Step>> {
    let chars: Vec<char> = path.trim().chars().collect();
    let mut at = 0;
    if chars.first() == Some(&'$') {
        at = 1;
    } else if chars.first().is_some_and(|c| is_name_char(*c)) {
        // A bare first key.
        let start = at;
        while at < chars.len() && is_name_char(chars[at]) {
            at += 1;
        }
        let mut steps = vec![Step::Key(chars[start..at].iter().collect())];
        steps.extend(parse_rest(path, &chars, at)?);
        return Ok(steps);
    }
    parse_rest(path, &chars, at)
}

fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '-'
}

fn parse_rest(path: &str, chars: &[char], mut at: usize) -> Result<Vec<Step>> {
    let mut steps = Vec::new();
    while at < chars.len() {
        match chars[at] {
            '.' => {
                at += 1;
                if chars.get(at) == Some(&'*') {
                    steps.push(Step::Wildcard);
                    at += 1;
                    continue;
                }
                let start = at;
                while at < chars.len() && is_name_char(chars[at]) {
                    at += 1;
                }
                if start == at {
                    return Err(bad(
                        path,
                        format!("a key name is expected after '.' at character {start}"),
                    ));
                }
                steps.push(Step::Key(chars[start..at].iter().collect()));
            }
            '[' => {
                at += 1;
                match chars.get(at) {
                    Some(&q @ ('\'' | '"')) => {
                        at += 1;
                        let mut key = String::new();
                        loop {
                            match chars.get(at) {
                                None => return Err(bad(path, "a quoted key is not closed")),
                                Some('\\') if chars.get(at + 1).is_some() => {
                                    key.push(chars[at + 1]);
                                    at += 2;
                                }
                                Some(&c) if c == q => {
                                    at += 1;
                                    break;
                                }
                                Some(&c) => {
                                    key.push(c);
                                    at += 1;
                                }
                            }
                        }
                        steps.push(Step::Key(key));
                    }
                    Some('*') => {
                        at += 1;
                        steps.push(Step::Wildcard);
                    }
                    _ => {
                        let start = at;
                        if chars.get(at) == Some(&'-') {
                            at += 1;
                        }
                        while at < chars.len() && chars[at].is_ascii_digit() {
                            at += 1;
                        }
                        let digits: String = chars[start..at].iter().collect();
                        let index = digits.parse::<i64>().map_err(|_| {
                            bad(
                                path,
                                format!("an index, a quoted key or * is expected at character {start}"),
                            )
                        })?;
                        steps.push(Step::Index(index));
                    }
                }
                if chars.get(at) != Some(&']') {
                    return Err(bad(path, format!("']' is expected at character {at}")));
                }
                at += 1;
            }
            c => return Err(bad(path, format!("unexpected {c:?} at character {at}"))),
        }
    }
    Ok(steps)
}

/// Every value `steps` selects in `root`, in document order, each with its concrete path.
/// A step that does not apply (a missing key, an index out of range) is an error naming the
/// step, unless it is below a wildcard (then that branch simply has no match).
pub fn select<'v>(path: &str, root: &'v Value, steps: &[Step]) -> Result<Vec<&'v Value>> {
    let mut current = vec![root];
    let mut seen = String::from("$");
    let mut wild = false;
    for step in steps {
        let mut next = Vec::new();
        for value in current {
            match (step, value) {
                (Step::Key(k), Value::Object(map)) => match map.get(k) {
                    Some(v) => next.push(v),
                    None if wild => {}
                    None => return Err(bad(path, format!("{seen} has no key {k:?}"))),
                },
                (Step::Index(i), Value::Array(items)) => {
                    let len = i64::try_from(items.len()).unwrap_or(i64::MAX);
                    let at = if *i < 0 { len + i } else { *i };
                    match usize::try_from(at).ok().and_then(|a| items.get(a)) {
                        Some(v) => next.push(v),
                        None if wild => {}
                        None => {
                            return Err(bad(
                                path,
                                format!("{seen} has {len} elements; index {i} is out of range"),
                            ));
                        }
                    }
                }
                (Step::Wildcard, Value::Array(items)) => next.extend(items.iter()),
                (Step::Wildcard, Value::Object(map)) => next.extend(map.values()),
                _ if wild => {}
                (_, v) => return Err(bad(path, format!("{seen} is {}, not {}", kind(v), wants(step)))),
            }
        }
        match step {
            Step::Key(k) => {
                let _ = write!(seen, "[{k:?}]");
            }
            Step::Index(i) => {
                let _ = write!(seen, "[{i}]");
            }
            Step::Wildcard => {
                seen.push_str("[*]");
                wild = true;
            }
        }
        current = next;
    }
    Ok(current)
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn wants(step: &Step) -> &'static str {
    match step {
        Step::Key(_) => "an object",
        Step::Index(_) => "an array",
        Step::Wildcard => "an array or an object",
    }
}

/// The value at `path` in the JSON `text`: a string as its own text, anything else as JSON
/// indented by two spaces; a path with a wildcard gives the JSON array of every match.
pub fn query(text: &str, path: &str) -> Result<String> {
    let steps = parse(path)?;
    let root: Value = serde_json::from_str(text).map_err(|e| bad(path, format!("the text is not JSON ({e})")))?;
    let found = select(path, &root, &steps)?;
    let many = steps.contains(&Step::Wildcard);
    let out = if many {
        serde_json::to_string_pretty(&found)
    } else {
        match found.first() {
            Some(Value::String(s)) => return Ok(s.clone()),
            Some(v) => serde_json::to_string_pretty(v),
            None => return Err(bad(path, "nothing matches")),
        }
    };
    out.map_err(|e| bad(path, e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = r#"{"items":[{"name":"a","n":1},{"name":"b","n":2},{"name":"c"}],"odd key":{"x":[true,null]},"s":"line1\nline2"}"#;

    #[test]
    fn parses_the_subset() {
        assert_eq!(
            parse("$.items[3].name").unwrap(),
            vec![Step::Key("items".into()), Step::Index(3), Step::Key("name".into())]
        );
        assert_eq!(
            parse("$['odd key'][\"x\"]").unwrap(),
            vec![Step::Key("odd key".into()), Step::Key("x".into())]
        );
        assert_eq!(
            parse("items[-1]").unwrap(),
            vec![Step::Key("items".into()), Step::Index(-1)]
        );
        assert_eq!(parse("$.items[*].name").unwrap()[1], Step::Wildcard);
        assert_eq!(parse("$.*").unwrap(), vec![Step::Wildcard]);
        assert_eq!(parse("$").unwrap(), vec![]);
        assert_eq!(parse("$['it\\'s']").unwrap(), vec![Step::Key("it's".into())]);
    }

    #[test]
    fn refuses_what_it_does_not_know() {
        for p in ["$.", "$[", "$[1", "$['a'", "$[x]", "$..a", "$ .a", "$[1.5]", "$?(@.a)"] {
            let err = parse(p).unwrap_err().to_string();
            assert!(err.starts_with(&format!("JSON path {p:?}: ")), "{p}: {err}");
        }
    }

    #[test]
    fn selects_values() {
        assert_eq!(query(DOC, "$.items[1].name").unwrap(), "b");
        assert_eq!(query(DOC, "$.items[-1].name").unwrap(), "c");
        assert_eq!(query(DOC, "$.items[0].n").unwrap(), "1");
        assert_eq!(query(DOC, "$['odd key'].x").unwrap(), "[\n  true,\n  null\n]");
        assert_eq!(query(DOC, "$.s").unwrap(), "line1\nline2");
        assert_eq!(
            query(DOC, "$.items[*].name").unwrap(),
            "[\n  \"a\",\n  \"b\",\n  \"c\"\n]"
        );
        // Below a wildcard a missing key is no match, not an error.
        assert_eq!(query(DOC, "$.items[*].n").unwrap(), "[\n  1,\n  2\n]");
        let whole: Value = serde_json::from_str(&query(DOC, "$").unwrap()).unwrap();
        assert_eq!(whole, serde_json::from_str::<Value>(DOC).unwrap());
    }

    #[test]
    fn says_why_nothing_is_selected() {
        let e = |p: &str| query(DOC, p).unwrap_err().to_string();
        assert!(e("$.items[3].name").contains("$[\"items\"] has 3 elements; index 3 is out of range"));
        assert!(e("$.items[-4]").contains("index -4 is out of range"));
        assert!(e("$.nope").contains("$ has no key \"nope\""));
        assert!(e("$.s[0]").contains("$[\"s\"] is a string, not an array"));
        assert!(e("$.items.name").contains("is an array, not an object"));
        assert!(
            query("not json", "$")
                .unwrap_err()
                .to_string()
                .contains("the text is not JSON")
        );
        assert!(query(DOC, &format!("$[{}]", "9".repeat(30))).is_err());
    }
}
