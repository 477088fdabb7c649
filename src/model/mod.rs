//! The typed conversation model shared by every format.
//!
//! A [`Message`] has a [`Role`] and a list of [`Block`]s. Whatever a source format carries that the
//! model does not understand is kept in `extra` maps (per message, per block, and per Responses
//! item), so a message the library did not change is written back exactly as it came in.

use std::sync::Arc;

use serde_json::{Map, Value};

/// Unknown fields of a message, block or item, kept in their original order.
///
/// Almost every message and block has none, so the map is boxed and absent when empty: 8 bytes and
/// no allocation instead of an inline `Map` (72 bytes). An absent map and an empty one are the same
/// value (equal, printed alike); a map left empty by a removal or `clear` is dropped.
#[derive(Clone, Default)]
pub struct Extra(Option<Box<Map<String, Value>>>);

impl Extra {
    #[must_use]
    pub const fn new() -> Self {
        Extra(None)
    }

    pub fn is_empty(&self) -> bool {
        self.0.as_ref().is_none_or(|m| m.is_empty())
    }

    pub fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |m| m.len())
    }

    /// The fields as a map, if there are any.
    pub fn as_map(&self) -> Option<&Map<String, Value>> {
        self.0.as_deref().filter(|m| !m.is_empty())
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.as_ref().and_then(|m| m.get(key))
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.0.as_ref().is_some_and(|m| m.contains_key(key))
    }

    pub fn iter(&self) -> serde_json::map::Iter<'_> {
        self.0.as_deref().unwrap_or(empty_map()).iter()
    }

    pub fn keys(&self) -> serde_json::map::Keys<'_> {
        self.0.as_deref().unwrap_or(empty_map()).keys()
    }

    /// Insert a field (at the end when new), returning the value it replaced.
    pub fn insert(&mut self, key: String, value: Value) -> Option<Value> {
        self.0.get_or_insert_with(Box::default).insert(key, value)
    }

    /// Remove a field keeping the order of the others; the map goes when it empties.
    pub fn shift_remove(&mut self, key: &str) -> Option<Value> {
        let m = self.0.as_mut()?;
        let old = m.shift_remove(key);
        if m.is_empty() {
            self.0 = None;
        }
        old
    }

    pub fn clear(&mut self) {
        self.0 = None;
    }

    /// The fields as a map (empty when there are none).
    #[must_use]
    pub fn into_map(self) -> Map<String, Value> {
        self.0.map(|m| *m).unwrap_or_default()
    }
}

/// The shared empty map the accessors of an absent [`Extra`] borrow.
fn empty_map() -> &'static Map<String, Value> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    EMPTY.get_or_init(Map::new)
}

impl From<Map<String, Value>> for Extra {
    /// An empty map is kept as none; a non-empty one is boxed as it is (its spare room included).
    fn from(map: Map<String, Value>) -> Self {
        if map.is_empty() {
            Extra(None)
        } else {
            Extra(Some(Box::new(map)))
        }
    }
}

impl FromIterator<(String, Value)> for Extra {
    fn from_iter<I: IntoIterator<Item = (String, Value)>>(iter: I) -> Self {
        Extra::from(iter.into_iter().collect::<Map<String, Value>>())
    }
}

impl Extend<(String, Value)> for Extra {
    fn extend<I: IntoIterator<Item = (String, Value)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k, v);
        }
    }
}

impl<'a> IntoIterator for &'a Extra {
    type Item = (&'a String, &'a Value);
    type IntoIter = serde_json::map::Iter<'a>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl IntoIterator for Extra {
    type Item = (String, Value);
    type IntoIter = serde_json::map::IntoIter;

    fn into_iter(self) -> Self::IntoIter {
        self.into_map().into_iter()
    }
}

impl PartialEq for Extra {
    /// Absent and empty are equal; otherwise as `Map` compares (keys and values, order ignored).
    fn eq(&self, other: &Self) -> bool {
        match (self.as_map(), other.as_map()) {
            (None, None) => true,
            (Some(a), Some(b)) => a == b,
            _ => false,
        }
    }
}

impl std::fmt::Debug for Extra {
    /// As the map it holds (`{}` when absent).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    System,
    Developer,
    User,
    Assistant,
    Tool,
}

