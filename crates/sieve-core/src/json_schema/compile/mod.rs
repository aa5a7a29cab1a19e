//! The schema walk: references, `allOf` merging, branches, and one grammar
//! fragment per JSON type.
//!
//! [`Compiler`], its entry points and the dispatch of a schema to its
//! translation are here; each job has a file of its own: references
//! (`refs`), flattening and merging (`merge`), `anyOf`/`oneOf`/`not`
//! (`combinators`, with the reasoning over kinds of value and exact
//! negations in `negate`), one file per JSON type (`numbers`, `strings`,
//! `arrays`, `objects`), the JSON syntax they share (`syntax`), checking a
//! value without translating (`check`) and the keyword tables (`keywords`).

mod arrays;
mod check;
mod combinators;
mod keywords;
mod merge;
mod negate;
mod numbers;
mod objects;
mod refs;
mod strings;
mod syntax;

use super::gbnf::{self, Ex, Writer};
use super::regex::{self, Re};
use super::{JsonSchemaOptions, Mode, SchemaError, SchemaErrorKind, SchemaGrammar, Warning, Whitespace};
use serde_json::{Map, Value};
use std::cell::RefCell;
use crate::hash::{FastMap, TextMap};
use std::rc::Rc;
use keywords::{is_annotation, is_known_keyword, json_text, type_list, type_names};
use objects::MemberKey;

type Res<T> = Result<T, SchemaError>;
/// A grammar expression, `None` when no value matches.
type Expr = Option<Ex>;
/// Internal keyword: strings a `not` excluded (checked like `enum`'s complement).
const NOT_STRINGS: &str = "x-sieve-not-strings";
/// Internal keyword: patterns a string must not match (from `not`).
const NOT_PATTERNS: &str = "x-sieve-not-patterns";
/// Internal keyword: `true` when a number must not be an integer (from `not`).
const FRACTION: &str = "x-sieve-fraction";
/// Internal keyword: further patterns a string must match (from `allOf`).
const PATTERNS: &str = "x-sieve-patterns";
/// Internal keyword: integers that a number must not be a multiple of
/// (from `not`; numbers that are not integers are not excluded).
const NOT_MULTIPLE: &str = "x-sieve-not-multiple-of";
/// Internal keyword: for objects, keys one of which at least must lie
/// outside the given declared names and patterns, each requirement
/// `{"names": [...], "patterns": [...]}` (from `not` of
/// `additionalProperties: false`).
const SOME_KEY: &str = "x-sieve-some-key";
/// Internal keyword: further schemas that some item of an array must each
/// match, once (from `allOf` of several `contains`).
const CONTAINS: &str = "x-sieve-contains";

const TYPES: [&str; 7] = ["null", "boolean", "object", "array", "number", "integer", "string"];

/// Keywords [`Compiler::flatten`] merges in or [`Compiler::compile_map`]
/// rewrites; a map without them is translated as it stands.
const REWRITTEN: &[&str] = &[
    "allOf",
    "if",
    "dependencies",
    "dependentRequired",
    "dependentSchemas",
    "$ref",
    "not",
    "anyOf",
    "oneOf",
    "const",
    "enum",
    SOME_KEY,
];

/// Keywords that constrain values but are not translated.
const UNSUPPORTED: &[&str] = &[
    "unevaluatedProperties",
    "unevaluatedItems",
    "$dynamicRef",
    "$recursiveRef",
];

fn err(keyword: &str, pointer: &str, kind: SchemaErrorKind) -> SchemaError {
    SchemaError { keyword: keyword.to_string(), pointer: pointer.to_string(), kind }
}
fn invalid(keyword: &str, pointer: &str, msg: &str) -> SchemaError {
    err(keyword, pointer, SchemaErrorKind::Invalid(msg.to_string()))
}
fn child(ptr: &str, key: &str) -> String {
    let mut out = String::with_capacity(ptr.len() + key.len() + 1);
    out.push_str(ptr);
    out.push('/');
    for c in key.chars() {
        match c {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            c => out.push(c),
        }
    }
    out
}

