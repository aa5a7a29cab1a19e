//! Compiled constraints and the compile cache.

use crate::error::{CompileError, CompileErrorKind, MatchError};
use crate::json_schema::{JsonSchemaError, JsonSchemaOptions, SchemaGrammar, Warning, to_grammar};
use crate::limits::Limits;
use crate::grammar::{Chart, Grammar};
use crate::json::ANY_JSON_GBNF;
use crate::regex::{DEAD, LazyDfa, RegexProgram, START};
use crate::structural::StructuralTag;
use crate::tokencache::TokenCache;
use crate::vocab::Vocabulary;
use std::collections::HashMap;
use serde_json::Value;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

/// The text a constraint is compiled from; also the key of [`ConstraintCache`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ConstraintSource {
    /// A regex the whole output must match (regex-automata syntax, Unicode).
    Regex(String),
    /// A GBNF grammar whose start rule is `root`.
    Gbnf(String),
    /// The output must be exactly one of these strings.
    Choices(Vec<String>),
    /// Any JSON value.
    AnyJson,
    /// A JSON Schema as JSON text, translated with these options (see
    /// [`crate::json_schema`]); lenient-mode warnings go with the
    /// constraint ([`Constraint::warnings`]).
    JsonSchema(String, JsonSchemaOptions),
    /// Free text with tagged sections, such as tool calls (see [`StructuralTag`]).
    StructuralTag(StructuralTag),
}

#[derive(Debug)]
pub(crate) enum Program {
    Regex(RegexProgram),
    Grammar(Grammar),
}

/// Per-vocabulary state shared by the matchers of one constraint.
#[derive(Debug)]
pub(crate) enum Runtime {
    Regex(Mutex<LazyDfa>),
    Grammar(Box<Mutex<TokenCache>>),
}

#[derive(Debug)]
struct Inner {
    /// `None` for a constraint built from a parsed JSON Schema.
    source: Option<ConstraintSource>,
    program: Program,
    limits: Limits,
    /// Keywords a JSON Schema translated in lenient mode left out.
    warnings: Vec<Warning>,
    /// Caches per vocabulary; entries of dropped vocabularies are pruned.
    runtimes: Mutex<Vec<(Weak<Vocabulary>, Arc<Runtime>)>>,
}

