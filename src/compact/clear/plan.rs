//! The one plan of which tool results clearing replaces and what each frees, generic over where
//! the messages come from ([`ClearSource`]): parsed messages (`Conversation`, `trim_messages`'s
//! general path) and the binding's skeleton of a list of plain Chat dicts (its fast path) read
//! the same few things and share every decision — the candidates, skipping placeholders, the
//! placeholder and its count, and the `clear_at_least` rollback.

use std::borrow::Cow;

use std::collections::BTreeSet;

use super::{ClearOptions, Cleared, Described, Placeholders};
use crate::compact::select::Protected;
use crate::compact::structure::{Call, FastMap, Pairing};
use crate::model::ToolInput;
use crate::tokens::{self, Encoding};

/// A call's input, as its placeholder describes it.
#[derive(Clone, Copy, Debug)]
pub enum CallInput<'m> {
    /// An `arguments` text (Chat, Responses, native): described once per distinct call.
    Arguments(&'m str),
    /// Any other input (a JSON value, a freeform text).
    Input(&'m ToolInput),
}

impl<'m> CallInput<'m> {
    /// The input of a parsed call.
    pub fn of(input: &'m ToolInput) -> Self {
        match input {
            ToolInput::Raw(args) => CallInput::Arguments(args),
            other => CallInput::Input(other),
        }
    }
}

/// What the clearing plan reads of a list of messages.
pub trait ClearSource<'m> {
    /// The tokens of the result block at `(message, block)`, or `None` when there is no result
    /// there or it is already a placeholder (or a dedup stub).
    fn live_result_tokens(&self, at: (usize, usize)) -> Option<usize>;

    /// The input of call `call` of the pairing, whose block is at `at`; `None` when there is none.
    fn call_input(&self, call: usize, at: (usize, usize)) -> Option<CallInput<'m>>;

    /// Whether the result tokens are cached counts: then, unless
    /// [`ClearOptions::count_placeholders`], a placeholder clearly smaller than its result is
    /// given an upper bound instead of a count (see [`Cleared::after_exact`]).
    fn counts_cached(&self) -> bool;
}

/// A planned placeholder: the description of a call with an `arguments` text (in the
/// [`Placeholders`] it was planned with; written when wanted), or the whole text.
#[derive(Clone, Debug)]
pub enum Placeholder {
    Described(Described),
    Text(String),
}

impl Placeholder {
    /// The text, given the result's tokens and the recall id.
    pub fn into_text(self, placeholders: &Placeholders<'_>, tokens: usize, id: &str) -> String {
        match self {
            Placeholder::Described(d) => {
                let mut text = String::new();
                placeholders.write_new(d, tokens, id, &mut text);
                text
            }
            Placeholder::Text(text) => text,
        }
    }

    /// The text appended to `out`.
    pub fn write(&self, placeholders: &Placeholders<'_>, tokens: usize, id: &str, out: &mut String) {
        match self {
            Placeholder::Described(d) => placeholders.write(*d, tokens, id, out),
            Placeholder::Text(text) => out.push_str(text),
        }
    }
}

/// One result to clear: the report entry, where the block is and its placeholder.
pub type Planned<'m> = (Cleared<'m>, (usize, usize), Placeholder);

/// The literal of [`CUT_RECALL`], for the constants built from it (`concat!` takes literals).
macro_rules! cut_recall {
    () => {
        "; full text: recall(id=\""
    };
}

/// What a cut marker holds right before its recall id (`; full text: recall(id="X")`, as
/// `crate::budget` writes it).
pub const CUT_RECALL: &str = cut_recall!();

/// [`CUT_RECALL`] as a cut marker holds it: right after the amount omitted (`[... 3 lines, 99
/// chars omitted; full text: recall(id="X") ...]`, as `crate::budget::marker` writes it).
pub const CUT_OMITTED_RECALL: &str = concat!(" omitted", cut_recall!());

/// Whether a tool result's text is one this library wrote that shows a recall id: a cleared
/// result's placeholder, or a result cut with a marker.
pub fn shows_recall_id(text: &str) -> bool {
    super::is_placeholder_text(text) || text.contains(CUT_RECALL)
}