/// The translation state.
pub struct Compiler<'a> {
    root: &'a Value,
    opts: &'a JsonSchemaOptions,
    limits: &'a crate::Limits,
    rules: Writer,
    warnings: Vec<Warning>,
    refs: TextMap<String, Expr>,
    legacy: bool,
    /// Draft 4 or older: `id` (not `$id`) names subschemas.
    draft04: bool,
    depth: usize,
    ws: Ex,
    chr: Ex,
    /// Two hex digits, the end of every `\u` escape.
    hex2: Ex,
    /// [`Compiler::chr`] with its `\u` escapes called rather than inlined,
    /// for blocks of a long string (see [`Compiler::repeat`]); made when
    /// first needed.
    lean_chr: Option<Ex>,
    any: Option<Ex>,
    negations: usize,
    opaque_of: FastMap<Ex, Ex>,
    /// The string of each parsed pattern (or format) alone, by the
    /// pattern's address in `patterns`.
    strings_of: FastMap<usize, Expr>,
    order_states: usize,
    /// The member sets written in any order, by the object's members,
    /// extras and counts: an identical object (a definition met again)
    /// reuses them.
    member_sets: TextMap<MemberKey, Option<Ex>>,
    /// Translated maps by [`leaf_key`] (see [`Compiler::once`]).
    leaves: TextMap<String, Expr>,
    /// Merged maps being translated, by their text, and the rule that a merge
    /// of the same map met inside its own translation calls (see
    /// [`Compiler::merged`]).
    merging: TextMap<String, Option<Ex>>,
    /// [`Compiler::number`]'s expressions by their bounds.
    ranges: TextMap<String, Expr>,
    /// Translated patterns by source text (a pattern is often checked on
    /// many values and met in many subschemas).
    patterns: RefCell<TextMap<String, Result<Rc<Re>, regex::PatternError>>>,
}

impl<'a> Compiler<'a> {
    /// Prepare to translate `root`.
    pub fn new(root: &'a Value, opts: &'a JsonSchemaOptions, limits: &'a crate::Limits) -> Self {
        let dialect = root.get("$schema").and_then(Value::as_str).unwrap_or("");
        let draft04 = ["draft-03", "draft-04"].iter().any(|d| dialect.contains(d));
        let legacy = draft04 || ["draft-06", "draft-07"].iter().any(|d| dialect.contains(d));
        // Whitespace, and the pieces of every string character.
        let mut rules = Writer::default();
        let blank = rules.ranges(&[(0x09, 0x0A), (0x0D, 0x0D), (0x20, 0x20)]);
        let ws_body = match opts.whitespace {
            Whitespace::Any => rules.repeat(blank, 0, None),
            Whitespace::Compact => rules.empty(),
            Whitespace::Bounded(n) => rules.repeat(blank, 0, Some(n)),
        };
        let ws = rules.add("ws", ws_body);
        let hex = rules.ranges(gbnf::HEX);
        let hex2 = rules.repeat(hex, 2, Some(2));
        let hex2 = rules.add("hex", hex2);
        let unicode_escape = gbnf::json_unicode_escape(&mut rules, hex2);
        let chr = gbnf::json_char_any(&mut rules, unicode_escape);
        let chr = rules.add("char", chr);
        let esc = gbnf::json_escape(&mut rules);
        let esc = rules.add("escape", esc);
        rules.set_escape(esc);
        Compiler {
            root,
            opts,
            limits,
            rules,
            warnings: Vec::new(),
            refs: TextMap::default(),
            legacy,
            draft04,
            depth: 0,
            ws,
            chr,
            hex2,
            lean_chr: None,
            any: None,
            negations: 0,
            opaque_of: FastMap::default(),
            strings_of: FastMap::default(),
            order_states: 0,
            member_sets: TextMap::default(),
            leaves: TextMap::default(),
            merging: TextMap::default(),
            ranges: TextMap::default(),
            patterns: RefCell::new(TextMap::default()),
        }
    }

    /// Translate the whole schema.
    pub fn run(mut self) -> Res<SchemaGrammar> {
        let root = self.schema(self.root, "")?.ok_or_else(|| err("", "", SchemaErrorKind::Unsatisfiable))?;
        let root = self.rules.seq(&[self.ws, root, self.ws]);
        let (rules, root) = self.rules.finish(root);
        Ok(SchemaGrammar { rules, root, warnings: self.warnings })
    }

    /// `regex::parse_pattern`, once per pattern text.
    fn pattern(&self, p: &str) -> Result<Rc<Re>, regex::PatternError> {
        if let Some(r) = self.patterns.borrow().get(p) {
            return r.clone();
        }
        let r = regex::parse_pattern(p).map(Rc::new);
        self.patterns.borrow_mut().insert(p.to_string(), r.clone());
        r
    }

    fn unsupported(&mut self, keyword: &str, pointer: &str, msg: &str) -> Res<()> {
        match self.opts.mode {
            Mode::Strict => Err(err(keyword, pointer, SchemaErrorKind::Unsupported(msg.to_string()))),
            Mode::Lenient => {
                // A schema read more than once (merged, then translated) reports once.
                let w = Warning { keyword: keyword.to_string(), pointer: pointer.to_string(), message: msg.to_string() };
                if !self.warnings.contains(&w) {
                    self.warnings.push(w);
                }
                Ok(())
            }
        }
    }