/// A compiled constraint: immutable and cheap to clone (an `Arc` inside),
/// shared by every [`crate::Matcher`] that follows it, on any vocabulary.
#[derive(Debug, Clone)]
pub struct Constraint {
    inner: Arc<Inner>,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Constraint {
    /// Compiles a source under the given limits.
    pub fn compile(source: &ConstraintSource, limits: &Limits) -> Result<Constraint, CompileError> {
        Self::compile_owned(source.clone(), limits)
    }

    /// [`Constraint::compile`] keeping `source` (a grammar's text is not copied).
    pub(crate) fn compile_owned(source: ConstraintSource, limits: &Limits) -> Result<Constraint, CompileError> {
        let mut warnings = Vec::new();
        let program = match &source {
            ConstraintSource::Regex(r) => Program::Regex(RegexProgram::new(r, limits.max_regex_bytes)?),
            ConstraintSource::Choices(c) => {
                let alts: Vec<String> = c.iter().map(|s| regex_syntax::escape(s)).collect();
                let pattern = if alts.is_empty() { "[^\\s\\S]".to_string() } else { alts.join("|") };
                Program::Regex(RegexProgram::new(&pattern, limits.max_regex_bytes)?)
            }
            ConstraintSource::Gbnf(g) => Program::Grammar(Grammar::new(g, limits.max_grammar_states)?),
            ConstraintSource::AnyJson => Program::Grammar(Grammar::new(ANY_JSON_GBNF, limits.max_grammar_states)?),
            ConstraintSource::JsonSchema(text, options) => {
                let schema: Value = serde_json::from_str(text)
                    .map_err(|e| CompileError::new(CompileErrorKind::Schema, format!("the schema is not JSON: {e}")))?;
                let g = to_grammar(&schema, options, limits)?;
                warnings = g.warnings.clone();
                Self::schema_program(&g, limits)?
            }
            ConstraintSource::StructuralTag(tag) => {
                let (rules, root, left_out) = tag.rules(limits)?;
                warnings = left_out;
                Program::Grammar(Grammar::from_rules(&rules, root, limits.max_grammar_states)?)
            }
        };
        Self::with_program(Some(source), program, warnings, limits)
    }

    /// A JSON Schema under the default [`Limits`]; also returns the
    /// lenient-mode warnings (keywords left out).
    ///
    /// ```
    /// use sieve_core::Constraint;
    /// use sieve_core::json_schema::JsonSchemaOptions;
    /// let schema = serde_json::json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}},
    ///                                 "required": ["n"], "additionalProperties": false});
    /// let (c, _warnings) = Constraint::json_schema(&schema, &JsonSchemaOptions::default()).unwrap();
    /// assert!(c.matches(br#"{"n": 42}"#).unwrap());
    /// assert!(!c.matches(br#"{"n": -1}"#).unwrap());
    /// ```
    pub fn json_schema(schema: &Value, options: &JsonSchemaOptions) -> Result<(Constraint, Vec<Warning>), JsonSchemaError> {
        Self::json_schema_with_limits(schema, options, &Limits::default())
    }

    /// A JSON Schema under `limits`, which bound its translation
    /// ([`to_grammar`]) and the compiled grammar alike.
    pub fn json_schema_with_limits(
        schema: &Value,
        options: &JsonSchemaOptions,
        limits: &Limits,
    ) -> Result<(Constraint, Vec<Warning>), JsonSchemaError> {
        let g = to_grammar(schema, options, limits).map_err(JsonSchemaError::Schema)?;
        let c = Self::from_grammar(&g, limits).map_err(JsonSchemaError::Grammar)?;
        Ok((c, g.warnings))
    }

    /// Compiles a translated JSON Schema ([`to_grammar`], under the same
    /// `limits`); its warnings go with the constraint
    /// ([`Constraint::warnings`]).
    pub fn from_grammar(g: &SchemaGrammar, limits: &Limits) -> Result<Constraint, CompileError> {
        Self::with_program(None, Self::schema_program(g, limits)?, g.warnings.clone(), limits)
    }

    /// The grammar of a translated JSON Schema: the step every path from a
    /// schema to a constraint ends with.
    fn schema_program(g: &SchemaGrammar, limits: &Limits) -> Result<Program, CompileError> {
        let (rules, root) = g.rules();
        Ok(Program::Grammar(Grammar::from_rules(rules, root, limits.max_grammar_states)?))
    }

    fn with_program(source: Option<ConstraintSource>, program: Program, warnings: Vec<Warning>, limits: &Limits) -> Result<Constraint, CompileError> {
        if let Program::Grammar(g) = &program
            && g.is_empty()
        {
            return Err(CompileError::new(CompileErrorKind::Empty, "the grammar matches no string"));
        }
        Ok(Constraint {
            inner: Arc::new(Inner { source, program, limits: *limits, warnings, runtimes: Mutex::new(Vec::new()) }),
        })
    }

    /// A regex that the whole output must match.
    pub fn regex(pattern: &str) -> Result<Constraint, CompileError> {
        Self::compile(&ConstraintSource::Regex(pattern.to_string()), &Limits::default())
    }

    /// A GBNF grammar (start rule `root`).
    pub fn gbnf(grammar: &str) -> Result<Constraint, CompileError> {
        Self::gbnf_with_limits(grammar, &Limits::default())
    }

    /// A GBNF grammar under explicit limits.
    pub fn gbnf_with_limits(grammar: &str, limits: &Limits) -> Result<Constraint, CompileError> {
        Self::compile_owned(ConstraintSource::Gbnf(grammar.to_string()), limits)
    }

    /// Exactly one of the given strings.
    pub fn choices<S: AsRef<str>>(choices: &[S]) -> Result<Constraint, CompileError> {
        let c = choices.iter().map(|s| s.as_ref().to_string()).collect();
        Self::compile(&ConstraintSource::Choices(c), &Limits::default())
    }

    /// Any JSON value (RFC 8259, surrounding whitespace allowed).
    pub fn any_json() -> Constraint {
        // The built-in grammar is known to compile under the default limits;
        // the fallback cannot be reached but keeps this constructor infallible.
        Self::compile(&ConstraintSource::AnyJson, &Limits::default())
            .or_else(|_| Self::compile(&ConstraintSource::Regex(".*".into()), &Limits::default()))
            .unwrap_or_else(|_| unreachable!("the built-in constraints compile"))
    }

    /// The source this constraint was compiled from (`None` when built
    /// from a parsed JSON Schema with [`Constraint::json_schema`]).
    pub fn source(&self) -> Option<&ConstraintSource> {
        self.inner.source.as_ref()
    }

    /// The keywords a JSON Schema translated in lenient mode left out.
    pub fn warnings(&self) -> &[Warning] {
        &self.inner.warnings
    }

    /// The limits it was compiled under (they also bound matching).
    pub fn limits(&self) -> &Limits {
        &self.inner.limits
    }

    pub(crate) fn program(&self) -> &Program {
        &self.inner.program
    }

    /// Checks a whole byte string: true when it is a complete match.
    pub fn matches(&self, bytes: &[u8]) -> Result<bool, MatchError> {
        match self.program() {
            Program::Regex(p) => {
                let mut dfa = LazyDfa::new(p, self.inner.limits.max_dfa_states);
                let mut s = START;
                for &b in bytes {
                    s = dfa.next(p, s, b)?;
                    if s == DEAD {
                        return Ok(false);
                    }
                }
                Ok(dfa.is_accepting(s))
            }
            Program::Grammar(g) => {
                let mut chart = Chart::new(g);
                let mut fuel = self.inner.limits.mask_fuel;
                for &b in bytes {
                    if !chart.push(g, b, &mut fuel)? {
                        return Ok(false);
                    }
                }
                Ok(chart.is_accepting(g))
            }
        }
    }

    /// The shared per-vocabulary runtime (lazy DFA and mask caches).
    pub(crate) fn runtime(&self, vocab: &Arc<Vocabulary>) -> Arc<Runtime> {
        let mut rts = lock(&self.inner.runtimes);
        rts.retain(|(v, _)| v.strong_count() > 0);
        if let Some((_, rt)) = rts.iter().find(|(v, _)| std::ptr::eq(v.as_ptr(), Arc::as_ptr(vocab))) {
            return rt.clone();
        }
        let rt = Arc::new(match self.program() {
            Program::Regex(p) => Runtime::Regex(Mutex::new(LazyDfa::new(p, self.inner.limits.max_dfa_states))),
            Program::Grammar(_) => Runtime::Grammar(Box::default()),
        });
        rts.push((Arc::downgrade(vocab), rt.clone()));
        rt
    }

    /// Approximate heap bytes held by the compiled form and its caches.
    pub fn memory_bytes(&self) -> usize {
        let program = match self.program() {
            Program::Regex(p) => p.memory(),
            Program::Grammar(g) => g.memory(),
        };
        let caches: usize = lock(&self.inner.runtimes)
            .iter()
            .map(|(_, rt)| match &**rt {
                Runtime::Regex(d) => lock(d).memory(),
                Runtime::Grammar(c) => lock(c).memory(),
            })
            .sum();
        program + caches
    }
}

/// Compiled constraints keyed by source text: compiling the same source
/// twice returns the same shared [`Constraint`]. Holds at most `capacity`
/// entries (the oldest is dropped first).
#[derive(Debug)]
pub struct ConstraintCache {
    limits: Limits,
    capacity: usize,
    entries: Mutex<(HashMap<ConstraintSource, Constraint>, Vec<ConstraintSource>)>,
}

impl ConstraintCache {
    /// A cache compiling under `limits`, holding up to `capacity` constraints.
    pub fn new(limits: Limits, capacity: usize) -> ConstraintCache {
        ConstraintCache { limits, capacity: capacity.max(1), entries: Mutex::new((HashMap::new(), Vec::new())) }
    }