/// The recall id a text this module writes shows, if any: a cut marker's (`; full text:
/// recall(id="X")`), a cleared result's (`..., 12,345 tokens; recall id X]`) or cleared
/// arguments' (`... recall id X#arguments]`, as X). `recall_names` in
/// python/agentcontext/budgets/recall.py reads them the same way.
pub fn shown_recall_id(text: &str) -> Option<&str> {
    const CLEARED: &str = " tokens; recall id ";
    if let Some(at) = text.find(CUT_RECALL) {
        let rest = &text[at + CUT_RECALL.len()..];
        return rest.find("\")").map(|end| &rest[..end]);
    }
    let rest = &text[text.rfind(CLEARED)? + CLEARED.len()..];
    let id = &rest[..rest.find(']')?];
    Some(id.strip_suffix("#arguments").unwrap_or(id))
}

/// The recall id the placeholders of each call name (empty: none, the placeholder says the
/// original is not stored). It is the call id, unless the id is reused in the conversation (some
/// servers number calls `call_0`, `call_1`, ... afresh on every turn): then the k-th call with
/// the id (k ≥ 2) is named `<id>#k`, the first keeps the id. The name of a call depends only on
/// the calls before it, so a conversation that grows keeps every name it gave. A name that two
/// calls would have (a second `a` and a call whose id is `a#2`) is given to neither: a recall
/// id names one text. `Recall` (python/agentcontext/budgets/recall.py) names calls the same way.
pub struct RecallIds<'p, 'm> {
    calls: &'p [Call<'m>],
    on: bool,
    /// The calls whose recall id is not their id (only when an id is reused): the name, or none.
    renamed: FastMap<usize, Option<String>>,
}

impl<'p, 'm> RecallIds<'p, 'm> {
    /// The recall ids of the calls of `pairing` (all empty unless `on`), when no result or
    /// arguments of theirs is a placeholder already (else [`RecallIds::shown`]).
    pub fn new(pairing: &'p Pairing<'m>, on: bool) -> Self {
        Self::shown(pairing, on, |_| Vec::new())
    }

    /// The recall ids of the calls of `pairing` (all empty unless `on`), `shown(ci)` giving the
    /// recall ids that call `ci`'s result and arguments show already ([`shown_recall_id`]; read
    /// only when an id is reused). A name shown by a placeholder of another call (one a longer
    /// conversation gave, whose front has been summarized or dropped since) is taken: no call is
    /// given it, so the placeholder keeps naming its own text.
    pub fn shown(pairing: &'p Pairing<'m>, on: bool, shown: impl Fn(usize) -> Vec<String>) -> Self {
        let mut renamed = FastMap::default();
        if on && !pairing.reused_ids.is_empty() {
            let calls = &pairing.calls;
            let mut seen: FastMap<&str, usize> = FastMap::default();
            let names: Vec<Cow<'_, str>> = calls
                .iter()
                .map(|c| {
                    let k = seen.entry(c.id).or_insert(0);
                    *k += 1;
                    if *k == 1 {
                        Cow::Borrowed(c.id)
                    } else {
                        Cow::Owned(format!("{}#{k}", c.id))
                    }
                })
                .collect();
            let shown: Vec<Vec<String>> = (0..calls.len()).map(shown).collect();
            let mut claims: FastMap<&str, usize> = FastMap::default();
            for (name, shown) in names.iter().zip(&shown) {
                *claims.entry(name.as_ref()).or_insert(0) += 1;
                for s in shown.iter().filter(|s| *s != name) {
                    *claims.entry(s.as_str()).or_insert(0) += 1;
                }
            }
            for (ci, name) in names.iter().enumerate() {
                if claims[name.as_ref()] > 1 {
                    renamed.insert(ci, None);
                } else if let Cow::Owned(name) = name {
                    renamed.insert(ci, Some(name.clone()));
                }
            }
        }
        RecallIds {
            calls: &pairing.calls,
            on,
            renamed,
        }
    }

    /// The recall id of call `ci` (empty: none).
    pub fn get(&self, ci: usize) -> &str {
        if !self.on {
            return "";
        }
        match self.renamed.get(&ci) {
            Some(name) => name.as_deref().unwrap_or(""),
            None => self.calls[ci].id,
        }
    }

