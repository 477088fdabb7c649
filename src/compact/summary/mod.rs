//! The offline summary's pure parts: its fit within a cap of tokens ([`fit`]), the sections it
//! writes from a handoff's long lists in the core ([`facts`]) and the text helpers
//! it shares with the Python summarizer ([`text`]: Python's string semantics, to the byte).

pub mod facts;
pub mod fit;
pub mod text;

#[cfg(test)]
mod fit_tests;

pub use facts::{Lines, handoff_lines, merged};
pub use fit::{FitInput, Fitted, LATEST_CUT, SECTIONS, fit, render};