    /// Fails once the grammar outgrows [`crate::Limits::max_grammar_bytes`].
    fn check_size(&self) -> Res<()> {
        if self.rules.size() > self.limits.max_grammar_bytes {
            return Err(err("", "", SchemaErrorKind::Limit("max_grammar_bytes")));
        }
        Ok(())
    }

    fn add(&mut self, hint: &str, body: Ex) -> Res<Ex> {
        self.check_size()?;
        Ok(self.rules.add(hint, body))
    }

    /// A rule the grammar compiler keeps out of line: a dead left-recursive
    /// alternative makes it recursive, so it is called rather than copied
    /// into every caller (the alternative itself matches nothing).
    fn opaque(&mut self, hint: &str, body: Ex) -> Res<Ex> {
        self.check_size()?;
        let name = self.rules.reserve(hint);
        let never = self.rules.never();
        let dead = self.rules.seq(&[name, never]);
        let body = self.rules.alt(&[body, dead]);
        self.rules.define(name, body);
        Ok(name)
    }

    /// [`Compiler::opaque`] for a rule reference, once per referenced rule.
    fn opaque_once(&mut self, rule: Ex) -> Res<Ex> {
        if let Some(&n) = self.opaque_of.get(&rule) {
            return Ok(n);
        }
        let n = self.opaque("tail", rule)?;
        self.opaque_of.insert(rule, n);
        Ok(n)
    }

    fn enter(&mut self, ptr: &str) -> Res<()> {
        self.depth += 1;
        if self.depth > self.limits.max_depth {
            return Err(err("", ptr, SchemaErrorKind::Limit("max_depth")));
        }
        Ok(())
    }

    /// The schema at `ptr` as a grammar expression.
    fn schema(&mut self, s: &Value, ptr: &str) -> Res<Expr> {
        self.enter(ptr)?;
        let out = match s {
            Value::Bool(true) => Ok(Some(self.any_value()?)),
            Value::Bool(false) => Ok(None),
            Value::Object(m) => self.object_schema(m, ptr),
            _ => Err(invalid("", ptr, "a schema must be an object or a boolean")),
        };
        self.depth -= 1;
        out
    }

    fn object_schema(&mut self, m: &Map<String, Value>, ptr: &str) -> Res<Expr> {
        // `not` of a reference is a rule of its own, so that negating a
        // recursive schema gives a recursive rule.
        if let Some(Value::Object(n)) = m.get("not")
            && m.keys().all(|k| k == "not" || is_annotation(k))
            && let Some(Value::String(r)) = n.get("$ref")
            && n.keys().all(|k| k == "$ref" || is_annotation(k))
        {
            let key = format!("not {r}");
            if let Some(name) = self.refs.get(&key) {
                return Ok(*name);
            }
            let name = self.rules.reserve(&format!("not-{}", r.rsplit('/').next().unwrap_or("ref")));
            self.refs.insert(key.clone(), Some(name));
            let mut only = Map::new();
            only.insert("not".into(), Value::Object(n.clone()));
            return Ok(match self.compile_map(only, ptr)? {
                Some(body) => {
                    self.rules.define(name, body);
                    Some(name)
                }
                None => {
                    let never = self.rules.never();
                    self.rules.define(name, never);
                    self.refs.insert(key, None);
                    None
                }
            });
        }
        if let Some(r) = m.get("$ref") {
            let r = r.as_str().ok_or_else(|| invalid("$ref", ptr, "must be a string"))?;
            let has_siblings = m.keys().any(|k| k != "$ref" && !is_annotation(k));
            if self.legacy || !has_siblings {
                return self.ref_rule(r, ptr);
            }
        }
        if m.keys().all(|k| !REWRITTEN.contains(&k.as_str())) {
            // Nothing to merge or rewrite: translated in place, not copied.
            self.check_unsupported(m, ptr)?;
            return self.once(leaf_key(m), |c| c.compile_types(m, ptr));
        }
        let refers = m.contains_key("$ref")
            || ["allOf", "anyOf", "oneOf"].iter().any(|k| m.get(*k).and_then(Value::as_array).is_some_and(|bs| bs.iter().any(|b| b.get("$ref").is_some())));
        let merged = self.flatten(m, ptr)?;
        match refers {
            true => self.merged(merged, ptr),
            false => self.compile_map(merged, ptr),
        }
    }

