//! Token counting: exact BPE counts for OpenAI's public encodings ([`bpe`]: offline, the token
//! lists embedded in the binary, counts equal to tiktoken's), a fast class-aware heuristic for
//! providers without a public tokenizer, and the per-message accounting rules shared by every
//! counter.

pub mod bpe;
pub mod cache;
pub mod classes;
pub mod heuristic;
pub mod image;

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::model::{Block, Body, Message, ResultContent};

/// What to count tokens with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// Exact `o200k_base` (GPT-4o, GPT-4.1, o-series, GPT-5).
    O200k,
    /// Exact `cl100k_base` (GPT-4, GPT-3.5).
    Cl100k,
    /// The class-aware heuristic of [`heuristic`]; no tokenizer involved.
    Heuristic,
    /// One token per four characters, rounded up: the cheapest estimate (what LangChain's
    /// `count_tokens_approximately` does), computable from a string's length alone.
    Approximate,
}

impl Encoding {
    pub const NAMES: &'static str = "\"o200k_base\", \"cl100k_base\", \"heuristic\", \"approximate\"";

    pub fn parse(name: &str) -> Result<Encoding> {
        match name {
            "o200k_base" | "o200k" => Ok(Encoding::O200k),
            "cl100k_base" | "cl100k" => Ok(Encoding::Cl100k),
            "heuristic" => Ok(Encoding::Heuristic),
            "approximate" => Ok(Encoding::Approximate),
            other => Err(Error::UnknownOption {
                what: "encoding",
                value: other.to_owned(),
                expected: Self::NAMES,
            }),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Encoding::O200k => "o200k_base",
            Encoding::Cl100k => "cl100k_base",
            Encoding::Heuristic => "heuristic",
            Encoding::Approximate => "approximate",
        }
    }

    /// Tokens in `text` (no special tokens: text that looks like `<|endoftext|>` counts as text).
    pub fn count(self, text: &str) -> usize {
        match self {
            Encoding::O200k => bpe::o200k_base().count(text),
            Encoding::Cl100k => bpe::cl100k_base().count(text),
            Encoding::Heuristic => heuristic::estimate(text, heuristic::Profile::for_encoding(self)),
            Encoding::Approximate => Self::approximate(text.chars().count()),
        }
    }

    /// [`count`](Self::count), memoized in the process's bounded memo ([`cache`]) for the
    /// encodings whose counting costs more than hashing (the BPE ones and the heuristic): for
    /// message contents, which frameworks pass again on every call.
    pub fn count_cached(self, text: &str) -> usize {
        if self == Encoding::Approximate {
            return self.count(text);
        }
        cache::global().count(self, text, |t| self.count(t))
    }

    /// [`count_cached`](Self::count_cached) of many texts: the memoized ones looked up, the
    /// others counted together ([`count_many`](Self::count_many): in parallel when there are
    /// enough of them).
    pub fn count_many_cached(self, texts: &[&str]) -> Vec<usize> {
        if self == Encoding::Approximate {
            return self.count_many(texts);
        }
        cache::global().count_many(self, texts, |batch| self.count_many(batch))
    }

    /// Whether counts are exact byte-pair encodings (o200k, cl100k) rather than estimates.
    pub fn is_bpe(self) -> bool {
        matches!(self, Encoding::O200k | Encoding::Cl100k)
    }

    /// The `Approximate` count of a text of `chars` characters.
    pub fn approximate(chars: usize) -> usize {
        chars.div_ceil(4)
    }

    /// Count many texts, in parallel when the batch is large enough to pay for it.
    pub fn count_many(self, texts: &[&str]) -> Vec<usize> {
        let total: usize = texts.iter().map(|t| t.len()).sum();
        if total < PARALLEL_MIN_BYTES || texts.len() < 2 {
            texts.iter().map(|t| self.count(t)).collect()
        } else {
            crate::parallel::install(|| texts.par_iter().map(|t| self.count(t)).collect())
        }
    }
}

