//! The one error type of the crate.

use std::fmt;

/// Everything that can go wrong while loading or running the model.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelError {
    /// The GGUF bytes are malformed: `offset` is the byte position where reading failed.
    Gguf { offset: u64, message: String },
    /// A metadata key the model needs is missing or has the wrong type.
    Metadata { key: String, message: String },
    /// A tensor is missing, has an unexpected shape or an unsupported type.
    Tensor { name: String, message: String },
    /// The tokenizer could not be built from the GGUF metadata, or failed to encode/decode.
    Tokenizer(String),
    /// The input is out of range for the model (token id past the vocabulary, context full, ...).
    Input(String),
    /// The backend failed (device lost, readback failed, kernel launch rejected).
    Backend(String),
    /// The constraint rejected a token or failed; the matcher's message is kept.
    Constraint(String),
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Gguf { offset, message } => write!(f, "GGUF: {message} (at byte {offset})"),
            Self::Metadata { key, message } => write!(f, "GGUF metadata `{key}`: {message}"),
            Self::Tensor { name, message } => write!(f, "GGUF tensor `{name}`: {message}"),
            Self::Tokenizer(m) => write!(f, "tokenizer: {m}"),
            Self::Input(m) => write!(f, "input: {m}"),
            Self::Backend(m) => write!(f, "backend: {m}"),
            Self::Constraint(m) => write!(f, "constraint: {m}"),
        }
    }
}

impl std::error::Error for ModelError {}
