//! Conversation surgery: the deterministic half of compaction. Pairing and structure, validation,
//! repair, the protected set, clearing, recent-suffix selection, where the raw tail starts and how
//! a cut round shares its room, splitting by token share and dedup — all over parsed messages with
//! cached counts, never separating a tool call from its result.

mod args;
pub mod clear;
pub mod fill;
pub mod handoff;
pub mod repair;
pub mod request;
pub mod select;
pub mod structure;
pub mod summary;
pub mod surgery;
pub mod trim;
pub mod validate;

pub use clear::{ClearOptions, ClearReport, clear_tool_results, dedup_repeated_calls, plan_clear, plan_clear_counted};
pub use fill::{RawStart, equal_shares, give_way, raw_start, raw_start_at};
pub use repair::{Change, ChangeKind, RepairOptions, repair, repair_with};
pub use select::{Boundary, Protected, Suffix, protected, recent_suffix, split_by_share};
pub use structure::{Pairing, groups, rounds};
pub use surgery::Protection;
pub use validate::{Violation, ViolationKind, validate, validate_with};

/// Helpers shared by the tests of this module's parts.
#[cfg(test)]
pub(crate) mod testing {
    use crate::formats;
    use crate::model::Message;
    use serde_json::{Value, json};

    /// OpenAI Chat messages from a JSON array.
    pub fn chat(v: Value) -> Vec<Message> {
        formats::openai_chat::read(serde_json::from_value(v).unwrap()).unwrap()
    }

    /// A deterministic xorshift sequence from `seed` (not zero), for randomized tests.
    pub fn xorshift(seed: u64) -> impl FnMut() -> u64 {
        let mut state = seed;
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        }
    }

    /// A Chat tool call with id `id` to a tool `f` with no arguments.
    pub fn call(id: &str) -> Value {
        json!({"id": id, "type": "function", "function": {"name": "f", "arguments": "{}"}})
    }
}