/// Below this many bytes a batch is counted on the calling thread (rayon's hand-off costs more).
const PARALLEL_MIN_BYTES: usize = 64 * 1024;

/// Tokens every message costs beyond its content: the role and the message delimiters
/// (OpenAI's published accounting for chat messages: 3 per message plus the role).
pub const MESSAGE_OVERHEAD: usize = 4;
/// Tokens a tool call or tool result block costs beyond its name, arguments or content (the
/// delimiters and the id that the provider renders around it).
pub const TOOL_BLOCK_OVERHEAD: usize = 3;

/// The token count of one message, with the share of each tool call and result so totals per
/// tool can be kept.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MessageTokens {
    pub total: usize,
    /// The tokens of each tool_use and tool_result block, overhead included, in block order; none
    /// for a message without tool blocks (most), which so costs no allocation. Shared so copies of
    /// a conversation's counts cost no allocation either.
    tools: Option<std::sync::Arc<[ToolCount]>>,
}

impl MessageTokens {
    /// A count of `total` tokens whose tool blocks are `tools` (in block order).
    pub fn new(total: usize, tools: Vec<ToolCount>) -> MessageTokens {
        MessageTokens {
            total,
            tools: if tools.is_empty() { None } else { Some(tools.into()) },
        }
    }

    /// The tokens of each tool_use and tool_result block, overhead included, in block order.
    #[inline]
    pub fn tools(&self) -> &[ToolCount] {
        self.tools.as_deref().unwrap_or_default()
    }

    /// The tokens of the tool block at `block` (its index in the message), if it is one.
    #[inline]
    pub fn tool(&self, block: usize) -> Option<usize> {
        self.tools().iter().find(|t| t.block() == block).map(|t| t.tokens)
    }

    /// The count of a message whose only block is a tool result of `block_tokens` tokens (what
    /// [`count_message`] gives for it, without reading the message again).
    pub fn single_result(block_tokens: usize) -> MessageTokens {
        MessageTokens::new(
            MESSAGE_OVERHEAD + block_tokens,
            vec![ToolCount::new(0, block_tokens, ToolSide::Result)],
        )
    }
}

/// The tokens of one tool_use or tool_result block of a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ToolCount {
    /// The block's index in its message (the id is the block's, read from there when needed:
    /// keeping a copy here cost an allocation per block counted). 32 bits, which makes the entry
    /// 16 bytes rather than 24: a message of 2^32 blocks would take hundreds of gigabytes.
    block: u32,
    pub tokens: usize,
    pub side: ToolSide,
}

impl ToolCount {
    /// # Panics
    /// If `block` does not fit in 32 bits (a message of more than 2^32 blocks cannot be held).
    pub fn new(block: usize, tokens: usize, side: ToolSide) -> ToolCount {
        ToolCount {
            block: u32::try_from(block).expect("a message holds fewer than 2^32 blocks"),
            tokens,
            side,
        }
    }

