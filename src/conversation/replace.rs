//! Replacing a run of messages: the one way to put new messages (summaries, markers, cut
//! rounds) into a conversation, read as a conversation in its format would hold them.

use serde_json::Value;

use super::Conversation;
use crate::error::{Error, Result};
use crate::formats;
use crate::model::Format;

impl Conversation {
    /// A new conversation with messages `start..stop` replaced by `values`, read in `given` (the
    /// library's own JSONL, or any named format; `None`: detected as [`formats::read_any`] does). Values not in this conversation's format are
    /// written in it and read back, so the new messages are what a conversation read from that
    /// format holds (a rebuild through the format, one pass). The untouched messages keep their
    /// counts and pins; only the new ones are counted. `self` is not changed.
    pub fn replace(
        &self,
        start: usize,
        stop: usize,
        values: Vec<Value>,
        given: Option<Format>,
    ) -> Result<Conversation> {
        if stop > self.len() {
            return Err(Error::IndexOutOfRange {
                index: stop,
                len: self.len(),
            });
        }
        if start > stop {
            return Err(Error::InvalidArgument {
                what: "start",
                reason: format!("{start} is after stop ({stop})"),
            });
        }
        let (given, mut messages) = formats::read_any(values, given, None)?;
        if given != self.format {
            messages = formats::read(self.format, formats::write(self.format, &messages)?)?;
        }
        let body = Conversation::from_messages(self.format, self.encoding, messages);
        let head = Conversation::from_counted(self, 0, start);
        let tail = Conversation::from_counted(self, stop, self.len());
        Ok(Conversation::concat(&[&head, &body, &tail]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::{self, Encoding};
    use serde_json::json;

    /// Native messages: a request, a call with its result, a reply and a system prompt.
    fn native() -> Vec<Value> {
        vec![
            json!({"role": "system", "content": "Be terse."}),
            json!({"role": "user", "content": "List the files."}),
            json!({"role": "assistant", "content": "Listing.", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{\"cmd\": \"ls\"}"}}]}),
            json!({"role": "tool", "tool_call_id": "c1", "content": "a.py\nb.py"}),
            json!({"role": "assistant", "content": "Two files."}),
        ]
    }

    fn conversation(format: Format) -> Conversation {
        let messages = formats::read(Format::Native, native()).unwrap();
        let values = formats::write(format, &messages).unwrap();
        let mut c = Conversation::new(format, Encoding::O200k);
        c.extend_values(values).unwrap();
        c
    }

    /// What a rebuild through Python did: read the native values, write them in `format`, read
    /// them back in a new conversation.
    fn rebuilt(format: Format, values: Vec<Value>) -> Conversation {
        let messages = formats::read(Format::Native, values).unwrap();
        let mut c = Conversation::new(format, Encoding::O200k);
        c.extend_values(formats::write(format, &messages).unwrap()).unwrap();
        c
    }

    #[test]
    fn equals_a_rebuild_through_the_format_concatenated_in_every_format() {
        let new = vec![
            json!({"role": "user", "content": "[agentcontext: earlier conversation compacted]\n\nnotes"}),
            json!({"role": "assistant", "content": "Noted.", "tool_calls": [
                {"id": "c9", "type": "function", "function": {"name": "read", "arguments": "{}"}}]}),
            json!({"role": "tool", "tool_call_id": "c9", "content": "text"}),
        ];
        for format in [Format::Native, Format::OpenAiChat, Format::Responses, Format::Anthropic] {
            let conv = conversation(format);
            let n = conv.len();
            for (start, stop) in [(0, 0), (0, n), (1, 3), (n, n), (2, n)] {
                let got = conv.replace(start, stop, new.clone(), Some(Format::Native)).unwrap();
                let body = rebuilt(format, new.clone());
                let head = Conversation::from_counted(&conv, 0, start);
                let tail = Conversation::from_counted(&conv, stop, n);
                let want = Conversation::concat(&[&head, &body, &tail]);
                assert_eq!(got.messages(), want.messages(), "{format:?} {start}..{stop}");
                assert_eq!(got.counts(), want.counts(), "{format:?} {start}..{stop}");
                assert_eq!(got.tally(), want.tally(), "{format:?} {start}..{stop}");
                assert_eq!(got.len(), n - (stop - start) + body.len());
                // Counts are those of a fresh count of the result.
                assert_eq!(
                    got.counts(),
                    &tokens::count_messages(Encoding::O200k, got.messages())[..]
                );
                assert_eq!(conv.len(), n, "the conversation itself is not changed");
            }
        }
    }

    #[test]
    fn values_in_the_conversations_own_format_are_read_once() {
        let conv = conversation(Format::Anthropic);
        let own = vec![json!({"role": "user", "content": [{"type": "text", "text": "Go on."}]})];
        let got = conv.replace(1, 2, own.clone(), Some(Format::Anthropic)).unwrap();
        assert_eq!(
            got.messages()[1],
            formats::read(Format::Anthropic, own.clone()).unwrap()[0]
        );
        assert_eq!(got.messages()[2..], conv.messages()[2..]);
        // Undeclared, the format is detected: Responses items read as if named.
        let items =
            vec![json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Go on."}]})];
        let detected = conv.replace(1, 2, items.clone(), None).unwrap();
        let named = conv.replace(1, 2, items, Some(Format::Responses)).unwrap();
        assert_eq!(detected.messages(), named.messages());
        assert_eq!(detected.messages()[1].blocks, got.messages()[1].blocks);
    }

    #[test]
    fn keeps_untouched_pins_and_counts_and_refuses_a_bad_range() {
        let mut conv = conversation(Format::OpenAiChat);
        conv.set_pinned(0, true).unwrap();
        conv.set_pinned(2, true).unwrap();
        conv.set_pinned(4, true).unwrap();
        let got = conv
            .replace(
                1,
                3,
                vec![json!({"role": "user", "content": "x"})],
                Some(Format::Native),
            )
            .unwrap();
        // 0 stays, 2 was replaced, 4 moves to 3.
        assert_eq!(got.pinned().iter().copied().collect::<Vec<_>>(), vec![0, 3]);
        assert_eq!(got.counts()[3], conv.counts()[4]);
        assert!(matches!(
            conv.replace(0, 6, vec![], Some(Format::Native)),
            Err(Error::IndexOutOfRange { index: 6, len: 5 })
        ));
        assert!(matches!(
            conv.replace(3, 2, vec![], Some(Format::Native)),
            Err(Error::InvalidArgument { what: "start", .. })
        ));
        assert!(matches!(
            conv.replace(0, 1, vec![json!({"role": 7})], Some(Format::Native)),
            Err(Error::InvalidMessage { .. })
        ));
    }
}
