//! Tokens per content class ([`crate::tokens::classes`]) of each message, counted the first time
//! they are asked for and kept beside the message's other counts, so calibrated estimates cost
//! one pass over new messages only. Plain counting never computes them.
//!
//! The texts of a message are those of its form in the library's own JSONL (what
//! `Conversation.to_jsonl` gives): a string content, or the `text`, `thinking` and string
//! `content` fields of its content blocks, then each entry of `tool_calls` by name and arguments.
//! A message that the JSONL writes as several (tool results beside other content) has the texts
//! of all of them.

use rayon::prelude::*;
use serde_json::{Map, Value};

use super::Conversation;
use crate::formats;
use crate::model::Message;
use crate::tokens::Encoding;
use crate::tokens::classes::{self, ClassCounts};

/// From this many messages to count, they are counted on all cores.
const PARALLEL_MIN_MESSAGES: usize = 16;

/// The class counts of a conversation's messages under one counter; `None` where not counted
/// yet (the list may be shorter than the conversation).
#[derive(Clone, Debug)]
pub(super) struct ClassCache {
    counter: Encoding,
    per: Vec<Option<ClassCounts>>,
}

impl ClassCache {
    /// The entries of messages `start..stop` (of a conversation `cache` belongs to).
    pub(super) fn slice(cache: Option<&ClassCache>, start: usize, stop: usize) -> Option<ClassCache> {
        let c = cache?;
        let stop = stop.min(c.per.len());
        Some(ClassCache {
            counter: c.counter,
            per: c.per.get(start..stop).map(<[_]>::to_vec).unwrap_or_default(),
        })
    }

    /// The entries of conversations one after the other (`parts`: each one's cache and length);
    /// entries under another counter than the first cache's are dropped.
    pub(super) fn concat<'a>(
        parts: impl Iterator<Item = (Option<&'a ClassCache>, usize)> + Clone,
    ) -> Option<ClassCache> {
        let counter = parts.clone().find_map(|(c, _)| c)?.counter;
        let mut per = Vec::new();
        for (cache, len) in parts {
            let start = per.len();
            if let Some(c) = cache.filter(|c| c.counter == counter) {
                per.extend(c.per.iter().take(len).copied());
            }
            per.resize(start + len, None);
        }
        Some(ClassCache { counter, per })
    }

    /// The entries of a conversation of `len` messages where the message at `i` is the same as
    /// this cache's `i`th where `unchanged(i)`.
    pub(super) fn derive(
        cache: Option<&ClassCache>,
        len: usize,
        unchanged: impl Fn(usize) -> bool,
    ) -> Option<ClassCache> {
        let c = cache?;
        let per = (0..len)
            .map(|i| {
                if unchanged(i) {
                    c.per.get(i).copied().flatten()
                } else {
                    None
                }
            })
            .collect();
        Some(ClassCache {
            counter: c.counter,
            per,
        })
    }

    /// Forget the entry of message `i` (it changed).
    pub(super) fn forget(&mut self, i: usize) {
        if let Some(entry) = self.per.get_mut(i) {
            *entry = None;
        }
    }
}

/// Estimated tokens per content class, and the overhead beyond the texts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClassTotals {
    /// Indexed by [`classes::ContentClass::index`].
    pub text: ClassCounts,
    /// The messages' tokens beyond their texts (roles, delimiters, tool block overhead, images,
    /// ...), at least 0.
    pub overhead: usize,
}

