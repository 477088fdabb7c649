//! Core errors → the exception hierarchy of `agentcontext.errors`, by one exhaustive match.

use pyo3::PyErr;

use crate::error::{Error, Location};

pyo3::import_exception!(agentcontext.errors, InvalidMessageError);
pyo3::import_exception!(agentcontext.errors, ConversionError);
pyo3::import_exception!(agentcontext.errors, TranscriptError);
pyo3::import_exception!(agentcontext.errors, TranscriptReadError);
pyo3::import_exception!(agentcontext.errors, OptionError);
pyo3::import_exception!(agentcontext.errors, ArgumentTypeError);
pyo3::import_exception!(agentcontext.errors, MessageIndexError);
pyo3::import_exception!(agentcontext.errors, BudgetError);
pyo3::import_exception!(agentcontext.errors, FileReadError);

impl From<Error> for PyErr {
    fn from(err: Error) -> PyErr {
        let message = err.to_string();
        match err {
            Error::InvalidMessage { index, .. } => InvalidMessageError::new_err((message, index)),
            Error::Conversion { index, format, .. } => ConversionError::new_err((message, index, format)),
            Error::InvalidFile {
                path,
                location,
                position,
                ..
            } => {
                let (line, index) = match location {
                    Location::Line => (Some(position), None),
                    Location::Message => (None, Some(position)),
                };
                TranscriptError::new_err((message, path, line, index))
            }
            Error::Io { path, source } => {
                TranscriptReadError::new_err((source.raw_os_error().unwrap_or(0), message, path))
            }
            Error::UnknownOption { .. } | Error::JsonPath { .. } | Error::InvalidArgument { .. } => {
                OptionError::new_err(message)
            }
            Error::IndexOutOfRange { .. } => MessageIndexError::new_err(message),
            Error::BudgetTooSmall { needed, .. } | Error::TrimBudget { needed, .. } => {
                BudgetError::new_err((message, needed))
            }
            Error::FileRead { path, kind, .. } => FileReadError::new_err((message, path, kind)),
        }
    }
}
