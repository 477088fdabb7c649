//! Tail importance: whether the end of a tool output holds what matters (the final result, the
//! exit status, the test summary, the root cause of a traceback), so truncation keeps it.
//!
//! The rules are a table: each has a name and the lowercase fragments that make it fire when they
//! appear in the last [`TAIL_WINDOW`] bytes of the output. The first rule that fires names the
//! decision.

/// How much of the end of an output the rules look at.
pub const TAIL_WINDOW: usize = 2_048;

pub struct TailRule {
    pub name: &'static str,
    /// Lowercase fragments; any one present in the tail fires the rule.
    pub fragments: &'static [&'static str],
}

/// The rule table, in the order the rules are tried.
pub static TAIL_RULES: &[TailRule] = &[
    TailRule {
        name: "traceback",
        fragments: &[
            "traceback (most recent call last)",
            "panicked at",
            "stack backtrace",
            "caused by:",
            "\n    at ",
            "goroutine ",
        ],
    },
    TailRule {
        name: "error",
        fragments: &[
            "error:",
            "error[",
            "exception",
            "fatal:",
            "fatal error",
            "segmentation fault",
            "command not found",
            "no such file or directory",
            "permission denied",
            "assertionerror",
        ],
    },
    TailRule {
        name: "test summary",
        fragments: &[
            " passed",
            " failed",
            "test result:",
            "tests:",
            " errors",
            "failures:",
            " skipped",
            "ran ",
        ],
    },
    TailRule {
        name: "exit status",
        fragments: &["exit code", "exit status", "exited with", "returncode", "return code"],
    },
    TailRule {
        name: "summary",
        fragments: &["total", "summary", "finished in", "completed in", "done in"],
    },
];

/// The name of the rule that makes the tail of `text` important, if any. Besides the table,
/// structured output (starting with `{` or `[` and ending with the matching bracket) keeps its
/// closing brackets: rule `"json close"`.
pub fn important_tail(text: &str) -> Option<&'static str> {
    let mut start = text.len().saturating_sub(TAIL_WINDOW);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    let tail = text[start..].to_lowercase();
    for rule in TAIL_RULES {
        if rule.fragments.iter().any(|f| tail.contains(f)) {
            return Some(rule.name);
        }
    }
    let trimmed = text.trim();
    let structured = matches!(
        (trimmed.as_bytes().first(), trimmed.as_bytes().last()),
        (Some(b'{'), Some(b'}')) | (Some(b'['), Some(b']'))
    );
    structured.then_some("json close")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_fire_on_their_fragments() {
        assert_eq!(
            important_tail("log\nTraceback (most recent call last):\n  File x\nKeyError: 'a'"),
            Some("traceback")
        );
        assert_eq!(important_tail("building...\nerror: linker failed"), Some("error"));
        assert_eq!(
            important_tail("....\n== 3 failed, 40 passed in 2.1s =="),
            Some("test summary")
        );
        assert_eq!(important_tail("make: exited with status 2"), Some("exit status"));
        assert_eq!(important_tail("{\"a\": [1, 2, 3]}"), Some("json close"));
        assert_eq!(important_tail("line 1\nline 2\nline 3"), None);
    }

    #[test]
    fn looks_only_at_the_tail() {
        let text = format!("error: early\n{}", "ordinary line\n".repeat(500));
        assert_eq!(important_tail(&text), None);
        let cjk = "漢".repeat(2000);
        assert_eq!(important_tail(&cjk), None);
    }
}
