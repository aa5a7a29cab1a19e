//! The one set of bounds on the work and memory of a constraint, from its
//! source (a JSON Schema's translation included) to every mask.

/// Bounds on the work and memory one constraint may take. Exceeding one is
/// an error ([`CompileError`](crate::CompileError) with kind `Limit` at compile time,
/// [`MatchError::Limit`](crate::MatchError::Limit) while matching), never a hang or an abort.
///
/// ```
/// use sieve_core::{Constraint, Limits};
/// let tight = Limits { max_grammar_states: 10, ..Limits::default() };
/// let g = "root ::= \"hello\" \" \" \"world\"";
/// assert!(Constraint::gbnf_with_limits(g, &tight).is_err());
/// let roomy = Limits { max_grammar_states: 100, ..tight };
/// assert!(Constraint::gbnf_with_limits(g, &roomy).is_ok());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Limits {
    /// Regex NFA size in bytes (default 8 MiB). Bounds compile time and memory.
    pub max_regex_bytes: usize,
    /// Automaton states (default 20,000): of a regex's lazy DFA per
    /// vocabulary (each about 1 KiB of transitions plus, once its mask is
    /// cached, `ceil(width / 32) * 4` bytes), and of the automaton a JSON
    /// Schema builds from one string's patterns, formats and excluded
    /// strings together.
    pub max_dfa_states: usize,
    /// Grammar automaton states (default 1,000,000, about 20 bytes each);
    /// it also bounds a string's automaton times its length counts, which a
    /// JSON Schema writes into the grammar (a `maxLength: 255` email is 510
    /// states times 256).
    pub max_grammar_states: usize,
    /// Earley items created while computing one mask or taking one token
    /// (default 50,000,000; one item costs a few nanoseconds).
    pub mask_fuel: usize,
    /// Bytes of cached grammar token analyses per vocabulary (default
    /// 256 MiB; one analysis is about `ceil(width / 32) * 4` bytes plus its
    /// suffixes). Past it the cache is emptied and refills on demand.
    pub max_token_cache_bytes: usize,
    /// Most bytes of a JSON Schema's grammar, roughly as GBNF text with each
    /// shared expression written once (default 4 MiB).
    pub max_grammar_bytes: usize,
    /// Deepest nesting of a JSON Schema's subschemas, `allOf` merges and
    /// `$ref` inlining (default 128).
    pub max_depth: usize,
    /// Most sets of members, over all objects of a JSON Schema, that
    /// [`PropertyOrder::AnyUpTo`](crate::json_schema::PropertyOrder::AnyUpTo) may track (default 8192); objects beyond it
    /// keep schema order.
    pub max_order_states: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_regex_bytes: 8 << 20,
            max_dfa_states: 20_000,
            max_grammar_states: 1_000_000,
            mask_fuel: 50_000_000,
            max_token_cache_bytes: 256 << 20,
            max_grammar_bytes: 4 << 20,
            max_depth: 128,
            max_order_states: 8192,
        }
    }
}