    /// The compiled constraint for `source`, compiling it on first use.
    pub fn get(&self, source: &ConstraintSource) -> Result<Constraint, CompileError> {
        self.get_with(source, |limits| Constraint::compile(source, limits))
    }

    /// The compiled constraint for `source`, made by `compile` (under the
    /// cache's limits) on first use: for a source already translated, such
    /// as a JSON Schema checked before its compile (see
    /// [`Constraint::from_grammar`]).
    pub fn get_with(
        &self,
        source: &ConstraintSource,
        compile: impl FnOnce(&Limits) -> Result<Constraint, CompileError>,
    ) -> Result<Constraint, CompileError> {
        if let Some(c) = self.cached(source) {
            return Ok(c);
        }
        let c = compile(&self.limits)?;
        let mut e = lock(&self.entries);
        if e.1.len() >= self.capacity {
            let old = e.1.remove(0);
            e.0.remove(&old);
        }
        if e.0.insert(source.clone(), c.clone()).is_none() {
            e.1.push(source.clone());
        }
        Ok(c)
    }

    /// The constraint for `source` if it is compiled already.
    pub fn cached(&self, source: &ConstraintSource) -> Option<Constraint> {
        lock(&self.entries).0.get(source).cloned()
    }

    /// The limits its constraints are compiled under (a JSON Schema's
    /// translation included).
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Number of cached constraints.
    pub fn len(&self) -> usize {
        lock(&self.entries).0.len()
    }

    /// True when nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