impl Conversation {
    /// Estimated tokens of messages `start..` per content class, in `encoding`: each text counted
    /// exactly with a BPE encoding, by the heuristic otherwise. The overhead is the messages'
    /// tokens less their texts' when `encoding` is the conversation's (0 otherwise), at least 0
    /// over the whole range, or, with `per_message`, for each message (what summing the class
    /// tokens of one-message slices gives). Counts are kept per message for the next call (for
    /// one counter at a time: asking under another encoding replaces them).
    pub fn class_tokens(&mut self, start: usize, encoding: Encoding, per_message: bool) -> ClassTotals {
        let counter = classes::counter(encoding);
        let len = self.messages.len();
        let start = start.min(len);
        let cache = match &mut self.classes {
            Some(c) if c.counter == counter => c,
            slot => slot.insert(ClassCache {
                counter,
                per: Vec::new(),
            }),
        };
        cache.per.resize(len, None);
        let missing: Vec<usize> = (start..len).filter(|&i| cache.per[i].is_none()).collect();
        let messages = &self.messages;
        let count = |&i: &usize| message_class_counts(counter, &messages[i]);
        let fresh: Vec<ClassCounts> = if missing.len() < PARALLEL_MIN_MESSAGES {
            missing.iter().map(count).collect()
        } else {
            crate::parallel::install(|| missing.par_iter().map(count).collect())
        };
        for (&i, c) in missing.iter().zip(fresh) {
            cache.per[i] = Some(c);
        }
        let same = encoding == self.encoding;
        let mut out = ClassTotals::default();
        let (mut total, mut texts) = (0, 0);
        for (entry, counts) in cache.per[start..].iter().zip(&self.counts[start..]) {
            let Some(c) = entry else { continue };
            let sum: usize = c.iter().sum();
            for (t, n) in out.text.iter_mut().zip(c) {
                *t += n;
            }
            if same && per_message {
                out.overhead += counts.total.saturating_sub(sum);
            }
            total += counts.total;
            texts += sum;
        }
        if same && !per_message {
            out.overhead = total.saturating_sub(texts);
        }
        out
    }
}

/// The tokens of `m`'s texts (see the module docs) per class, counted with `counter`.
pub fn message_class_counts(counter: Encoding, m: &Message) -> ClassCounts {
    let mut counts = ClassCounts::default();
    for value in formats::native::write(std::slice::from_ref(m)) {
        if let Value::Object(message) = value {
            add_message_texts(&mut counts, counter, &message);
        }
    }
    counts
}

/// Add the texts of one JSONL message to `counts`.
fn add_message_texts(counts: &mut ClassCounts, counter: Encoding, message: &Map<String, Value>) {
    match message.get("content") {
        Some(Value::String(text)) => classes::add_text(counts, counter, text),
        Some(Value::Array(blocks)) => {
            for block in blocks.iter().filter_map(Value::as_object) {
                add_fields(counts, counter, block, &["text", "thinking", "content"]);
            }
        }
        _ => {}
    }
    if let Some(Value::Array(calls)) = message.get("tool_calls") {
        for call in calls.iter().filter_map(Value::as_object) {
            add_fields(counts, counter, call, &["name", "arguments"]);
        }
    }
}

