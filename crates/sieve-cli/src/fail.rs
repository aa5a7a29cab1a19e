//! The CLI's one error type: printed as `{"error": "..."}`, exit status 2.

use std::fmt::Display;

/// A failure to report as JSON.
#[derive(Debug)]
pub struct CliError(pub String);

impl CliError {
    pub fn new(msg: impl Into<String>) -> Self {
        CliError(msg.into())
    }
}

impl<E: Display> From<E> for CliError
where
    E: std::error::Error,
{
    fn from(e: E) -> Self {
        CliError(e.to_string())
    }
}

