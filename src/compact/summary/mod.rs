//! The offline summary's pure parts: its fit within a cap of tokens ([`fit`]) and the text helpers
//! it shares with the Python summarizer ([`text`]: Python's string semantics, to the byte).

pub mod fit;
pub mod text;

#[cfg(test)]
mod fit_tests;

pub use fit::{FitInput, Fitted, SECTIONS, fit, render};