/// Add the string values of `keys` in `object`, in that order.
fn add_fields(counts: &mut ClassCounts, counter: Encoding, object: &Map<String, Value>, keys: &[&str]) {
    for key in keys {
        if let Some(Value::String(text)) = object.get(*key) {
            classes::add_text(counts, counter, text);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Format;
    use crate::tokens::classes::ContentClass;
    use serde_json::json;

    fn native(values: Vec<Value>, encoding: Encoding) -> Conversation {
        let mut c = Conversation::new(Format::Native, encoding);
        c.extend_values(values).unwrap();
        c
    }

    fn session() -> Vec<Value> {
        vec![
            json!({"role": "system", "content": "You are terse."}),
            json!({"role": "user", "content": "List the files and show me the config."}),
            json!({"role": "assistant", "content": [{"type": "thinking", "thinking": "首先列出文件。", "signature": "s"}],
                   "tool_calls": [{"id": "c1", "name": "bash", "arguments": "{\"cmd\": \"ls\"}"}]}),
            json!({"role": "tool", "tool_call_id": "c1", "content": "def main():\n    return {'a': 1}\n"}),
            json!({"role": "assistant", "content": "[{\"file\": \"a.py\"}]"}),
        ]
    }

    /// Each text of the messages by hand, as the module docs list them.
    fn by_hand(enc: Encoding) -> ClassCounts {
        let mut want = ClassCounts::default();
        let texts = [
            "You are terse.",
            "List the files and show me the config.",
            "首先列出文件。",
            "bash",
            "{\"cmd\": \"ls\"}",
            "def main():\n    return {'a': 1}\n",
            "[{\"file\": \"a.py\"}]",
        ];
        for t in texts {
            want[ContentClass::of(t).index()] += classes::counter(enc).count(t);
        }
        want
    }

    #[test]
    fn texts_of_contents_blocks_and_calls_by_class_and_the_rest_as_overhead() {
        let mut c = native(session(), Encoding::O200k);
        let got = c.class_tokens(0, Encoding::O200k, false);
        let want = by_hand(Encoding::O200k);
        assert_eq!(got.text, want);
        assert!(want.iter().all(|&n| n > 0), "{want:?}");
        assert_eq!(got.overhead, c.total_tokens() - want.iter().sum::<usize>());
        // Per message the same here: no message has more text tokens than tokens.
        assert_eq!(c.class_tokens(0, Encoding::O200k, true), got);
        // Under another encoding: its counts, and no overhead.
        let other = c.class_tokens(0, Encoding::Cl100k, false);
        assert_eq!(other.text, by_hand(Encoding::Cl100k));
        assert_eq!(other.overhead, 0);
        assert_eq!(c.class_tokens(0, Encoding::O200k, false), got);
    }

    #[test]
    fn a_start_counts_the_messages_from_there() {
        let mut c = native(session(), Encoding::O200k);
        let tail = c.class_tokens(3, Encoding::O200k, false);
        let mut part = Conversation::from_counted(&c, 3, c.len());
        assert_eq!(part.class_tokens(0, Encoding::O200k, false), tail);
        assert_eq!(c.class_tokens(99, Encoding::O200k, false), ClassTotals::default());
    }

    #[test]
    fn overhead_at_least_zero_over_the_range_or_for_each_message() {
        // `approximate` counts a text by its length and the heuristic counts CJK by the
        // character: the CJK message has more text tokens than tokens, the other fewer.
        let mut c = native(
            vec![
                json!({"role": "user", "content": "字".repeat(40)}),
                json!({"role": "user", "content": "word ".repeat(80)}),
            ],
            Encoding::Approximate,
        );
        let one = |c: &Conversation, i: usize| {
            let mut m = Conversation::from_counted(c, i, i + 1);
            m.class_tokens(0, Encoding::Approximate, false)
        };
        let (a, b) = (one(&c, 0), one(&c, 1));
        assert_eq!(a.overhead, 0);
        assert!(b.overhead > 0);
        let each = c.class_tokens(0, Encoding::Approximate, true);
        assert_eq!(each.overhead, a.overhead + b.overhead);
        let whole = c.class_tokens(0, Encoding::Approximate, false);
        let texts: usize = whole.text.iter().sum();
        assert_eq!(whole.overhead, c.total_tokens().saturating_sub(texts));
        assert!(whole.overhead < each.overhead);
    }

    #[test]
    fn kept_counts_follow_appends_merges_and_derived_conversations() {
        let items = vec![
            json!({"role": "user", "content": "hi"}),
            json!({"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "think"}]}),
            json!({"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{\"a\": [1, 2]}"}),
            json!({"type": "function_call_output", "call_id": "c1", "output": "ok"}),
        ];
        let mut one = Conversation::new(Format::Responses, Encoding::O200k);
        for it in &items {
            one.extend_values(vec![it.clone()]).unwrap();
            // Counted after each item: the merged turn must be counted again.
            one.class_tokens(0, Encoding::O200k, false);
        }
        let mut batch = Conversation::new(Format::Responses, Encoding::O200k);
        batch.extend_values(items).unwrap();
        assert_eq!(one.len(), 3);
        let want = batch.class_tokens(0, Encoding::O200k, false);
        assert_eq!(one.class_tokens(0, Encoding::O200k, false), want);

        let mut c = native(session(), Encoding::O200k);
        let full = c.class_tokens(0, Encoding::O200k, false);
        let fresh = |conv: &Conversation| {
            let mut recounted = Conversation::from_messages(conv.format(), conv.encoding(), conv.messages().to_vec());
            recounted.class_tokens(0, Encoding::O200k, false)
        };
        let mut head = Conversation::from_counted(&c, 0, 2);
        let mut tail = Conversation::from_counted(&c, 2, c.len());
        assert_eq!(head.class_tokens(0, Encoding::O200k, false), fresh(&head));
        let mut joined = Conversation::concat(&[&head, &tail]);
        assert_eq!(joined.class_tokens(0, Encoding::O200k, false), full);
        // A part counted under another encoding: its messages are counted again.
        tail.class_tokens(0, Encoding::Cl100k, false);
        let mut joined = Conversation::concat(&[&head, &tail]);
        assert_eq!(joined.class_tokens(0, Encoding::O200k, false), full);
        let mut changed = c.messages().to_vec();
        changed[1] = Message::text(crate::model::Role::User, "{\"now\": \"json\"}");
        let mut derived = c.derive(changed, |i| i != 1);
        assert_eq!(derived.class_tokens(0, Encoding::O200k, false), fresh(&derived));
        assert_ne!(derived.class_tokens(0, Encoding::O200k, false), full);
    }
}
