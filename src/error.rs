//! The one error type of the core. Every variant carries the data a caller needs to act on it
//! (which message, which file and line); the messages are written for the user.

use std::fmt;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A message (or item) does not have the shape its format requires.
    #[error("message {index}: {reason}")]
    InvalidMessage { index: usize, reason: String },

    /// A valid message has no representation in the requested target format.
    #[error("message {index}: cannot convert to {format}: {reason}")]
    Conversion {
        index: usize,
        format: &'static str,
        reason: String,
    },

    /// A transcript file could not be parsed; `line` is 1-based for JSON Lines files and the
    /// message index (0-based) for JSON arrays, as `location` says.
    #[error("{path}: {location} {position}: {reason}")]
    InvalidFile {
        path: String,
        location: Location,
        position: usize,
        reason: String,
    },

    /// A transcript file could not be read at all.
    #[error("{path}: {}", io_reason(.source))]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },

    /// An option value is not one of the accepted names.
    #[error("unknown {what} {value:?} (expected one of: {expected})")]
    UnknownOption {
        what: &'static str,
        value: String,
        expected: &'static str,
    },

    /// A budget smaller than what must fit in it: `what` names it (the truncation marker, or the
    /// system messages, the reserve and the last round that cannot be split).
    #[error("a budget of {limit} {unit} cannot hold {what} ({needed} {unit} needed)")]
    BudgetTooSmall {
        limit: usize,
        unit: &'static str,
        needed: usize,
        what: String,
    },

    /// `trim_messages` cannot keep what it must keep within the budget.
    #[error("a budget of {limit} tokens cannot hold {what} ({needed} tokens needed)")]
    TrimBudget { limit: usize, needed: usize, what: String },

    /// A file read refused or failed; `message` is written to be shown to the model as the
    /// tool's answer (it says what to do instead).
    #[error("{message}")]
    FileRead {
        path: String,
        kind: &'static str,
        message: String,
    },

    /// A JSON path that cannot be parsed, or that selects nothing in the text it is applied to.
    #[error("JSON path {path:?}: {reason}")]
    JsonPath { path: String, reason: String },
    /// An argument that is not usable (an empty query, a bad regular expression).
    #[error("{what}: {reason}")]
    InvalidArgument { what: &'static str, reason: String },

    /// An index outside the conversation.
    #[error("message index {index} out of range for a conversation of {len} messages")]
    IndexOutOfRange { index: usize, len: usize },
}

/// Where in a file an [`Error::InvalidFile`] points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    Line,
    Message,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Location::Line => "line",
            Location::Message => "message",
        })
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What an I/O error says, for a message a user reads: "No such file or directory", without the
/// " (os error 2)" Rust's `Display` appends to an operating-system error (the code is kept on the
/// error, as `errno` of the Python exception that carries it).
#[must_use]
pub fn io_reason(err: &std::io::Error) -> String {
    let text = err.to_string();
    match err.raw_os_error() {
        Some(code) => text
            .strip_suffix(&format!(" (os error {code})"))
            .map_or_else(|| text.clone(), str::to_owned),
        None => text,
    }
}

impl Error {
    pub(crate) fn invalid(index: usize, reason: impl Into<String>) -> Self {
        Error::InvalidMessage {
            index,
            reason: reason.into(),
        }
    }

    /// Shift the message index of an invalid-message error (used when a batch is appended to a
    /// conversation that already holds messages, so the index names the whole conversation).
    #[must_use]
    pub fn offset_index(self, by: usize) -> Self {
        match self {
            Error::InvalidMessage { index, reason } => Error::InvalidMessage {
                index: index + by,
                reason,
            },
            Error::Conversion { index, format, reason } => Error::Conversion {
                index: index + by,
                format,
                reason,
            },
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_reason_drops_the_os_error_suffix() {
        let err = std::io::Error::from_raw_os_error(2);
        assert!(err.to_string().ends_with(" (os error 2)"), "{err}");
        assert_eq!(io_reason(&err), "No such file or directory");
        let io = Error::Io {
            path: "a.json".to_owned(),
            source: err,
        };
        assert_eq!(io.to_string(), "a.json: No such file or directory");
        let custom = std::io::Error::new(std::io::ErrorKind::InvalidInput, "is a FIFO");
        assert_eq!(io_reason(&custom), "is a FIFO");
    }
}