    /// The block's index in its message.
    #[inline]
    pub fn block(&self) -> usize {
        self.block as usize
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolSide {
    Call,
    Result,
}

/// Count one message: content, tool calls, tool results, thinking, images and opaque blocks,
/// plus [`MESSAGE_OVERHEAD`].
pub fn count_message(enc: Encoding, m: &Message) -> MessageTokens {
    let mut total = MESSAGE_OVERHEAD;
    let mut tools = Vec::new();
    for (block, b) in m.blocks.iter().enumerate() {
        let tokens = count_block(enc, b);
        total += tokens;
        let side = match &b.body {
            Body::ToolUse { .. } => ToolSide::Call,
            Body::ToolResult { .. } => ToolSide::Result,
            _ => continue,
        };
        tools.push(ToolCount::new(block, tokens, side));
    }
    MessageTokens::new(total, tools)
}

/// Count one block (see the module docs for the rules); contents through the memo.
pub fn count_block(enc: Encoding, b: &Block) -> usize {
    match &b.body {
        Body::Text { text } => enc.count_cached(text),
        Body::ToolUse { name, input, .. } => TOOL_BLOCK_OVERHEAD + enc.count(name) + enc.count_cached(&input.as_text()),
        Body::ToolResult { content, .. } => {
            TOOL_BLOCK_OVERHEAD
                + match content {
                    ResultContent::Text(s) => enc.count_cached(s),
                    ResultContent::Parts(parts) => parts.iter().map(|p| count_block(enc, p)).sum(),
                    ResultContent::Absent => 0,
                }
        }
        Body::Thinking { thinking, .. } => enc.count_cached(thinking),
        // Encrypted: its length is all there is to go on (base64, about 4 characters a token).
        Body::RedactedThinking { data } => data.len().div_ceil(4),
        Body::Image { source } => image::tokens(source),
        Body::Opaque { value } => opaque(enc, value),
    }
}

/// An opaque block's tokens: its JSON text, but for an image in a form the model reads as one
/// ([`image::of_object`]), which costs an image and its other fields as text (a screenshot's
/// base64 data is no text to the model; an image by file id is no 20-token string).
fn opaque(enc: Encoding, value: &serde_json::Value) -> usize {
    let Some(image) = image::of_object(value) else {
        return enc.count_cached(&value.to_string());
    };
    let rest: serde_json::Map<String, serde_json::Value> = value
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| k.as_str() != "image_url" && k.as_str() != "source")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    image + enc.count_cached(&serde_json::Value::Object(rest).to_string())
}

/// Count the messages at `positions` of `messages`, in that order (in parallel for large
/// batches).
pub fn count_each(enc: Encoding, messages: &[Message], positions: &[usize]) -> Vec<MessageTokens> {
    count_batch(positions, |&i| count_message(enc, &messages[i]))
}

/// Count many messages, in parallel for large batches.
pub fn count_messages(enc: Encoding, messages: &[Message]) -> Vec<MessageTokens> {
    count_batch(messages, |m| count_message(enc, m))
}

/// `count` of each item, on all cores from 16 items on.
fn count_batch<T: Sync>(items: &[T], count: impl Fn(&T) -> MessageTokens + Sync + Send) -> Vec<MessageTokens> {
    if items.len() < 16 {
        items.iter().map(&count).collect()
    } else {
        crate::parallel::install(|| items.par_iter().map(&count).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Format, Role, ToolInput};

    #[test]
    fn a_message_without_tool_blocks_holds_no_tool_list() {
        let plain = count_message(Encoding::Approximate, &Message::text(Role::User, "hello there"));
        assert!(plain.tools.is_none());
        assert!(plain.tools().is_empty());
        assert_eq!(plain, MessageTokens::new(plain.total, Vec::new()));
        assert_eq!(std::mem::size_of::<ToolCount>(), 16);
    }

    #[test]
    fn tool_blocks_are_counted_by_index_and_side() {
        let m = Message::new(
            Role::Assistant,
            vec![
                Block::new(Body::Text { text: "calling".into() }),
                Block::new(Body::ToolUse {
                    id: "c1".into(),
                    name: "read".into(),
                    input: ToolInput::Raw("{\"path\": \"a\"}".into()),
                }),
            ],
            Format::OpenAiChat,
        );
        let c = count_message(Encoding::Approximate, &m);
        let call = count_block(Encoding::Approximate, &m.blocks[1]);
        assert_eq!(c.tools(), [ToolCount::new(1, call, ToolSide::Call)]);
        assert_eq!(c.tool(1), Some(call));
        assert_eq!(c.tool(0), None);
        assert_eq!(
            c.total,
            MESSAGE_OVERHEAD + count_block(Encoding::Approximate, &m.blocks[0]) + call
        );

        let r = Message::new(
            Role::Tool,
            vec![Block::new(Body::ToolResult {
                tool_use_id: "c1".into(),
                content: ResultContent::Text("the file's text".into()),
                is_error: None,
            })],
            Format::OpenAiChat,
        );
        let counted = count_message(Encoding::Approximate, &r);
        assert_eq!(MessageTokens::single_result(counted.tools()[0].tokens), counted);
    }
}
