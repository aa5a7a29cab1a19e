//! Error types. Every fallible public call returns one of these; none of them
//! carries a bare `String` as its only content.

use std::fmt;

/// Why a tokenizer.json could not be turned into a [`crate::Vocabulary`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VocabError {
    /// The text is not JSON or lacks a field the vocabulary needs.
    Json { message: String },
    /// The tokenizer model is not one sieve can map to bytes (e.g. WordPiece).
    Unsupported { model: String },
    /// A vocabulary entry cannot be decoded to bytes.
    BadToken { id: u32, token: String, reason: &'static str },
    /// Two entries claim the same id, or ids leave holes.
    BadId { id: u32, reason: &'static str },
    /// The logits width is smaller than the vocabulary.
    Width { width: usize, vocab: usize },
    /// An end-of-sequence id is outside the vocabulary.
    Eos { id: u32 },
}

impl fmt::Display for VocabError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VocabError::Json { message } => write!(f, "invalid tokenizer.json: {message}"),
            VocabError::Unsupported { model } => write!(f, "unsupported tokenizer model {model:?}"),
            VocabError::BadToken { id, token, reason } => {
                write!(f, "token {id} ({token:?}) cannot be decoded: {reason}")
            }
            VocabError::BadId { id, reason } => write!(f, "token id {id}: {reason}"),
            VocabError::Width { width, vocab } => {
                write!(f, "logits width {width} is smaller than the vocabulary ({vocab} tokens)")
            }
            VocabError::Eos { id } => write!(f, "end-of-sequence id {id} is not in the vocabulary"),
        }
    }
}

impl std::error::Error for VocabError {}

/// What went wrong while compiling a constraint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompileErrorKind {
    /// The regex does not parse or uses a feature sieve cannot enforce exactly.
    Regex,
    /// The GBNF text does not parse.
    Syntax,
    /// A rule is referenced but never defined.
    UndefinedRule,
    /// A rule is defined twice.
    DuplicateRule,
    /// The grammar has no `root` rule.
    NoRoot,
    /// The constraint matches no string at all.
    Empty,
    /// A limit in [`crate::Limits`] was exceeded.
    Limit,
    /// A feature that cannot be enforced exactly.
    Unsupported,
    /// The JSON Schema is malformed (not JSON, a keyword of the wrong type,
    /// a reference that does not resolve).
    Schema,
    /// A structural tag is malformed: no tags, an empty trigger, or a tag
    /// that no trigger starts.
    StructuralTag,
}

impl CompileErrorKind {
    /// The kind as the bindings name it: `"regex"`, `"syntax"`, `"undefined_rule"`, ...
    pub fn name(&self) -> &'static str {
        match self {
            CompileErrorKind::Regex => "regex",
            CompileErrorKind::Syntax => "syntax",
            CompileErrorKind::UndefinedRule => "undefined_rule",
            CompileErrorKind::DuplicateRule => "duplicate_rule",
            CompileErrorKind::NoRoot => "no_root",
            CompileErrorKind::Empty => "empty",
            CompileErrorKind::Limit => "limit",
            CompileErrorKind::Unsupported => "unsupported",
            CompileErrorKind::Schema => "schema",
            CompileErrorKind::StructuralTag => "structural_tag",
        }
    }
}

/// A constraint that failed to compile: what, where (byte offset into the
/// source, with line and column) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileError {
    /// The class of failure.
    pub kind: CompileErrorKind,
    /// Human-readable explanation.
    pub message: String,
    /// Byte offset into the source text, when the failure has a place.
    pub offset: Option<usize>,
    /// 1-based line and column of `offset`.
    pub line_col: Option<(usize, usize)>,
}

impl CompileError {
    pub(crate) fn new(kind: CompileErrorKind, message: impl Into<String>) -> Self {
        CompileError { kind, message: message.into(), offset: None, line_col: None }
    }

    pub(crate) fn at(kind: CompileErrorKind, message: impl Into<String>, src: &str, offset: usize) -> Self {
        let offset = offset.min(src.len());
        let before = &src.as_bytes()[..offset];
        let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
        let col = offset - before.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1) + 1;
        CompileError { kind, message: message.into(), offset: Some(offset), line_col: Some((line, col)) }
    }
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line_col {
            Some((l, c)) => write!(f, "{} at line {l}, column {c}", self.message),
            None => write!(f, "{}", self.message),
        }
    }
}

impl std::error::Error for CompileError {}

/// A matcher operation that failed. The matcher state is left as it was
/// before the call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MatchError {
    /// The token is not allowed in the current state.
    TokenRejected { token: u32 },
    /// The bytes are not allowed; `at` is the offset of the first bad byte.
    BytesRejected { at: usize },
    /// The token id is outside the vocabulary (or a padding id).
    UnknownToken { token: u32 },
    /// The matcher already took an end-of-sequence token.
    Terminated,
    /// The mask buffer is shorter than `ceil(width / 32)` words.
    MaskTooSmall { words: usize, needed: usize },
    /// Rolling back more steps than were taken.
    RollbackTooFar { requested: usize, available: usize },
    /// A limit in [`crate::Limits`] was exceeded while computing. It sticks: the matcher
    /// returns it from every later call, without redoing the work, until `reset`.
    Limit { what: &'static str, limit: usize },
}

impl fmt::Display for MatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MatchError::TokenRejected { token } => write!(f, "token {token} is not allowed here"),
            MatchError::BytesRejected { at } => write!(f, "byte at offset {at} is not allowed here"),
            MatchError::UnknownToken { token } => write!(f, "token {token} is not in the vocabulary"),
            MatchError::Terminated => write!(f, "the matcher has already terminated"),
            MatchError::MaskTooSmall { words, needed } => {
                write!(f, "mask has {words} words, needs {needed}")
            }
            MatchError::RollbackTooFar { requested, available } => {
                write!(f, "cannot roll back {requested} steps, only {available} taken")
            }
            MatchError::Limit { what, limit } => write!(f, "limit exceeded: {what} (limit {limit})"),
        }
    }
}

impl std::error::Error for MatchError {}