    /// Whether the recall id of call `ci` is not its call id (renamed, or none because two calls
    /// would have it).
    pub fn renamed(&self, ci: usize) -> bool {
        self.renamed.contains_key(&ci)
    }
}

/// The result of call `ci` cleared, if it is live and its placeholder is smaller.
pub fn clear_result<'m, S: ClearSource<'m> + ?Sized>(
    source: &S,
    pairing: &Pairing<'m>,
    enc: Encoding,
    options: &ClearOptions,
    placeholders: &mut Placeholders<'m>,
    ci: usize,
    id: &str,
) -> Option<Planned<'m>> {
    let c = &pairing.calls[ci];
    let at = c.result?;
    let before = source.live_result_tokens(at)?;
    let placeholder = match source.call_input(ci, c.at)? {
        CallInput::Arguments(args) => Placeholder::Described(placeholders.describe_arguments(c.name, args)),
        CallInput::Input(input) => Placeholder::Text(placeholders.placeholder(c.name, input, before, id)),
    };
    // With cached counts, unless every placeholder is asked for: when the result is clearly
    // larger than any count of its placeholder, the placeholder is not counted here and the
    // report holds that bound (a caller that keeps counts fills in the exact figure). A
    // byte-level BPE token covers at least one byte (and chars / 4 is below the byte count);
    // the heuristic is allowed two tokens a byte. (The bound is not worked out when every
    // placeholder is counted: the fast path's case, on every call.)
    let bound = (source.counts_cached() && !options.count_placeholders).then(|| {
        let bytes = match &placeholder {
            Placeholder::Described(d) => Placeholders::bytes(*d, before, id),
            Placeholder::Text(text) => text.len(),
        };
        let per_byte = if matches!(enc, Encoding::Heuristic) { 2 } else { 1 };
        tokens::TOOL_BLOCK_OVERHEAD + per_byte * bytes
    });
    let bounded = bound.filter(|&b| before > b);
    let after = bounded.unwrap_or_else(|| {
        // What `count_block` gives for a result whose content is the placeholder.
        tokens::TOOL_BLOCK_OVERHEAD
            + match &placeholder {
                Placeholder::Described(d) => placeholders.count(*d, before, id, enc),
                Placeholder::Text(text) => enc.count(text),
            }
    });
    (after < before).then(|| {
        let cleared = Cleared {
            index: at.0,
            tool_use_id: Cow::Borrowed(c.id),
            tool_name: Cow::Borrowed(c.name),
            tokens_before: before,
            tokens_after: after,
            after_exact: bounded.is_none(),
        };
        (cleared, at, placeholder)
    })
}

/// Whether freeing `freed` tokens is worth a change under `options` (`clear_at_least`).
pub fn worth_clearing(freed: usize, options: &ClearOptions) -> bool {
    freed > 0 && freed >= options.clear_at_least
}

/// The results clearing replaces, in call order, and the tokens that frees: every candidate
/// ([`Candidates`]: completed, outside `protected`, tool not excluded) whose result is live and
/// larger than its placeholder. Nothing when that frees less than `clear_at_least`.
pub fn plan_results<'m, S: ClearSource<'m> + ?Sized>(
    source: &S,
    messages: usize,
    pairing: &Pairing<'m>,
    protected: &Protected,
    enc: Encoding,
    options: &ClearOptions,
    placeholders: &mut Placeholders<'m>,
) -> (Vec<Planned<'m>>, usize) {
    let mut planned = Vec::new();
    let freed = each_result(source, messages, pairing, protected, enc, options, placeholders, |p| {
        planned.push(p);
    });
    if worth_clearing(freed, options) {
        (planned, freed)
    } else {
        (Vec::new(), 0)
    }
}