    /// Translates a map merged from one that names a reference beside other
    /// keywords or in a branch. Such a merge makes a map no pointer names, and
    /// its translation can meet the same merge again (`{"minProperties": 1,
    /// "anyOf": [..., {"$ref": "#"}]}` under `additionalProperties`): met
    /// inside its own translation, the map is a call of a rule that its
    /// translation then defines, so recursion through merges becomes a
    /// recursive rule, as through references. (Every such cycle passes through
    /// a map that names the reference, which is met again identical.)
    fn merged(&mut self, m: Map<String, Value>, ptr: &str) -> Res<Expr> {
        let key = serde_json::to_string(&m).unwrap_or_default();
        match self.merging.get(&key) {
            Some(Some(name)) => return Ok(Some(*name)),
            Some(None) => {
                let name = self.rules.reserve("merged");
                self.merging.insert(key, Some(name));
                return Ok(Some(name));
            }
            None => {}
        }
        self.merging.insert(key.clone(), None);
        let body = self.compile_map(m, ptr);
        let called = self.merging.remove(&key).flatten();
        let body = body?;
        if let Some(name) = called {
            // A map that matches nothing makes its recursive calls match nothing.
            let never = self.rules.never();
            self.rules.define(name, body.unwrap_or(never));
        }
        Ok(body)
    }

    /// Translate a flattened keyword map.
    fn compile_map(&mut self, mut m: Map<String, Value>, ptr: &str) -> Res<Expr> {
        self.check_unsupported(&m, ptr)?;
        // `not`: conjoined where exact (a negation may bring further `not`s);
        // with enum/const, checked per value below.
        let mut rounds = 0;
        while let Some(n) = m.remove("not") {
            if m.contains_key("enum") || m.contains_key("const") {
                m.insert("not".into(), n);
                break;
            }
            if !self.apply_not(&mut m, &n, ptr)? {
                return Ok(None);
            }
            rounds += 1;
            if rounds > 64 {
                return Err(err("not", ptr, SchemaErrorKind::Limit("nested negations (more than 64)")));
            }
        }
        if let Some(some) = m.remove(SOME_KEY)
            && !self.some_key(&mut m, &some, ptr)?
        {
            return Ok(None);
        }
        // Branches: siblings go into each branch.
        for kw in ["anyOf", "oneOf"] {
            if let Some(branches) = m.remove(kw) {
                let Value::Array(branches) = branches else { return Err(invalid(kw, ptr, "must be an array")) };
                return self.branches(kw, &branches, m, ptr);
            }
        }
        let key = leaf_key(&m);
        if m.contains_key("const") || m.contains_key("enum") {
            return self.once(key, |c| c.compile_enum(m, ptr));
        }
        self.once(key, |c| c.compile_types(&m, ptr))
    }

