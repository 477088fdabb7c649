//! Project memory: records (markdown files with front matter, one per record, in one directory
//! per project) and the index of them that goes into the system prompt. Writing records, locking
//! and the memory tools live in Python (`agentcontext.memory`); reading and indexing here.

pub mod index;
pub mod record;

pub use index::{MemoryIndex, Problem, Refresh, RenderLimits};
pub use record::{Kind, MAX_RECORD_BYTES, Record};
