//! agentcontext's core: the conversation model, wire formats, token counting and the pure
//! operations over conversations. Nothing here knows about Python; the bindings live in
//! [`python`], the only module that touches the Python binding crates.

pub mod budget;
pub mod compact;
pub mod conversation;
pub mod error;
pub mod files;
pub(crate) mod fork;
pub mod formats;
pub mod memory;
pub mod model;
pub(crate) mod parallel;
pub mod search;
pub mod tokens;

mod python;

pub use conversation::Conversation;
pub use error::{Error, Result};
pub use model::{Block, Body, Format, Message, Role};
pub use tokens::Encoding;

/// The allocator for everything the core does: the clearing plan allocates a few small buffers
/// per cleared result, and takes about 1.5x as long under glibc malloc (`benches/allocators.sh`).
/// mimalloc v2, because v3 crashes in an extension loaded with dlopen once the first thread that
/// used it has exited (Cargo.toml says how). Behind the default `mimalloc` feature, so a program
/// using the crate as a library can keep its own.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
