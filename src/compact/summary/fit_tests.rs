use super::fit::{FitInput, Fitted, SECTIONS, fit, render};
use crate::tokens::Encoding;

const ENC: Encoding = Encoding::O200k;

fn input<'a>(latest: Option<&'a str>, sections: &[(usize, Vec<&'a str>)]) -> FitInput<'a> {
    let mut all = vec![Vec::new(); SECTIONS.len()];
    for (n, lines) in sections {
        all[*n] = lines.clone();
    }
    FitInput {
        latest,
        sections: all,
        ..FitInput::default()
    }
}

fn fits(f: Fitted) -> (String, usize) {
    match f {
        Fitted::Fits(text, tokens) => (text, tokens),
        Fitted::Over(text) => panic!("over: {text}"),
    }
}

#[test]
fn an_empty_summary_says_so() {
    let (text, tokens) = fits(fit(&input(None, &[]), 100, ENC).unwrap());
    assert_eq!(text, "## Current state\n- Nothing to summarize.");
    assert_eq!(tokens, ENC.count(&text));
}

#[test]
fn sections_render_in_order_and_within_the_cap() {
    let lines = vec!["- a.py", "- b.py"];
    let i = input(
        Some("Fix the tests."),
        &[(2, vec!["- 3 messages"]), (4, lines.clone()), (1, vec!["- hello"])],
    );
    let (text, tokens) = fits(fit(&i, 200, ENC).unwrap());
    assert_eq!(
        text,
        "## Latest request (verbatim)\nFix the tests.\n\n## User requests and constraints (latest first)\n- hello\n\n\
         ## Current state\n- 3 messages\n\n## Files modified\n- a.py\n- b.py"
    );
    assert!(tokens <= 200);
}

#[test]
fn a_request_cut_to_head_and_tail_is_not_headed_verbatim() {
    let long = (0..400)
        .map(|k| format!("step {k} of the request"))
        .collect::<Vec<_>>()
        .join("\n");
    let (text, _) = fits(fit(&input(Some(&long), &[]), 200, ENC).unwrap());
    assert!(
        text.starts_with("## Latest request (cut: head and tail)\nstep 0 of"),
        "{text}"
    );
    assert!(text.contains("step 399 of the request") && !text.contains("step 200 of"));
    let (whole, _) = fits(fit(&input(Some("Fix the tests."), &[]), 200, ENC).unwrap());
    assert_eq!(whole, "## Latest request (verbatim)\nFix the tests.");
    // A request cut by an earlier summary stays headed cut when this one keeps it whole.
    let again = FitInput {
        latest_cut: true,
        ..input(Some("Fix [...] tests."), &[])
    };
    let (text, tokens) = fits(fit(&again, 200, ENC).unwrap());
    assert_eq!(text, "## Latest request (cut: head and tail)\nFix [...] tests.");
    assert_eq!(tokens, ENC.count(&text));
}

#[test]
fn a_small_cap_drops_later_lines_and_the_result_fits() {
    let paths: Vec<String> = (0..200).map(|k| format!("- src/module_{k}/file_{k}.rs")).collect();
    let refs: Vec<&str> = paths.iter().map(String::as_str).collect();
    let i = input(Some("Refactor the modules"), &[(6, refs.clone()), (5, refs)]);
    let (text, tokens) = fits(fit(&i, 120, ENC).unwrap());
    assert!(tokens <= 120, "{tokens}");
    assert!(text.contains("- src/module_0/file_0.rs"));
    assert!(!text.contains("module_199"));
}

#[test]
fn a_path_named_already_takes_no_second_line() {
    let i = input(
        None,
        &[(4, vec!["- a.py"]), (5, vec!["- a.py", "- b.py"]), (6, vec!["- a.py"])],
    );
    let (text, _) = fits(fit(&i, 500, ENC).unwrap());
    assert_eq!(text.matches("- a.py").count(), 1, "{text}");
    assert!(text.contains("## Files read\n- b.py"));
    assert!(!text.contains("## Paths named"));
}

#[test]
fn what_the_ledger_holds_is_left_out_when_far_over_the_cap() {
    let long: Vec<String> = (0..100).map(|k| format!("- {}", "word ".repeat(30 + k))).collect();
    let mut lines: Vec<&str> = long.iter().map(String::as_str).collect();
    let mut i = input(None, &[(4, vec!["- kept.py", "- held.py"])]);
    lines.truncate(100);
    i.sections[11] = lines;
    i.held = Some("held.py is in the ledger");
    let (text, _) = fits(fit(&i, 60, ENC).unwrap());
    assert!(text.contains("- kept.py") && !text.contains("held.py"), "{text}");
}

#[test]
fn constraints_are_taken_beyond_the_users_share_and_put_back_in_order() {
    let asks: Vec<String> = (0..40)
        .map(|k| format!("- request number {k} {}", "please ".repeat(20)))
        .collect();
    let mut refs: Vec<&str> = asks.iter().map(String::as_str).collect();
    refs.push("- never touch the database");
    let mut i = input(None, &[(1, refs.clone())]);
    i.constraints = vec![false; refs.len()];
    i.constraints[40] = true;
    let (text, _) = fits(fit(&i, 300, ENC).unwrap());
    assert!(text.contains("- never touch the database"));
    assert!(text.find("request number 0").unwrap() < text.find("never touch").unwrap());
}

#[test]
fn a_long_latest_request_is_cut_to_head_and_tail() {
    let ask = format!("START {} END", "lorem ipsum dolor ".repeat(400));
    let i = input(Some(&ask), &[]);
    let (text, tokens) = fits(fit(&i, 300, ENC).unwrap());
    assert!(tokens <= 300);
    assert!(text.contains("START") && text.contains("END") && text.len() < ask.len());
}

#[test]
fn render_joins_sections() {
    let mut chosen = vec![Vec::new(); SECTIONS.len()];
    chosen[13] = vec!["- go".to_owned()];
    assert_eq!(render(&chosen, false), "## Next step\n- go");
}

/// Python's search of the said text for a fact between breaks (the fit's `says` before it read
/// a set of words), over texts said one after another.
fn says_by_search(said: &[&str], fact: &str) -> bool {
    use super::text::word_break;
    let whole: String = said.iter().flat_map(|t| ["\n", t]).collect();
    if fact.is_empty() || fact.chars().any(word_break) {
        return false;
    }
    let stripped = !fact.ends_with(['.', ':', '!', '?']);
    let mut from = 0;
    while let Some(off) = whole[from..].find(fact) {
        let i = from + off;
        if i == 0 || whole[..i].chars().next_back().is_some_and(word_break) {
            let mut j = i + fact.len();
            while stripped && j < whole.len() && matches!(whole.as_bytes()[j], b'.' | b':' | b'!' | b'?') {
                j += 1;
            }
            if j == whole.len() || whole[j..].chars().next().is_some_and(word_break) {
                return true;
            }
        }
        from = i + whole[i..].chars().next().map_or(1, char::len_utf8);
    }
    false
}

#[test]
fn a_fact_is_said_exactly_when_the_search_finds_it_between_breaks() {
    let alphabet = [
        "a", "b", "é", "1", ".", ":", ";", "!", "?", " ", "\n", "\u{a0}", "\"", "(", ")", ",", "-", "/", "\x1c",
    ];
    let mut next = crate::compact::testing::xorshift(27);
    for _ in 0..3000 {
        let i = FitInput::default();
        let mut f = super::fit::Fitter::new(&i, ENC);
        let mut said: Vec<String> = Vec::new();
        for _ in 0..=(next() % 4) {
            let text: String = (0..next() % 10).map(|_| alphabet[(next() % 19) as usize]).collect();
            f.say(&text);
            said.push(text);
            let refs: Vec<&str> = said.iter().map(String::as_str).collect();
            for _ in 0..5 {
                let fact: String = (0..next() % 4).map(|_| alphabet[(next() % 7) as usize]).collect();
                if !fact.is_empty() {
                    assert_eq!(f.says(&fact), says_by_search(&refs, &fact), "{said:?} {fact:?}");
                }
            }
        }
    }
}
