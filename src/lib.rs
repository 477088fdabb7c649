//! agentcontext's core: the conversation model, wire formats, token counting and the pure
//! operations over conversations. Nothing here knows about Python; the bindings live in
//! [`python`], the only module that touches the Python binding crates.

pub mod budget;
pub mod compact;
pub mod conversation;
pub mod error;
pub mod formats;
pub mod model;
pub mod tokens;

mod python;

pub use conversation::Conversation;
pub use error::{Error, Result};
pub use model::{Block, Body, Format, Message, Role};
pub use tokens::Encoding;