/// [`plan_results`] handing each planned result to `each` as it is planned, without collecting
/// them (the whole-list fast path writes them straight into its own tables); returns the tokens
/// they free. The caller keeps none of them unless [`worth_clearing`] says so.
#[allow(clippy::too_many_arguments)]
pub fn each_result<'m, S: ClearSource<'m> + ?Sized>(
    source: &S,
    messages: usize,
    pairing: &Pairing<'m>,
    protected: &Protected,
    enc: Encoding,
    options: &ClearOptions,
    placeholders: &mut Placeholders<'m>,
    mut each: impl FnMut(Planned<'m>),
) -> usize {
    let mut freed = 0;
    let ids = RecallIds::new(pairing, options.recall_ids);
    for (ci, _) in Candidates::new(pairing, protected, messages, &options.exclude_tools).iter() {
        if let Some(p) = clear_result(source, pairing, enc, options, placeholders, ci, ids.get(ci)) {
            freed += p.0.tokens_before - p.0.tokens_after;
            each(p);
        }
    }
    freed
}

/// The calls whose results clearing may replace: completed calls outside the protected set (the
/// call, its message and its result's message) whose tool is not excluded. Every path that clears
/// or counts what clearing could free — parsed conversations and the whole-list fast path — picks
/// its results here; each then skips results that are already placeholders.
pub struct Candidates<'p, 'a> {
    pairing: &'p Pairing<'a>,
    protected_messages: Vec<bool>,
    protected_calls: Vec<bool>,
    exclude: &'p BTreeSet<String>,
}

impl<'p, 'a> Candidates<'p, 'a> {
    pub fn new(
        pairing: &'p Pairing<'a>,
        protected: &Protected,
        messages: usize,
        exclude: &'p BTreeSet<String>,
    ) -> Self {
        let (protected_messages, protected_calls) = protected.flags(messages, pairing.calls.len());
        Candidates {
            pairing,
            protected_messages,
            protected_calls,
            exclude,
        }
    }

    /// `(call index, result position)` of each candidate, in call order.
    pub fn iter(&self) -> impl Iterator<Item = (usize, (usize, usize))> + '_ {
        self.pairing.calls.iter().enumerate().filter_map(|(ci, c)| {
            let at = c.result?;
            let protected =
                self.protected_calls[ci] || self.protected_messages[at.0] || self.protected_messages[c.at.0];
            (!protected && !self.exclude.contains(c.name)).then_some((ci, at))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ClearReport, apply, plan_clear_counted, with_text};
    use super::*;
    use crate::compact::select::protected;
    use crate::compact::testing::{chat, xorshift};
    use crate::model::{Body, Message, ResultContent};
    use serde_json::{Value, json};

    #[test]
    fn recall_ids_name_each_call_of_a_reused_id_and_no_name_twice() {
        let call = |id: &str| {
            json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": id, "type": "function", "function": {"name": "f", "arguments": "{}"}}]})
        };
        let result = |id: &str| json!({"role": "tool", "tool_call_id": id, "content": "r"});
        let ids = ["a", "b", "a", "a#2", "a", "b"];
        let m = chat(Value::Array(ids.iter().flat_map(|id| [call(id), result(id)]).collect()));
        let pairing = Pairing::of(&m);
        let names = RecallIds::new(&pairing, true);
        let got: Vec<&str> = (0..ids.len()).map(|ci| names.get(ci)).collect();
        // The second `a` and the call `a#2` would share a name: neither has one.
        assert_eq!(got, ["a", "b", "", "", "a#3", "b#2"]);
        assert!((0..ids.len()).all(|ci| RecallIds::new(&pairing, false).get(ci).is_empty()));
        // A name another call's placeholder shows is taken: `a#3` (the third `a` here) is given to none.
        let names = RecallIds::shown(&pairing, true, |ci| {
            if ci == 0 { vec!["a#3".to_owned()] } else { Vec::new() }
        });
        let got: Vec<&str> = (0..ids.len()).map(|ci| names.get(ci)).collect();
        assert_eq!(got, ["a", "b", "", "", "", "b#2"]);
        for (text, id) in [
            ("[cleared: result of f(x=1), 12,345 tokens; recall id a#2]", Some("a#2")),
            (
                "[... 3 lines, 99 chars omitted; full text: recall(id=\"a#4\") ...]",
                Some("a#4"),
            ),
            (
                "{\"cleared\": \"[cleared: arguments of f(x=1), 9 tokens; recall id a#2#arguments]\"}",
                Some("a#2"),
            ),
            ("[cleared: result of f(x=1), 12 tokens; not stored]", None),
        ] {
            assert_eq!(shown_recall_id(text), id, "{text}");
        }
        let unique = chat(Value::Array(
            ["x", "y"].iter().flat_map(|id| [call(id), result(id)]).collect(),
        ));
        let pairing = Pairing::of(&unique);
        let names = RecallIds::new(&pairing, true);
        assert_eq!((names.get(0), names.get(1), names.renamed(0)), ("x", "y", false));
    }

    const ENCODINGS: [Encoding; 4] = [
        Encoding::O200k,
        Encoding::Cl100k,
        Encoding::Heuristic,
        Encoding::Approximate,
    ];

    #[test]
    fn exact_after_counts_are_the_new_messages_counts() {
        use crate::compact::select::protected;
        use crate::compact::testing::chat;
        // Results small and large, so that some placeholders are counted and some bounded.
        let mut turns = vec![serde_json::json!({"role": "user", "content": "go"})];
        for k in 0..40 {
            let id = format!("call_{k}");
            turns.push(serde_json::json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": id, "type": "function", "function": {"name": "read_file",
                 "arguments": format!("{{\"path\": \"src/m{k}.py\"}}")}}]}));
            turns.push(serde_json::json!({"role": "tool", "tool_call_id": id,
                                          "content": "word ".repeat(k * k)}));
        }
        let messages = chat(serde_json::Value::Array(turns));
        for enc in [
            Encoding::O200k,
            Encoding::Cl100k,
            Encoding::Heuristic,
            Encoding::Approximate,
        ] {
            let counts = tokens::count_messages(enc, &messages);
            let pairing = Pairing::of(&messages);
            let protected = protected(&messages, &pairing, 4, 1, &BTreeSet::new());
            let options = ClearOptions::default();
            let (changed, report) = plan_clear_counted(&messages, Some(&counts), &pairing, &protected, enc, &options);
            assert!(report.cleared.iter().any(|c| c.after_exact));
            assert!(report.cleared.iter().any(|c| !c.after_exact));
            for (c, (i, m)) in report.cleared.iter().zip(&changed) {
                assert_eq!(c.index, *i);
                let recount = tokens::count_message(enc, m);
                if c.after_exact {
                    assert_eq!(tokens::MessageTokens::single_result(c.tokens_after), recount);
                } else {
                    assert!(c.tokens_after >= recount.tools()[0].tokens);
                }
            }
            // Asked to, the plan counts every placeholder, and clears the same results.
            let counting = ClearOptions {
                count_placeholders: true,
                ..ClearOptions::default()
            };
            let (exact, exact_report) =
                plan_clear_counted(&messages, Some(&counts), &pairing, &protected, enc, &counting);
            assert_eq!(exact, changed);
            assert_eq!(exact_report.cleared.len(), report.cleared.len());
            for (c, (_, m)) in exact_report.cleared.iter().zip(&exact) {
                assert!(c.after_exact);
                assert_eq!(
                    tokens::MessageTokens::single_result(c.tokens_after),
                    tokens::count_message(enc, m)
                );
            }
        }
    }

    /// A list of plain messages as the binding's skeleton reads it: a result's tokens per tool
    /// message, its text, and each call's arguments text, in call order.
    struct Plain {
        result_tokens: Vec<usize>,
        results: Vec<Option<String>>,
        args: Vec<String>,
    }

    impl Plain {
        fn of(messages: &[Message], counts: &[tokens::MessageTokens]) -> Plain {
            let mut plain = Plain {
                result_tokens: Vec::new(),
                results: Vec::new(),
                args: Vec::new(),
            };
            for (m, count) in messages.iter().zip(counts) {
                let mut result = None;
                for b in m.blocks.iter() {
                    match &b.body {
                        Body::ToolUse {
                            input: ToolInput::Raw(args),
                            ..
                        } => plain.args.push(args.clone()),
                        Body::ToolResult {
                            content: ResultContent::Text(t),
                            ..
                        } => result = Some(t.clone()),
                        _ => {}
                    }
                }
                plain.result_tokens.push(count.tool(0).unwrap_or(0));
                plain.results.push(result);
            }
            plain
        }
    }

    impl<'m> ClearSource<'m> for &'m Plain {
        fn live_result_tokens(&self, (m, _): (usize, usize)) -> Option<usize> {
            let text = self.results[m].as_deref()?;
            (!super::super::is_placeholder_text(text)).then_some(self.result_tokens[m])
        }

        fn call_input(&self, call: usize, _: (usize, usize)) -> Option<CallInput<'m>> {
            Some(CallInput::Arguments(&self.args[call]))
        }

        fn counts_cached(&self) -> bool {
            true
        }
    }

    /// A generated agent history: requests, rounds of one or two calls with results of any size
    /// (some of them placeholders of an earlier pass), answers.
    fn history(next: &mut impl FnMut() -> usize) -> Vec<Message> {
        let mut turns = vec![json!({"role": "user", "content": "fix it"})];
        let tools = ["read_file", "bash", "grep"];
        for k in 0..(next() % 30) {
            match next() % 6 {
                0 => turns.push(json!({"role": "user", "content": format!("and {k}")})),
                1 => turns.push(json!({"role": "assistant", "content": format!("done {k}")})),
                _ => {
                    let calls: Vec<(String, &str)> = (0..=next() % 2)
                        .map(|j| (format!("c{k}_{j}"), tools[next() % 3]))
                        .collect();
                    let tool_calls: Vec<Value> = calls
                        .iter()
                        .map(|(id, name)| {
                            json!({"id": id, "type": "function", "function": {"name": name,
                                   "arguments": format!("{{\"path\": \"f{}.py\"}}", next() % 4)}})
                        })
                        .collect();
                    turns.push(json!({"role": "assistant", "content": null, "tool_calls": tool_calls}));
                    for (id, _) in &calls {
                        let content = match next() % 5 {
                            0 => format!("[cleared: result of bash(ls), {} tokens; recall id {id}]", next() % 900),
                            1 => "ok".to_owned(),
                            _ => "some output line\n".repeat(next() % 120),
                        };
                        turns.push(json!({"role": "tool", "tool_call_id": id, "content": content}));
                    }
                }
            }
        }
        chat(Value::Array(turns))
    }

    /// The messages with the planned placeholders written in.
    fn applied(messages: &[Message], planned: &[Planned<'_>], placeholders: &Placeholders<'_>) -> Vec<Message> {
        let changed = planned
            .iter()
            .map(|(c, at, p)| {
                let mut text = String::new();
                p.write(placeholders, c.tokens_before, &c.tool_use_id, &mut text);
                let mut m = messages[at.0].clone();
                let block = &m.blocks[at.1];
                let Body::ToolResult {
                    tool_use_id, is_error, ..
                } = &block.body
                else {
                    unreachable!("results are planned")
                };
                let new = with_text(block, tool_use_id, *is_error, text);
                std::sync::Arc::make_mut(&mut m.blocks)[at.1] = new;
                (at.0, m)
            })
            .collect();
        apply(messages, changed)
    }

    fn reported<'m>(planned: &[Planned<'m>]) -> Vec<Cleared<'m>> {
        planned.iter().map(|(c, _, _)| c.clone()).collect()
    }

    /// What a default pass plans for `messages`.
    fn plan_again(messages: &[Message], protected: &Protected, enc: Encoding) -> Vec<Cleared<'static>> {
        let pairing = Pairing::of(messages);
        let counts = tokens::count_messages(enc, messages);
        let parsed = super::super::Parsed {
            messages,
            counts: Some(&counts),
            enc,
        };
        let options = ClearOptions::default();
        let mut placeholders = Placeholders::default();
        let n = messages.len();
        let (planned, _) = plan_results(&parsed, n, &pairing, protected, enc, &options, &mut placeholders);
        planned.into_iter().map(|(c, _, _)| c.into_owned()).collect()
    }

    /// Handed over one by one (`each_result`), the same results as the plan, kept only when worth
    /// clearing.
    #[allow(clippy::too_many_arguments)]
    fn handed_over_one_by_one(
        parsed: &super::super::Parsed<'_, '_>,
        pairing: &Pairing<'_>,
        protected: &Protected,
        enc: Encoding,
        options: &ClearOptions,
        could: usize,
        planned: &[Planned<'_>],
        freed: usize,
    ) {
        let mut each = Vec::new();
        let all = each_result(
            parsed,
            parsed.messages.len(),
            pairing,
            protected,
            enc,
            options,
            &mut Placeholders::default(),
            |(c, _, _)| each.push(c),
        );
        assert_eq!(all, could);
        if worth_clearing(all, options) {
            assert_eq!((each, all), (reported(planned), freed));
        } else {
            assert!(planned.is_empty() && freed == 0);
        }
    }

    #[test]
    fn the_plan_over_generated_histories() {
        let mut rng = xorshift(0x0c1e_a9e5_0000_0026);
        let mut next = move || rng() as usize;
        let (mut cleared, mut held_back) = (0, 0);
        for round in 0..240 {
            let enc = ENCODINGS[round % ENCODINGS.len()];
            let messages = history(&mut next);
            let counts = tokens::count_messages(enc, &messages);
            let pairing = Pairing::of(&messages);
            let protected = protected(&messages, &pairing, next() % 6, next() % 3, &BTreeSet::new());
            let options = ClearOptions {
                clear_at_least: [0, 0, 50, 400, 5_000][next() % 5],
                count_placeholders: true,
                ..ClearOptions::default()
            };
            let parsed = super::super::Parsed {
                messages: &messages,
                counts: Some(&counts),
                enc,
            };
            let n = messages.len();
            let mut placeholders = Placeholders::default();
            let (planned, freed) = plan_results(&parsed, n, &pairing, &protected, enc, &options, &mut placeholders);
            let out = applied(&messages, &planned, &placeholders);
            cleared += usize::from(!planned.is_empty());
            let any = ClearOptions {
                clear_at_least: 0,
                ..options.clone()
            };
            let could = plan_results(
                &parsed,
                n,
                &pairing,
                &protected,
                enc,
                &any,
                &mut Placeholders::default(),
            )
            .1;
            held_back += usize::from(planned.is_empty() && could > 0);
            handed_over_one_by_one(&parsed, &pairing, &protected, enc, &options, could, &planned, freed);
            // The skeleton's reading of the same list plans the same.
            let plain = Plain::of(&messages, &counts);
            let mut theirs = Placeholders::default();
            let (same, same_freed) = plan_results(&&plain, n, &pairing, &protected, enc, &options, &mut theirs);
            assert_eq!(same_freed, freed);
            assert_eq!(applied(&messages, &same, &theirs), out);
            assert_eq!(reported(&same), reported(&planned));
            // Nothing, or at least `clear_at_least` freed, and exactly what a recount finds.
            assert!(planned.is_empty() || freed >= options.clear_at_least.max(1));
            let recount: usize = tokens::count_messages(enc, &out).iter().map(|c| c.total).sum();
            let total: usize = counts.iter().map(|c| c.total).sum();
            assert_eq!(total - recount, freed);
            let (flags, calls) = protected.flags(n, pairing.calls.len());
            for (c, at, _) in &planned {
                assert!(!flags[at.0] && c.tokens_after < c.tokens_before && c.after_exact);
                let ci = pairing.calls.iter().position(|call| call.result == Some(*at)).unwrap();
                assert!(!calls[ci] && !flags[pairing.calls[ci].at.0]);
            }
            // The parsed path's whole plan clears the same results.
            let (_, report): (_, ClearReport<'_>) =
                plan_clear_counted(&messages, Some(&counts), &pairing, &protected, enc, &options);
            assert_eq!(report.cleared, reported(&planned));
            // What is cleared is not cleared again.
            let again = plan_again(&out, &protected, enc);
            assert!(
                again
                    .iter()
                    .all(|c| !planned.iter().any(|(p, _, _)| p.index == c.index))
            );
        }
        // The generated cases cover both clearing and holding back under `clear_at_least`.
        assert!(cleared > 60 && held_back > 10, "{cleared} {held_back}");
    }
}
