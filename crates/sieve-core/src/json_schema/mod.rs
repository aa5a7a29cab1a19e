//! JSON Schema to a grammar.
//!
//! [`to_grammar`] translates a schema (draft 2020-12, and the draft-07/04 forms
//! found in the wild) into a grammar whose language is exactly the set of
//! JSON texts that validate, in the spelling this module writes: declared
//! properties in schema order (undeclared ones before any of them or at the
//! end; see [`PropertyOrder`] for any order), numbers without exponents when bounded,
//! strings with only the escapes JSON requires.
//! Every valid value keeps at least one accepted spelling; no invalid one is
//! accepted.
//!
//! What cannot be enforced exactly is, in [`Mode::Strict`] (the default), a
//! [`SchemaError`] naming the keyword and its JSON pointer; in
//! [`Mode::Lenient`] the keyword is left out and reported in
//! [`SchemaGrammar::warnings`].
//!
//! Pieces: `compile` walks the schema (references become rules, so recursive
//! schemas become recursive rules; `allOf` merges into one keyword map;
//! `anyOf`/`oneOf` become alternatives; a `oneOf` branch that may overlap
//! another gets `not` of the other's own keywords, the siblings both hold
//! left out), `regex` translates ECMA-262 patterns, `format` writes
//! the regular formats as patterns, `dfa` intersects and splits string
//! languages (patterns with lengths, `patternProperties` regions), `number`
//! turns numeric bounds into digit-level expressions, `gbnf` builds the
//! grammar's expressions (handed to the grammar compiler as they are, not
//! as text; [`SchemaGrammar::gbnf`] writes them as GBNF).
//!
//! Enforced exactly: `type`, `enum`, `const`, `properties`, `required`,
//! `additionalProperties`, `patternProperties`, `propertyNames` (patterns,
//! regular formats, lengths, enum and const), `minProperties`/`maxProperties`,
//! `prefixItems`/`items` (and the draft-07 tuple form with `additionalItems`),
//! `minItems`/`maxItems`, `contains`/`minContains` (without `maxContains`;
//! several `contains` from `allOf`, each matched by some item),
//! `minLength`/`maxLength` with `pattern` and `format`, numeric bounds,
//! integer `multipleOf` (with bounds too: the range's automaton times the
//! remainder) and powers of ten, `dependencies`/`dependentRequired`/
//! `dependentSchemas`, `if`/`then`/`else`, local `$ref`/`$defs`/`definitions`/
//! `$anchor` (and plain-name `$id`, or `id` in draft 4), boolean schemas,
//! `allOf` with several patterns, and `not`: the negation of a schema is the
//! union of its keywords' negations, each on the kind of value the keyword
//! applies to (types, literals, `required`, `properties`, lengths and counts,
//! bounds, integer `multipleOf`, patterns and formats,
//! `items`/`prefixItems`/`contains`, `anyOf`, `oneOf`, `not`, and
//! `additionalProperties: false` where the object's own keys are closed),
//! kinds where the context already excludes the schema left out; `oneOf`
//! branches that may overlap become "this branch and not the others".
//! An error (strict) or a warning (lenient): `uniqueItems` on arrays that may
//! hold two items of a schema with more than 10 values, negations of other
//! `additionalProperties`, of `patternProperties`, `propertyNames`,
//! fractional `multipleOf` and `uniqueItems`, object or array literals (and
//! so `oneOf` whose overlap needs them), `unevaluated*`, remote references.

mod compile;
mod dfa;
mod format;
mod gbnf;
mod number;
mod regex;

use serde_json::Value;
use std::fmt;

/// Whitespace the grammar allows between JSON tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Whitespace {
    /// Any JSON whitespace, any amount (the JSON grammar itself).
    #[default]
    Any,
    /// None at all.
    Compact,
    /// At most this many whitespace characters at each place, so a model
    /// cannot loop on spaces.
    Bounded(u32),
}

/// The order object members may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum PropertyOrder {
    /// Declared properties in schema order, additional ones after them.
    #[default]
    Schema,
    /// Declared properties in any order (each at most once) when an object
    /// declares at most this many (16 at most), and while the schema's
    /// objects in any order together stay within
    /// [`crate::Limits::max_order_states`] sets of members (2^n for n properties);
    /// schema order otherwise. Undeclared members may come between declared
    /// ones unless `minProperties`/`maxProperties` count them.
    AnyUpTo(u8),
}

/// Strict errors out on what cannot be enforced; lenient leaves it out and warns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Mode {
    /// Anything not enforced exactly is a [`SchemaError`].
    #[default]
    Strict,
    /// Keywords that cannot be enforced are left out and listed as warnings;
    /// `oneOf` with overlapping branches is treated as `anyOf`.
    Lenient,
}

/// Options for [`to_grammar`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct JsonSchemaOptions {
    /// Whitespace between tokens.
    pub whitespace: Whitespace,
    /// Strict or lenient.
    pub mode: Mode,
    /// Order of object members.
    pub property_order: PropertyOrder,
    /// When false, a missing `additionalProperties` means `false` instead of
    /// the specification's `true`.
    pub additional_properties_default: bool,
}