    /// Conjoins to `m` the requirements of [`SOME_KEY`]: on an object whose
    /// keys can only be its declared names (`additionalProperties` false, no
    /// patterns), one of the names outside each requirement's is present, an
    /// `anyOf` of `required`; any other object is refused. False when no
    /// value can match.
    fn some_key(&mut self, m: &mut Map<String, Value>, some: &Value, ptr: &str) -> Res<bool> {
        let closed = m.get("additionalProperties").map_or(!self.opts.additional_properties_default, |ap| *ap == Value::Bool(false))
            && !m.contains_key("patternProperties");
        if !closed {
            self.unsupported("additionalProperties", ptr, "an object with a key outside some names, where other keys are allowed")?;
            return Ok(true);
        }
        let declared: Vec<String> = m.get("properties").and_then(Value::as_object).map_or(Vec::new(), |p| p.keys().cloned().collect());
        for req in some.as_array().into_iter().flatten() {
            let names: Vec<&str> = req.get("names").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
            let mut outside = Vec::new();
            'declared: for d in &declared {
                if names.contains(&d.as_str()) {
                    continue;
                }
                for p in req.get("patterns").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
                    match self.pattern(p) {
                        Ok(re) if re.matches(d) => continue 'declared,
                        Ok(_) => {}
                        Err(e) => return Err(invalid("patternProperties", ptr, &e.to_string())),
                    }
                }
                outside.push(serde_json::json!({ "required": [d] }));
            }
            // Values that are not objects are not constrained.
            let kinds: Vec<&str> = TYPES.iter().copied().filter(|t| *t != "object" && *t != "integer").collect();
            outside.push(serde_json::json!({ "type": kinds }));
            let mut any = Map::new();
            any.insert("anyOf".into(), Value::Array(outside));
            *m = self.merge(std::mem::take(m), any, ptr)?;
        }
        Ok(true)
    }

    /// `translate()`, or the expression it gave for a map with the same
    /// [`leaf_key`] before.
    fn once(&mut self, key: Option<String>, translate: impl FnOnce(&mut Self) -> Res<Expr>) -> Res<Expr> {
        if let Some(e) = key.as_ref().and_then(|k| self.leaves.get(k)) {
            return Ok(*e);
        }
        let warned = self.warnings.len();
        let e = translate(self)?;
        // A warning names the pointer where it arose: met again elsewhere,
        // the map is translated again to warn there too.
        if let Some(k) = key
            && self.warnings.len() == warned
        {
            self.leaves.insert(k, e);
        }
        Ok(e)
    }

    /// The values of `enum` (or `const`) that the rest of the map allows.
    fn compile_enum(&mut self, mut m: Map<String, Value>, ptr: &str) -> Res<Expr> {
        type_names(&m, ptr)?;
        if let Some(c) = m.remove("const") {
            m.insert("enum".into(), Value::Array(vec![c]));
        }
        let Some(Value::Array(values)) = m.remove("enum") else { return Err(invalid("enum", ptr, "must be an array")) };
        let rest = Value::Object(m);
        let mut alts = Vec::new();
        for v in &values {
            match self.check(&rest, v, 0) {
                Some(true) => alts.push(self.literal_value(v)),
                Some(false) => {}
                None => {
                    self.unsupported("enum", ptr, "enum combined with keywords that cannot be checked on its values")?;
                    alts.push(self.literal_value(v));
                }
            }
        }
        Ok(if alts.is_empty() {
            None
        } else {
            let body = self.rules.alt(&alts);
            Some(self.add("enum", body)?)
        })
    }

    /// Errors (strict) or warns (lenient) on the keywords not translated.
    fn check_unsupported(&mut self, m: &Map<String, Value>, ptr: &str) -> Res<()> {
        for kw in UNSUPPORTED {
            if m.contains_key(*kw) {
                self.unsupported(kw, ptr, "keyword not translated")?;
            }
        }
        Ok(())
    }

    /// Translate a keyword map without `not`, `anyOf`, `oneOf`, `const`
    /// or `enum`: one alternative per type.
    fn compile_types(&mut self, m: &Map<String, Value>, ptr: &str) -> Res<Expr> {
        if m.keys().all(|k| is_annotation(k) || !is_known_keyword(k)) {
            return Ok(Some(self.any_value()?));
        }
        let types = type_names(m, ptr)?;
        let mut alts = Vec::new();
        let has_number = types.iter().any(|t| t == "number");
        for t in &types {
            let e = match t.as_str() {
                "null" => Some(self.rules.lit("null")),
                "boolean" => {
                    let b = [self.rules.lit("true"), self.rules.lit("false")];
                    Some(self.rules.alt(&b))
                }
                "number" => self.number(m, false, ptr)?,
                "integer" if !has_number => self.number(m, true, ptr)?,
                "integer" => None,
                "string" => self.string(m, ptr)?,
                "array" => self.array(m, ptr)?,
                "object" => self.object(m, ptr)?,
                other => return Err(invalid("type", ptr, &format!("unknown type {other:?}"))),
            };
            if let Some(e) = e {
                alts.push(e);
            }
        }
        Ok(match alts.len() {
            0 => None,
            _ => {
                let body = self.rules.alt(&alts);
                Some(self.add("v", body)?)
            }
        })
    }
}

/// For a map whose translation reads nothing but the map (values listed by
/// `enum` or `const`, or types without subschemas) and costs more than
/// keying it (a long enum, or a pattern within length bounds: a counted
/// automaton), its keywords other than annotations as text: maps with equal
/// keys translate alike. `None` for the others.
fn leaf_key(m: &Map<String, Value>) -> Option<String> {
    let long_enum = m.get("enum").and_then(Value::as_array).is_some_and(|v| v.len() > 16);
    let counted = ["minLength", "maxLength"].iter().any(|k| m.contains_key(*k))
        && ["pattern", "format"].iter().any(|k| m.contains_key(*k));
    let leaf = || {
        m.contains_key("enum")
            || m.contains_key("const")
            || m.get("type").is_some_and(|t| type_list(t).iter().all(|t| !matches!(t.as_str(), Some("object" | "array"))))
    };
    if !(long_enum || counted && leaf()) {
        return None;
    }
    let mut key = String::new();
    for (k, v) in m.iter().filter(|(k, _)| !is_annotation(k)) {
        key += &json_text(&Value::String(k.clone()));
        key.push(':');
        key += &json_text(v);
        key.push(',');
    }
    Some(key)
}