impl Role {
    pub const ALL: [Role; 5] = [Role::System, Role::Developer, Role::User, Role::Assistant, Role::Tool];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::Developer => "developer",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }

    pub fn parse(s: &str) -> Option<Role> {
        Some(match s {
            "system" => Role::System,
            "developer" => Role::Developer,
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "tool" => Role::Tool,
            _ => return None,
        })
    }

    pub fn index(self) -> usize {
        self as usize
    }

    /// System and developer messages carry instructions rather than conversation.
    pub fn is_instruction(self) -> bool {
        matches!(self, Role::System | Role::Developer)
    }
}

/// The wire formats the library reads and writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// The library's own JSON Lines format (a superset of the shared corpus' normalized format).
    Native,
    /// OpenAI Chat Completions messages.
    OpenAiChat,
    /// OpenAI Responses input items.
    Responses,
    /// Anthropic Messages API messages.
    Anthropic,
}

impl Format {
    pub const NAMES: &'static str = "\"openai\", \"responses\", \"anthropic\", \"jsonl\"";

    pub fn as_str(self) -> &'static str {
        match self {
            Format::Native => "jsonl",
            Format::OpenAiChat => "openai",
            Format::Responses => "responses",
            Format::Anthropic => "anthropic",
        }
    }

    pub fn parse(s: &str) -> Option<Format> {
        Some(match s {
            "jsonl" | "native" => Format::Native,
            "openai" | "chat" | "openai_chat" => Format::OpenAiChat,
            "responses" | "openai_responses" => Format::Responses,
            "anthropic" => Format::Anthropic,
            _ => return None,
        })
    }
}

/// How a `content` field was written at the source, so it can be written back the same way.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ContentForm {
    /// A plain string.
    #[default]
    String,
    /// A list of parts / blocks.
    Parts,
    /// An explicit `null`.
    Null,
    /// No `content` key at all.
    Absent,
    /// One JSON value that is neither a string nor a list (the object a Responses built-in
    /// tool's output item holds, such as a `computer_call_output` screenshot), held as the single
    /// opaque part of a tool result so that it is counted, and written back as that value.
    Value,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Message {
    pub role: Role,
    /// Shared, so copies of a conversation (slices, cleared or compacted working sets) share the
    /// content of every message they did not change; `Arc::make_mut` copies on write (a list that
    /// grows or shrinks is built anew). A slice rather than a `Vec`: one allocation per message and
    /// one pointer hop fewer to its blocks.
    pub blocks: Arc<[Block]>,
    pub form: ContentForm,
    /// The format this message was read from; its `extra` fields are written back only to it.
    pub origin: Format,
    pub extra: Extra,
}

impl Message {
    pub fn new(role: Role, blocks: Vec<Block>, origin: Format) -> Self {
        Message {
            role,
            blocks: blocks.into(),
            form: ContentForm::Parts,
            origin,
            extra: Extra::new(),
        }
    }

    pub fn text(role: Role, text: impl Into<String>) -> Self {
        Message {
            role,
            blocks: Arc::new([Block::new(Body::Text { text: text.into() })]),
            form: ContentForm::String,
            origin: Format::Native,
            extra: Extra::new(),
        }
    }

    /// The tool_result blocks of this message, as `(tool_use_id, content, is_error)`.
    pub fn tool_results(&self) -> impl Iterator<Item = (&str, &ResultContent, Option<bool>)> {
        self.blocks.iter().filter_map(|b| match &b.body {
            Body::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => Some((tool_use_id.as_str(), content, *is_error)),
            _ => None,
        })
    }

    /// True for a message that only carries tool results (an OpenAI `tool` message, or an
    /// Anthropic user message whose blocks are all tool_result blocks).
    pub fn is_tool_results_only(&self) -> bool {
        !self.blocks.is_empty() && self.blocks.iter().all(|b| matches!(b.body, Body::ToolResult { .. }))
    }