impl Default for JsonSchemaOptions {
    fn default() -> Self {
        JsonSchemaOptions {
            whitespace: Whitespace::Any,
            mode: Mode::Strict,
            property_order: PropertyOrder::Schema,
            additional_properties_default: true,
        }
    }
}

/// A keyword left out in lenient mode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    /// The keyword, e.g. `uniqueItems`.
    pub keyword: String,
    /// JSON pointer of the schema holding it.
    pub pointer: String,
    /// What was not enforced.
    pub message: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at {:?}: {}", self.keyword, self.pointer, self.message)
    }
}

/// The translation: a grammar (see [`SchemaGrammar::gbnf`] for its text), and
/// lenient-mode warnings.
#[derive(Debug)]
pub struct SchemaGrammar {
    rules: crate::gbnf::Rules,
    root: u32,
    /// Keywords not enforced (lenient mode only; empty in strict mode).
    pub warnings: Vec<Warning>,
}

impl SchemaGrammar {
    /// The grammar as GBNF text, its start rule `root` first.
    pub fn gbnf(&self) -> String {
        self.rules.write(self.root)
    }

    /// The grammar's rules and its start rule.
    pub(crate) fn rules(&self) -> (&crate::gbnf::Rules, u32) {
        (&self.rules, self.root)
    }
}

/// Why a schema did not translate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SchemaErrorKind {
    /// The keyword has no exact translation here.
    Unsupported(String),
    /// The schema is malformed (wrong value type, bad pointer, bad pattern).
    Invalid(String),
    /// A [`crate::Limits`] value was exceeded.
    Limit(&'static str),
    /// No JSON value satisfies the schema.
    Unsatisfiable,
}

/// A translation error, naming the keyword and the JSON pointer of its schema.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaError {
    /// The keyword at fault (empty for the schema as a whole).
    pub keyword: String,
    /// JSON pointer of the schema holding it.
    pub pointer: String,
    /// What went wrong.
    pub kind: SchemaErrorKind,
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match &self.kind {
            SchemaErrorKind::Unsupported(m) => format!("not enforceable exactly: {m}"),
            SchemaErrorKind::Invalid(m) => format!("invalid schema: {m}"),
            SchemaErrorKind::Limit(l) => format!("limit exceeded: {l}"),
            SchemaErrorKind::Unsatisfiable => "no value satisfies the schema".to_string(),
        };
        write!(f, "{} at {:?}: {what}", self.keyword, self.pointer)
    }
}

impl std::error::Error for SchemaError {}

impl SchemaErrorKind {
    /// The class of compile failure this is.
    pub fn compile_kind(&self) -> crate::CompileErrorKind {
        match self {
            SchemaErrorKind::Unsupported(_) => crate::CompileErrorKind::Unsupported,
            SchemaErrorKind::Invalid(_) => crate::CompileErrorKind::Schema,
            SchemaErrorKind::Limit(_) => crate::CompileErrorKind::Limit,
            SchemaErrorKind::Unsatisfiable => crate::CompileErrorKind::Empty,
        }
    }
}

impl From<SchemaError> for crate::CompileError {
    fn from(e: SchemaError) -> Self {
        crate::CompileError::new(e.kind.compile_kind(), e.to_string())
    }
}

/// Translate a JSON Schema into a grammar, within `limits` (their
/// `max_grammar_bytes`, `max_depth`, `max_dfa_states` and
/// `max_order_states`); [`crate::Constraint::from_grammar`] compiles it
/// under the same.
///
/// ```
/// use sieve_core::json_schema::{to_grammar, JsonSchemaOptions};
/// use sieve_core::Limits;
/// let schema = serde_json::json!({"type": "integer", "minimum": 1, "maximum": 12});
/// let g = to_grammar(&schema, &JsonSchemaOptions::default(), &Limits::default()).unwrap();
/// assert!(g.gbnf().starts_with("root ::= "));
/// ```
pub fn to_grammar(schema: &Value, options: &JsonSchemaOptions, limits: &crate::Limits) -> Result<SchemaGrammar, SchemaError> {
    compile::Compiler::new(schema, options, limits).run()
}

/// Why [`crate::Constraint::json_schema`] failed: the schema, or the grammar it became.
#[derive(Clone, Debug)]
pub enum JsonSchemaError {
    /// The schema did not translate.
    Schema(SchemaError),
    /// The translated grammar did not compile (a limit, usually).
    Grammar(crate::CompileError),
}

impl fmt::Display for JsonSchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JsonSchemaError::Schema(e) => e.fmt(f),
            JsonSchemaError::Grammar(e) => write!(f, "schema grammar: {e}"),
        }
    }
}

impl std::error::Error for JsonSchemaError {}

/// `value` as JSON with `", "` and `": "` separators and non-ASCII kept, as Python's
/// `json.dumps(value, ensure_ascii=False)` writes it: the spelling the MaskBench protocol feeds
/// a matcher.
pub fn to_spaced_json(value: &Value) -> String {
    match value {
        Value::Array(items) => {
            format!("[{}]", items.iter().map(to_spaced_json).collect::<Vec<_>>().join(", "))
        }
        Value::Object(members) => format!(
            "{{{}}}",
            members
                .iter()
                .map(|(k, v)| format!("{}: {}", Value::String(k.clone()), to_spaced_json(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => other.to_string(),
    }
}