    /// All visible text of the message joined by newlines (text blocks only).
    pub fn joined_text(&self) -> String {
        let mut out = String::new();
        for b in self.blocks.iter() {
            if let Body::Text { text } = &b.body {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(text);
            }
        }
        out
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    pub body: Body,
    /// Unknown fields of this block or part (`cache_control`, `citations`, `annotations`, ...).
    pub extra: Extra,
    /// Responses only: the fields of the item this block opens. Blocks that continue the item
    /// opened by an earlier block (more parts of one `message` item) have `None`.
    pub item: Option<Box<ItemMeta>>,
}

impl Block {
    pub fn new(body: Body) -> Self {
        Block {
            body,
            extra: Extra::new(),
            item: None,
        }
    }
}

/// The item-level fields of an OpenAI Responses item that was grouped into an assistant message.
#[derive(Clone, Debug, PartialEq)]
pub struct ItemMeta {
    /// Every field of the item except the ones the block models (`content`, `call_id`, `name`,
    /// `arguments`, `input`).
    pub fields: Extra,
    /// How the item's `content` was written (for `message` items).
    pub form: ContentForm,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Body {
    Text {
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        input: ToolInput,
    },
    ToolResult {
        tool_use_id: String,
        content: ResultContent,
        is_error: Option<bool>,
    },
    Thinking {
        thinking: String,
        signature: Option<String>,
    },
    RedactedThinking {
        data: String,
    },
    Image {
        source: ImageSource,
    },
    /// A block or item the model does not interpret (documents, server tool calls, compaction
    /// blocks, web search results, ...). Kept verbatim and written back only to its origin format.
    Opaque {
        value: Box<Value>,
    },
}

impl Body {
    pub fn kind(&self) -> &'static str {
        match self {
            Body::Text { .. } => "text",
            Body::ToolUse { .. } => "tool_use",
            Body::ToolResult { .. } => "tool_result",
            Body::Thinking { .. } => "thinking",
            Body::RedactedThinking { .. } => "redacted_thinking",
            Body::Image { .. } => "image",
            Body::Opaque { .. } => "opaque",
        }
    }
}

/// The input of a tool call, kept in the form it arrived in.
#[derive(Clone, Debug, PartialEq)]
pub enum ToolInput {
    /// A JSON document as text (OpenAI `arguments`), kept byte for byte and parsed only on demand.
    Raw(String),
    /// A JSON value (Anthropic `input`); boxed, so the other inputs and blocks do not take its size.
    Json(Box<Value>),
    /// Free-form text input (OpenAI Responses `custom_tool_call`, e.g. Codex `apply_patch`).
    Freeform(String),
}

impl ToolInput {
    /// The input as the JSON text a model sees (for counting and previews).
    pub fn as_text(&self) -> std::borrow::Cow<'_, str> {
        match self {
            ToolInput::Raw(s) | ToolInput::Freeform(s) => std::borrow::Cow::Borrowed(s),
            ToolInput::Json(v) => std::borrow::Cow::Owned(v.to_string()),
        }
    }

    /// The input as a JSON object for formats that require one (Anthropic `input`).
    ///
    /// `Raw` text that is not a JSON object is wrapped as `{"input": <text>}`, and so is free-form
    /// input, the same rule the shared corpus uses for free-form tools.
    pub fn to_object(&self) -> Value {
        match self {
            ToolInput::Json(v) => Value::clone(v),
            ToolInput::Raw(s) => match serde_json::from_str::<Value>(s) {
                Ok(v @ Value::Object(_)) => v,
                _ => wrap_input(s),
            },
            ToolInput::Freeform(s) => wrap_input(s),
        }
    }

    /// The input as an OpenAI `arguments` string.
    pub fn to_arguments(&self) -> String {
        match self {
            ToolInput::Raw(s) => s.clone(),
            ToolInput::Json(v) => v.to_string(),
            ToolInput::Freeform(s) => wrap_input(s).to_string(),
        }
    }
}

fn wrap_input(s: &str) -> Value {
    let mut m = Map::new();
    m.insert("input".to_owned(), Value::String(s.to_owned()));
    Value::Object(m)
}

/// The content of a tool result.
#[derive(Clone, Debug, PartialEq)]
pub enum ResultContent {
    Text(String),
    Parts(Vec<Block>),
    /// No content key (Anthropic allows a tool_result without content).
    Absent,
}

impl ResultContent {
    /// The text of the result: the string, or the text parts joined by newlines.
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        match self {
            ResultContent::Text(s) => std::borrow::Cow::Borrowed(s),
            ResultContent::Absent => std::borrow::Cow::Borrowed(""),
            ResultContent::Parts(parts) => {
                let mut out = String::new();
                for p in parts {
                    if let Body::Text { text } = &p.body {
                        if !out.is_empty() {
                            out.push('\n');
                        }
                        out.push_str(text);
                    }
                }
                std::borrow::Cow::Owned(out)
            }
        }
    }
}

/// An image, as base64 data or a URL.
#[derive(Clone, Debug, PartialEq)]
pub enum ImageSource {
    Base64 { media_type: String, data: String },
    Url(String),
}

impl ImageSource {
    /// Parse an OpenAI-style URL, which may be a `data:` URL holding base64 data.
    pub fn from_url(url: &str) -> ImageSource {
        if let Some(rest) = url.strip_prefix("data:") {
            if let Some((media, data)) = rest.split_once(";base64,") {
                return ImageSource::Base64 {
                    media_type: media.to_owned(),
                    data: data.to_owned(),
                };
            }
        }
        ImageSource::Url(url.to_owned())
    }

    /// The image as an OpenAI-style URL (`data:` URL for base64 data).
    pub fn to_url(&self) -> String {
        match self {
            ImageSource::Base64 { media_type, data } => format!("data:{media_type};base64,{data}"),
            ImageSource::Url(u) => u.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn messages_and_blocks_stay_small() {
        // One of each per message or block of every conversation held: growth here is memory.
        assert_eq!(std::mem::size_of::<Message>(), 32);
        assert!(std::mem::size_of::<Body>() <= 80, "{}", std::mem::size_of::<Body>());
        assert!(std::mem::size_of::<Block>() <= 96, "{}", std::mem::size_of::<Block>());
    }

    #[test]
    fn extra_is_eight_bytes_and_absent_when_empty() {
        assert_eq!(std::mem::size_of::<Extra>(), 8);
        assert!(Extra::from(Map::new()).as_map().is_none());
        assert!(Extra::from_iter(Vec::<(String, Value)>::new()).as_map().is_none());
    }

    #[test]
    fn extra_emptied_equals_and_prints_as_absent() {
        let mut e = Extra::new();
        e.insert("a".into(), json!(1));
        e.insert("b".into(), json!([2]));
        assert_eq!(e.len(), 2);
        assert_ne!(e, Extra::new());
        assert_eq!(format!("{e:?}"), format!("{:?}", e.clone().into_map()));
        assert_eq!(e.shift_remove("a"), Some(json!(1)));
        assert_eq!(e.keys().collect::<Vec<_>>(), ["b"]);
        assert_eq!(e.shift_remove("b"), Some(json!([2])));
        assert_eq!(e.shift_remove("b"), None);
        assert!(e.is_empty());
        assert_eq!(e, Extra::new());
        assert_eq!(format!("{e:?}"), "{}");
        assert_eq!(format!("{:?}", Extra::new()), format!("{:?}", Map::new()));

        // A message whose field was added and taken away again is the message it was.
        let m = Message::text(Role::User, "hi");
        let mut n = m.clone();
        n.extra.insert("k".into(), json!("v"));
        assert_ne!(m, n);
        n.extra.shift_remove("k");
        assert_eq!(m, n);
        assert_eq!(format!("{m:?}"), format!("{n:?}"));
    }

    #[test]
    fn extra_keeps_order_and_compares_as_a_map() {
        let e: Extra = [("z".to_owned(), json!(1)), ("a".to_owned(), json!(2))]
            .into_iter()
            .collect();
        assert_eq!(e.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(), ["z", "a"]);
        assert_eq!(e.into_iter().map(|(k, _)| k).collect::<Vec<_>>(), ["z", "a"]);
        let mut x = Extra::new();
        x.extend([("a".to_owned(), json!(2)), ("z".to_owned(), json!(1))]);
        let y: Extra = [("z".to_owned(), json!(1)), ("a".to_owned(), json!(2))]
            .into_iter()
            .collect();
        // As `Map` compares: the same fields in another order are equal.
        assert_eq!(x, y);
        assert_eq!(x.get("z"), Some(&json!(1)));
        assert!(x.contains_key("a") && !x.contains_key("b"));
        x.clear();
        assert_eq!(x, Extra::new());
    }
}
