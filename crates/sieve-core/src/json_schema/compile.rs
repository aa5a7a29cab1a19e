//! The schema walk: references, `allOf` merging, branches, and one grammar
//! fragment per JSON type.

use super::format;
use super::gbnf::{self, Encoding, Ex, Writer};
use super::number::{self, Bound, Dec, Numbers};
use super::dfa::{Dfa, TooLarge};
use super::regex::{self, Re};
use super::{JsonSchemaOptions, Mode, PropertyOrder, SchemaError, SchemaErrorKind, SchemaGrammar, Warning, Whitespace};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::cell::RefCell;
use crate::hash::{FastMap, TextMap};
use std::rc::Rc;

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
    format!("{ptr}/{}", key.replace('~', "~0").replace('/', "~1"))
}

/// The translation state.
pub struct Compiler<'a> {
    root: &'a Value,
    opts: &'a JsonSchemaOptions,
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
    order_states: usize,
    /// The member sets written in any order, by the object's members,
    /// extras and counts: an identical object (a definition met again)
    /// reuses them.
    member_sets: TextMap<MemberKey, Option<Ex>>,
    /// Translated maps by [`leaf_key`] (see [`Compiler::once`]).
    leaves: TextMap<String, Expr>,
    /// [`Compiler::number`]'s expressions by their bounds.
    ranges: TextMap<String, Expr>,
    /// Translated patterns by source text (a pattern is often checked on
    /// many values and met in many subschemas).
    patterns: RefCell<TextMap<String, Result<Rc<Re>, regex::PatternError>>>,
}

impl<'a> Compiler<'a> {
    /// Prepare to translate `root`.
    pub fn new(root: &'a Value, opts: &'a JsonSchemaOptions) -> Self {
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
            order_states: 0,
            member_sets: TextMap::default(),
            leaves: TextMap::default(),
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

    /// The `patternProperties` of `m` that translate: each key, its
    /// expression and its schema. An unsupported pattern is an error
    /// (strict) or left out with a warning (lenient).
    fn property_patterns<'m>(&mut self, m: &'m Map<String, Value>, ptr: &str) -> Res<Vec<(&'m str, Rc<Re>, &'m Value)>> {
        let mut out = Vec::new();
        if let Some(Value::Object(pp)) = m.get("patternProperties") {
            for (p, s) in pp {
                match self.pattern(p) {
                    Ok(re) => out.push((p.as_str(), re, s)),
                    Err(e @ regex::PatternError::Unsupported(_)) => self.unsupported("patternProperties", ptr, &e.to_string())?,
                    Err(e) => return Err(invalid("patternProperties", ptr, &e.to_string())),
                }
            }
        }
        Ok(out)
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

    /// Fails once the grammar outgrows [`super::Limits::max_grammar_bytes`].
    fn check_size(&self) -> Res<()> {
        if self.rules.size() > self.opts.limits.max_grammar_bytes {
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
        if self.depth > self.opts.limits.max_depth {
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
        let merged = self.flatten(m, ptr)?;
        self.compile_map(merged, ptr)
    }

    /// A rule for a referenced schema (recursion becomes a recursive rule).
    fn ref_rule(&mut self, r: &str, ptr: &str) -> Res<Expr> {
        if let Some(name) = self.refs.get(r) {
            return Ok(*name);
        }
        let target = self.resolve(r, ptr)?;
        let name = self.rules.reserve(r.rsplit('/').next().unwrap_or("ref"));
        self.refs.insert(r.to_string(), Some(name));
        let target_ptr = r.trim_start_matches('#').to_string();
        match self.schema(target, &target_ptr)? {
            Some(body) => {
                self.rules.define(name, body);
                Ok(Some(name))
            }
            None => {
                // No value matches: later references say so; the reserved
                // rule (named by recursive ones) matches nothing.
                let never = self.rules.never();
                self.rules.define(name, never);
                self.refs.insert(r.to_string(), None);
                Ok(None)
            }
        }
    }

    fn resolve(&self, r: &str, ptr: &str) -> Res<&'a Value> {
        let Some(frag) = r.strip_prefix('#') else {
            return Err(err("$ref", ptr, SchemaErrorKind::Unsupported(format!("non-local reference {r:?}"))));
        };
        if frag.is_empty() || frag.starts_with('/') {
            let decoded = percent_decode(frag);
            return self
                .root
                .pointer(&decoded)
                .ok_or_else(|| invalid("$ref", ptr, &format!("unresolvable reference {r:?}")));
        }
        find_anchor(self.root, frag, self.draft04).ok_or_else(|| invalid("$ref", ptr, &format!("unresolvable anchor {r:?}")))
    }

    /// Inline `$ref` (with siblings) and `allOf` into one keyword map.
    fn flatten(&mut self, m: &Map<String, Value>, ptr: &str) -> Res<Map<String, Value>> {
        self.enter(ptr)?;
        if self.legacy
            && let Some(r) = m.get("$ref") {
                // Before 2019-09 a reference replaces its siblings.
                let r = r.as_str().ok_or_else(|| invalid("$ref", ptr, "must be a string"))?;
                let out = match self.resolve(r, ptr)? {
                    Value::Object(t) => self.flatten(t, r.trim_start_matches('#'))?,
                    Value::Bool(true) => Map::new(),
                    _ => {
                        let mut f = Map::new();
                        f.insert("type".into(), Value::Array(Vec::new()));
                        f
                    }
                };
                self.depth -= 1;
                return Ok(out);
            }
        let mut out = Map::new();
        // Schemas to merge in: borrowed where they are in the schema already.
        let mut parts: Vec<(Cow<'_, Value>, String)> = Vec::new();
        for (k, v) in m {
            match k.as_str() {
                "allOf" => {
                    let items = v.as_array().ok_or_else(|| invalid("allOf", ptr, "must be an array"))?;
                    for (i, it) in items.iter().enumerate() {
                        parts.push((Cow::Borrowed(it), child(&child(ptr, "allOf"), &i.to_string())));
                    }
                }
                "if" if m.contains_key("then") || m.contains_key("else") => {
                    // (if and then) or (not if and else); the negation is
                    // exact or refused like any `not`.
                    let then = m.get("then").cloned().unwrap_or(Value::Bool(true));
                    let other = m.get("else").cloned().unwrap_or(Value::Bool(true));
                    let split = serde_json::json!({"anyOf": [{"allOf": [v, then]}, {"allOf": [{"not": v}, other]}]});
                    parts.push((Cow::Owned(split), child(ptr, "if")));
                }
                "if" | "then" | "else" => {}
                "dependencies" | "dependentRequired" | "dependentSchemas" => {
                    // "a present => ..." is "a absent, or a present and ...".
                    let deps = v.as_object().ok_or_else(|| invalid(k, ptr, "must be an object"))?;
                    for (name, dep) in deps {
                        let when_present = match dep {
                            Value::Array(names) => {
                                let mut all = vec![Value::String(name.clone())];
                                all.extend(names.iter().cloned());
                                serde_json::json!({ "required": all })
                            }
                            schema => serde_json::json!({"required": [name], "allOf": [schema]}),
                        };
                        let absent = serde_json::json!({"properties": {name: false}});
                        parts.push((Cow::Owned(serde_json::json!({"anyOf": [absent, when_present]})), child(&child(ptr, k), name)));
                    }
                }
                "$ref" if !self.legacy => {
                    let r = v.as_str().ok_or_else(|| invalid("$ref", ptr, "must be a string"))?;
                    parts.push((Cow::Borrowed(self.resolve(r, ptr)?), r.trim_start_matches('#').to_string()));
                }
                // Annotations and unknown keywords constrain nothing (and
                // `definitions` may be most of the schema: every branch
                // would copy it).
                k if is_inert(k) => {}
                _ => {
                    out.insert(k.clone(), lean_keyword(k, v));
                }
            }
        }
        for (part, pptr) in parts {
            let pm = match &*part {
                Value::Bool(true) => continue,
                Value::Bool(false) => {
                    let mut f = Map::new();
                    f.insert("type".into(), Value::Array(Vec::new()));
                    f
                }
                Value::Object(pm) => self.flatten(pm, &pptr)?,
                _ => return Err(invalid("allOf", &pptr, "a schema must be an object or a boolean")),
            };
            out = self.merge(out, pm, ptr)?;
        }
        self.depth -= 1;
        Ok(out)
    }

    /// Both maps' constraints in one map.
    fn merge(&mut self, mut a: Map<String, Value>, b: Map<String, Value>, ptr: &str) -> Res<Map<String, Value>> {
        let all_of = |x: &Value, y: &Value| keyword("allOf", Value::Array(vec![x.clone(), y.clone()]));
        // additionalProperties on one side constrains the other side's extra properties.
        let props_a: Vec<String> = obj_keys(a.get("properties"));
        let props_b: Vec<String> = obj_keys(b.get("properties"));
        let mut cross: Vec<(String, Value)> = Vec::new();
        for (other_props, this_props, this, other) in [(&props_b, &props_a, &a, &b), (&props_a, &props_b, &b, &a)] {
            let Some(ap) = this.get("additionalProperties").filter(|ap| **ap != Value::Bool(true)) else { continue };
            // A key only the other side's patterns match would take them
            // alone once merged, without this side's additionalProperties.
            let this_patterns = obj_keys(this.get("patternProperties"));
            if obj_keys(other.get("patternProperties")).iter().any(|p| !this_patterns.contains(p)) {
                return Err(err(
                    "additionalProperties",
                    ptr,
                    SchemaErrorKind::Unsupported("allOf with additionalProperties and another schema's patternProperties".into()),
                ));
            }
            // A name the other side declares takes this side's
            // additionalProperties unless this side declares it too or one
            // of its patterns matches it (the patterns apply once merged).
            let patterns = self.property_patterns(this, ptr)?;
            for p in other_props {
                if !this_props.contains(p) && !patterns.iter().any(|(_, re, _)| re.matches(p)) {
                    cross.push((p.clone(), ap.clone()));
                }
            }
        }
        let prefix = |m: &Map<String, Value>| m.contains_key("prefixItems") || m.get("items").is_some_and(Value::is_array);
        let rest = |m: &Map<String, Value>| {
            m.contains_key("additionalItems") || m.get("items").is_some_and(|i| !i.is_array())
        };
        if (prefix(&a) && rest(&b)) || (prefix(&b) && rest(&a)) {
            return Err(err(
                "items",
                ptr,
                SchemaErrorKind::Unsupported("allOf mixing prefixItems and items from different schemas".into()),
            ));
        }
        for (k, vb) in b {
            // Annotations and unknown keywords (`x-...`) constrain nothing
            // (`then` and `else` neither: `if` took them when flattened).
            if is_annotation(&k) || is_inert(&k) {
                if !a.contains_key(&k) {
                    a.insert(k, vb);
                }
                continue;
            }
            let Some(slot) = a.get_mut(&k) else {
                a.insert(k, vb);
                continue;
            };
            if *slot == vb {
                continue;
            }
            // Taken out (not copied); every arm below puts a value back or removes the key.
            let va = std::mem::take(slot);
            let merged = match k.as_str() {
                NOT_STRINGS | NOT_PATTERNS | PATTERNS => {
                    let mut xa = va.as_array().cloned().unwrap_or_default();
                    for x in vb.as_array().cloned().unwrap_or_default() {
                        if !xa.contains(&x) {
                            xa.push(x);
                        }
                    }
                    Value::Array(xa)
                }
                "pattern" => {
                    // Both patterns apply: the second joins the further ones.
                    let mut more = a.get(PATTERNS).and_then(Value::as_array).cloned().unwrap_or_default();
                    if !more.contains(&vb) {
                        more.push(vb);
                    }
                    a.insert(k, va);
                    a.insert(PATTERNS.into(), Value::Array(more));
                    continue;
                }
                "type" => {
                    let ta = type_list(&va);
                    let tb = type_list(&vb);
                    let mut t: Vec<Value> = Vec::new();
                    for x in &ta {
                        for y in &tb {
                            let r = match (x.as_str().unwrap_or(""), y.as_str().unwrap_or("")) {
                                (p, q) if p == q => Some(p),
                                ("number", "integer") | ("integer", "number") => Some("integer"),
                                _ => None,
                            };
                            if let Some(r) = r
                                && !t.iter().any(|v| v == r) {
                                    t.push(Value::String(r.to_string()));
                                }
                        }
                    }
                    Value::Array(t)
                }
                "properties" | "patternProperties" => {
                    let object = |v: Value| if let Value::Object(o) = v { o } else { Map::new() };
                    let (mut pa, pb) = (object(va), object(vb));
                    for (pk, pv) in pb {
                        match pa.get_mut(&pk) {
                            Some(old) => *old = keyword("allOf", Value::Array(vec![std::mem::take(old), pv])),
                            None => {
                                pa.insert(pk, pv);
                            }
                        }
                    }
                    Value::Object(pa)
                }
                "required" => {
                    let mut ra = va.as_array().cloned().unwrap_or_default();
                    for x in vb.as_array().cloned().unwrap_or_default() {
                        if !ra.contains(&x) {
                            ra.push(x);
                        }
                    }
                    Value::Array(ra)
                }
                "enum" | "const" => {
                    let ea = if k == "enum" { va.as_array().cloned().unwrap_or_default() } else { vec![va.clone()] };
                    let eb = if k == "enum" { vb.as_array().cloned().unwrap_or_default() } else { vec![vb.clone()] };
                    let both: Vec<Value> = ea.into_iter().filter(|x| eb.iter().any(|y| json_eq(x, y))).collect();
                    a.remove(&k);
                    a.insert("enum".into(), Value::Array(both));
                    continue;
                }
                "minLength" | "minItems" | "minProperties" | "minContains" => num_pick(&va, &vb, true),
                "maxLength" | "maxItems" | "maxProperties" | "maxContains" => num_pick(&va, &vb, false),
                "minimum" | "exclusiveMinimum" if va.is_number() && vb.is_number() => num_pick(&va, &vb, true),
                "maximum" | "exclusiveMaximum" if va.is_number() && vb.is_number() => num_pick(&va, &vb, false),
                "items" | "additionalProperties" | "propertyNames" | "additionalItems"
                    if !va.is_array() && !vb.is_array() =>
                {
                    all_of(&va, &vb)
                }
                "uniqueItems" => Value::Bool(va.as_bool().unwrap_or(false) || vb.as_bool().unwrap_or(false)),
                "not" => keyword("anyOf", Value::Array(vec![va, vb])),
                "anyOf" | "oneOf" => {
                    let xa = va.as_array().cloned().unwrap_or_default();
                    let xb = vb.as_array().cloned().unwrap_or_default();
                    if xa.len() * xb.len() > 64 || k == "oneOf" {
                        return Err(err(&k, ptr, SchemaErrorKind::Unsupported(format!("two {k} in one allOf"))));
                    }
                    let mut out = Vec::new();
                    for x in &xa {
                        for y in &xb {
                            out.push(all_of(x, y));
                        }
                    }
                    Value::Array(out)
                }
                _ => {
                    return Err(err(&k, ptr, SchemaErrorKind::Unsupported(format!("allOf with two different {k}"))));
                }
            };
            a.insert(k, merged);
        }
        if !cross.is_empty() {
            let mut props = a.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
            for (p, ap) in cross {
                let nv = match props.get(&p) {
                    Some(old) => all_of(old, &ap),
                    None => ap,
                };
                props.insert(p, nv);
            }
            a.insert("properties".into(), Value::Object(props));
        }
        Ok(a)
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

    fn branches(&mut self, kw: &str, branches: &[Value], siblings: Map<String, Value>, ptr: &str) -> Res<Expr> {
        let mut merged_all = Vec::new();
        // Each branch's own flattened map, without the siblings (oneOf only).
        let mut own = Vec::new();
        let base = child(ptr, kw);
        for (i, b) in branches.iter().enumerate() {
            let bptr = format!("{base}/{i}");
            let bm = match b {
                Value::Bool(true) => Map::new(),
                Value::Bool(false) => continue,
                // Literals the siblings all reject are dropped before the
                // branch is copied out of the schema.
                Value::Object(o) if kw == "anyOf" && self.rejects_literals(&siblings, o) => continue,
                Value::Object(o) => {
                    let pure_ref = o.contains_key("$ref")
                        && (self.legacy || o.keys().all(|k| k == "$ref" || is_annotation(k)))
                        && siblings.keys().all(|k| is_annotation(k));
                    if pure_ref {
                        // Compiled as a rule (recursion stays a rule); the
                        // flattened form only serves the disjointness proof.
                        let proof = if kw == "oneOf" { self.flatten(o, &bptr)? } else { Map::new() };
                        own.push(proof.clone());
                        merged_all.push((proof, Some(b.clone()), bptr));
                        continue;
                    }
                    self.flatten(o, &bptr)?
                }
                _ => return Err(invalid(kw, &bptr, "a schema must be an object or a boolean")),
            };
            if kw == "anyOf" && self.rejects_literals(&siblings, &bm) {
                continue;
            }
            own.push(if kw == "oneOf" { bm.clone() } else { Map::new() });
            let m = self.merge(siblings.clone(), bm, &bptr)?;
            merged_all.push((m, None, bptr));
        }
        if kw == "oneOf" && !self.disjoint(&merged_all) {
            // Exact as: each branch and not every branch it may overlap. The
            // siblings both hold need no negation (S and A and not (S and B)
            // is S and A and not B): only the other branch's own map is negated.
            let maps: Vec<Map<String, Value>> = merged_all.iter().map(|x| x.0.clone()).collect();
            let mut why = None;
            let mut rewritten = Vec::new();
            for (i, mi) in maps.iter().enumerate() {
                let others: Vec<&Map<String, Value>> =
                    (0..maps.len()).filter(|&j| j != i && !pair_disjoint(mi, &maps[j])).map(|j| &own[j]).collect();
                if others.is_empty() {
                    continue;
                }
                for mj in &others {
                    let apart = disjoint_kinds(mi, mj);
                    let want: Vec<&'static str> = kinds(mi).into_iter().filter(|k| !apart.contains(k)).collect();
                    if let Err(e) = negate(mj, &want, false, self.legacy) {
                        why = Some(e);
                    }
                }
                let nots: Vec<Value> = others.iter().map(|mj| Value::Object((*mj).clone())).collect();
                let not = if nots.len() == 1 { nots[0].clone() } else { keyword("anyOf", Value::Array(nots)) };
                let mut extra = Map::new();
                extra.insert("not".into(), not);
                rewritten.push((i, extra));
            }
            match why {
                Some(e) => self.unsupported("oneOf", ptr, &format!("branches may overlap, and the overlap has no exact negation: {e}; treated as anyOf"))?,
                None => {
                    for (i, extra) in rewritten {
                        let bptr = merged_all[i].2.clone();
                        let mi = self.merge(maps[i].clone(), extra, &bptr)?;
                        merged_all[i] = (mi, None, bptr);
                    }
                }
            }
        }
        let mut alts = Vec::new();
        for (m, raw, bptr) in merged_all {
            let e = match raw {
                None => {
                    self.enter(&bptr)?;
                    let e = self.compile_map(m, &bptr);
                    self.depth -= 1;
                    e?
                }
                Some(raw) => self.schema(&raw, &bptr)?,
            };
            if let Some(e) = e
                && !alts.contains(&e) {
                    alts.push(e);
                }
        }
        Ok(if alts.is_empty() {
            None
        } else {
            let body = self.rules.alt(&alts);
            Some(self.add(kw, body)?)
        })
    }

    /// Whether `branch` lists values (`enum`/`const`, with nothing but
    /// `type` and unknown keywords beside) that `siblings` all reject: the
    /// branch merged with them matches nothing, and translating that merge
    /// could raise nothing the siblings alone do not (an `anyOf` of many
    /// literals under a pattern is then one check per literal).
    fn rejects_literals(&self, siblings: &Map<String, Value>, branch: &Map<String, Value>) -> bool {
        let literal_only = branch.keys().all(|k| matches!(k.as_str(), "enum" | "const" | "type") || !is_known_keyword(k));
        if !literal_only || siblings.contains_key("oneOf") {
            return false;
        }
        values_of(branch).is_some_and(|vals| vals.iter().all(|v| self.check_map(siblings, v, 0) == Some(false)))
    }

    /// Whether no value can match two branches (decided per kind of value by
    /// types, by const/enum values on the value or on a shared required
    /// property, and by a property one side requires and the other forbids).
    fn disjoint(&self, branches: &[(Map<String, Value>, Option<Value>, String)]) -> bool {
        for i in 0..branches.len() {
            for j in i + 1..branches.len() {
                if !pair_disjoint(&branches[i].0, &branches[j].0) {
                    return false;
                }
            }
        }
        true
    }

    /// Conjoin `not n` to `m` where exact; returns false when nothing matches.
    ///
    /// `not` of a flattened map is the union of its keywords' negations, each
    /// restricted to the kind of value the keyword applies to; kinds of value
    /// on which `m` and `n` are already disjoint need no negation.
    fn apply_not(&mut self, m: &mut Map<String, Value>, n: &Value, ptr: &str) -> Res<bool> {
        self.negations += 1;
        if self.negations > MAX_NEGATIONS {
            return Err(err("not", ptr, SchemaErrorKind::Limit("negations (more than 4096)")));
        }
        let nptr = child(ptr, "not");
        let nm = match n {
            Value::Bool(b) => return Ok(!b),
            Value::Object(o) => self.flatten(o, &nptr)?,
            _ => return Err(invalid("not", ptr, "a schema must be an object or a boolean")),
        };
        let keys: Vec<&str> = nm.keys().map(String::as_str).filter(|k| !is_annotation(k)).collect();
        if keys.is_empty() {
            return Ok(false);
        }
        if let Some(Value::Array(branches)) = nm.get("anyOf").filter(|_| keys == ["anyOf"]) {
            for b in branches.clone() {
                if !self.apply_not(m, &b, ptr)? {
                    return Ok(false);
                }
            }
            return Ok(true);
        }
        let mine = kinds(m);
        let apart = disjoint_kinds(m, &nm);
        let want: Vec<&'static str> = mine.iter().copied().filter(|k| !apart.contains(k)).collect();
        if want.is_empty() {
            return Ok(true);
        }
        let types = effective_types(m);
        let int_only = types.contains(&"integer") && !types.contains(&"number");
        let mut alts = match negate(&nm, &want, int_only, self.legacy) {
            Ok(a) => a,
            Err(why) => {
                self.unsupported("not", ptr, &why)?;
                return Ok(true);
            }
        };
        let keep: Vec<Value> = mine.iter().filter(|k| apart.contains(k)).map(|k| Value::String(k.to_string())).collect();
        if !keep.is_empty() {
            alts.push(serde_json::json!({ "type": keep }));
        }
        // Flatten, and drop the alternatives `m` already rules out.
        let mut flat: Vec<Map<String, Value>> = Vec::new();
        for a in alts {
            let am = match a {
                Value::Bool(true) => Map::new(),
                Value::Bool(false) => continue,
                Value::Object(o) => self.flatten(&o, &nptr)?,
                _ => continue,
            };
            if pair_disjoint(m, &am) || flat.contains(&am) {
                continue;
            }
            flat.push(am);
        }
        match flat.len() {
            0 => Ok(false),
            1 => {
                let one = flat.remove(0);
                *m = self.merge(std::mem::take(m), one, ptr)?;
                Ok(true)
            }
            k => {
                let before = m.get("anyOf").and_then(Value::as_array).map_or(1, Vec::len);
                if before * k > 64 {
                    self.unsupported("not", ptr, "the negation needs more than 64 alternatives")?;
                    return Ok(true);
                }
                let any = Value::Array(flat.into_iter().map(Value::Object).collect());
                if m.contains_key("anyOf") {
                    let mut extra = Map::new();
                    extra.insert("anyOf".into(), any);
                    *m = self.merge(std::mem::take(m), extra, ptr)?;
                } else {
                    m.insert("anyOf".into(), any);
                }
                Ok(true)
            }
        }
    }

    /// Any JSON value.
    fn any_value(&mut self) -> Res<Ex> {
        if let Some(a) = self.any {
            return Ok(a);
        }
        let name = self.rules.reserve("value");
        self.any = Some(name);
        let chars = self.rules.repeat(self.chr, 0, None);
        let string = self.quoted(chars);
        let string = self.add("string", string)?;
        let num = self.number_re(&number::range(None, None, Numbers::Real))?;
        let array = self.list("[", name, "]");
        let array = self.add("array", array)?;
        let member = self.member(string, name);
        let object = self.list("{", member, "}");
        let object = self.add("object", object)?;
        let r = &mut self.rules;
        let mut alts = vec![object, array, string];
        alts.extend(num);
        alts.extend(["true", "false", "null"].map(|l| r.lit(l)));
        let body = r.alt(&alts);
        r.define(name, body);
        Ok(name)
    }

    /// `open` and `close` around any number of `item`s separated by commas.
    fn list(&mut self, open: &str, item: Ex, close: &str) -> Ex {
        let sep = self.sep();
        let (ws, r) = (self.ws, &mut self.rules);
        let more = r.seq(&[sep, item]);
        let more = r.repeat(more, 0, None);
        let items = r.seq(&[item, more]);
        let items = r.opt(items);
        let ends = [r.lit(open), r.lit(close)];
        r.seq(&[ends[0], ws, items, ws, ends[1]])
    }

    fn number_re(&mut self, re: &Option<Re>) -> Res<Option<Ex>> {
        let any = self.chr;
        match re.as_ref().and_then(|r| gbnf::emit(r, Encoding::Raw, &mut self.rules, any)) {
            Some(e) => Ok(Some(self.add("number", e)?)),
            None => Ok(None),
        }
    }

    /// A member of an object: `key`, a colon, `value`.
    fn member(&mut self, key: Ex, value: Ex) -> Ex {
        let colon = self.rules.lit(":");
        self.rules.seq(&[key, self.ws, colon, self.ws, value])
    }

    /// The JSON value `v` in every spelling of it.
    fn literal_value(&mut self, v: &Value) -> Ex {
        match v {
            Value::Array(items) => {
                let inner: Vec<Ex> = items.iter().map(|x| self.literal_value(x)).collect();
                self.literal_list("[", &inner, "]")
            }
            Value::Object(o) => {
                let inner: Vec<Ex> = o
                    .iter()
                    .map(|(k, x)| {
                        let key = self.rules.lit(&json_text(&Value::String(k.clone())));
                        let value = self.literal_value(x);
                        self.member(key, value)
                    })
                    .collect();
                self.literal_list("{", &inner, "}")
            }
            Value::Number(n) => number_literal(&mut self.rules, n),
            other => self.rules.lit(&json_text(other)),
        }
    }

    /// `open` and `close` around `items` separated by commas.
    fn literal_list(&mut self, open: &str, items: &[Ex], close: &str) -> Ex {
        let sep = self.sep();
        let (ws, r) = (self.ws, &mut self.rules);
        let (open, close) = (r.lit(open), r.lit(close));
        let mut parts = vec![open, ws];
        for (i, &it) in items.iter().enumerate() {
            if i > 0 {
                parts.push(sep);
            }
            parts.push(it);
        }
        if !items.is_empty() {
            parts.push(ws);
        }
        parts.push(close);
        r.seq(&parts)
    }

    fn number(&mut self, m: &Map<String, Value>, integer: bool, ptr: &str) -> Res<Expr> {
        let dec = |k: &str| -> Res<Option<Dec>> {
            match m.get(k) {
                Some(Value::Number(n)) => {
                    Dec::parse(&n.to_string()).map(Some).ok_or_else(|| invalid(k, ptr, "number out of range"))
                }
                Some(Value::Bool(_)) | None => Ok(None),
                Some(_) => Err(invalid(k, ptr, "must be a number")),
            }
        };
        let excl_flag = |k: &str| m.get(k).and_then(Value::as_bool).unwrap_or(false);
        let mut lo: Option<Bound> = dec("minimum")?.map(|d| (d, excl_flag("exclusiveMinimum")));
        let mut hi: Option<Bound> = dec("maximum")?.map(|d| (d, excl_flag("exclusiveMaximum")));
        if let Some(d) = dec("exclusiveMinimum")?
            && lo.as_ref().is_none_or(|l| d.cmp_value(&l.0).is_ge()) {
                lo = Some((d, true));
            }
        if let Some(d) = dec("exclusiveMaximum")?
            && hi.as_ref().is_none_or(|h| d.cmp_value(&h.0).is_le()) {
                hi = Some((d, true));
            }
        // Draft 4's `integer` type excludes `1.0`; `multipleOf: 1` does not.
        let written = if integer && self.draft04 { Numbers::Whole } else { Numbers::Integer };
        let mut integer = integer;
        if m.get(FRACTION) == Some(&Value::Bool(true)) {
            // Numbers that are not integers, in range, written without an exponent.
            if integer || dec("multipleOf")?.is_some_and(|d| d.is_integer()) {
                return Ok(None);
            }
            if m.contains_key("multipleOf") {
                self.unsupported("multipleOf", ptr, "a fractional multipleOf on numbers that are not integers")?;
            }
            let Some(range) = number::range(lo.as_ref(), hi.as_ref(), Numbers::Real) else { return Ok(None) };
            let frac = regex::parse_pattern("^-?(0|[1-9][0-9]*)\\.[0-9]*[1-9][0-9]*$").map_err(|e| invalid("type", ptr, &e.to_string()))?;
            let max_states = self.opts.limits.max_dfa_states;
            let built = Dfa::tagged(&[range, frac], max_states)
                .and_then(|d| d.emit(&|t| t & 3 == 3, 0, None, &mut self.rules, max_states));
            return match built {
                Ok(Some(body)) => Ok(Some(self.add("number", body)?)),
                Ok(None) => Ok(None),
                Err(TooLarge) => Err(err("not", ptr, SchemaErrorKind::Limit("max_dfa_states"))),
            };
        }
        if let Some(mo) = dec("multipleOf")? {
            if mo.neg || (mo.int == "0" && mo.frac.is_empty()) {
                return Err(invalid("multipleOf", ptr, "must be positive"));
            }
            if mo.is_integer() {
                let k: u64 = mo.int.parse().unwrap_or(u64::MAX);
                if k == 1 {
                    integer = true;
                } else if lo.is_none() && hi.is_none() && k <= 10_000 {
                    return Ok(Some(self.multiple_of(k)?));
                } else {
                    self.unsupported("multipleOf", ptr, "multipleOf combined with bounds, or above 10000")?;
                    integer = true;
                }
            } else if !integer && mo.int == "0" && mo.frac.trim_end_matches('1').chars().all(|c| c == '0') && mo.frac.ends_with('1') && lo.is_none() && hi.is_none() {
                let places = u32::try_from(mo.frac.len()).unwrap_or(u32::MAX);
                let r = &mut self.rules;
                let (digit, zero, point) = (r.ranges(&[(0x30, 0x39)]), r.lit("0"), r.lit("."));
                let places = r.repeat(digit, 1, Some(places));
                let zeros = r.repeat(zero, 0, None);
                let frac = r.seq(&[point, places, zeros]);
                let frac = r.opt(frac);
                let body = [self.sign(), self.natural(), frac];
                let body = self.rules.seq(&body);
                return Ok(Some(self.add("number", body)?));
            } else if !integer {
                self.unsupported("multipleOf", ptr, "a fractional multipleOf other than a power of ten without bounds")?;
            }
        }
        // Many maps share bounds (none, most often): build each range once.
        let numbers = if integer { written } else { Numbers::Real };
        let key = format!("{lo:?} {hi:?} {numbers:?}");
        if let Some(e) = self.ranges.get(&key) {
            return Ok(*e);
        }
        let e = match number::range(lo.as_ref(), hi.as_ref(), numbers) {
            None => None,
            Some(r) => self.number_re(&Some(r))?,
        };
        self.ranges.insert(key, e);
        Ok(e)
    }

    fn multiple_of(&mut self, k: u64) -> Res<Ex> {
        let names: Vec<Ex> = (0..k).map(|_| self.rules.reserve("mod")).collect();
        for r in 0..k {
            let mut alts = Vec::new();
            if r == 0 {
                alts.push(self.rules.empty());
            }
            let mut by_target: Vec<(u64, Vec<(u32, u32)>)> = Vec::new();
            for d in 0..10u32 {
                let t = (r * 10 + u64::from(d)) % k;
                let c = 0x30 + d;
                match by_target.iter_mut().find(|x| x.0 == t) {
                    Some(x) => x.1.push((c, c)),
                    None => by_target.push((t, vec![(c, c)])),
                }
            }
            for (t, ds) in by_target {
                let digits = self.rules.ranges(&regex::CharSet::from_ranges(ds).0);
                alts.push(self.rules.seq(&[digits, names[t as usize]]));
            }
            let body = self.rules.alt(&alts);
            self.rules.define(names[r as usize], body);
        }
        let mut firsts = vec![self.rules.lit("0")];
        for d in 1..10u8 {
            let digit = self.rules.lit(&d.to_string());
            firsts.push(self.rules.seq(&[digit, names[(u64::from(d) % k) as usize]]));
        }
        let r = &mut self.rules;
        let int = r.alt(&firsts);
        let (point, zero) = (r.lit("."), r.lit("0"));
        let zeros = r.repeat(zero, 1, None);
        let frac = r.seq(&[point, zeros]);
        let frac = r.opt(frac);
        let body = [self.sign(), int, frac];
        let body = self.rules.seq(&body);
        self.add("multiple", body)
    }

    /// An optional minus sign.
    fn sign(&mut self) -> Ex {
        let minus = self.rules.lit("-");
        self.rules.opt(minus)
    }

    /// The digits of a natural number: `0`, or no leading zero.
    fn natural(&mut self) -> Ex {
        let r = &mut self.rules;
        let (zero, lead, digit) = (r.lit("0"), r.ranges(&[(0x31, 0x39)]), r.ranges(&[(0x30, 0x39)]));
        let digits = r.repeat(digit, 0, None);
        let more = r.seq(&[lead, digits]);
        r.alt(&[zero, more])
    }

    fn string(&mut self, m: &Map<String, Value>, ptr: &str) -> Res<Expr> {
        let min_len = count(m, "minLength", ptr)?.unwrap_or(0);
        let max_len = count(m, "maxLength", ptr)?;
        if max_len.is_some_and(|x| x < min_len) {
            return Ok(None);
        }
        let mut res: Vec<(Re, &str)> = Vec::new();
        if let Some(f) = m.get("format").and_then(Value::as_str) {
            if let Some(p) = format::pattern(f) {
                let re = self.pattern(&p).map_err(|e| invalid("format", ptr, &e.to_string()))?;
                res.push((Re::clone(&re), "format"));
            } else if format::UNSUPPORTED.contains(&f) {
                self.unsupported("format", ptr, &format!("format {f:?} is not a regular language here"))?;
            }
        }
        let more = m.get(PATTERNS).and_then(Value::as_array).cloned().unwrap_or_default();
        for p in m.get("pattern").into_iter().chain(more.iter()) {
            let p = p.as_str().ok_or_else(|| invalid("pattern", ptr, "must be a string"))?;
            match self.pattern(p) {
                Ok(re) => res.push((Re::clone(&re), "pattern")),
                Err(e @ regex::PatternError::Unsupported(_)) => self.unsupported("pattern", ptr, &e.to_string())?,
                Err(e) => return Err(invalid("pattern", ptr, &e.to_string())),
            }
        }
        // Languages a `not` excluded: strings, and patterns.
        let mut banned: Vec<Re> = Vec::new();
        for p in m.get(NOT_PATTERNS).and_then(Value::as_array).into_iter().flatten() {
            let p = p.as_str().ok_or_else(|| invalid("not", ptr, "pattern must be a string"))?;
            match self.pattern(p) {
                Ok(re) => banned.push(Re::clone(&re)),
                Err(e @ regex::PatternError::Unsupported(_)) => {
                    self.unsupported("not", ptr, &format!("negated pattern: {e}"))?
                }
                Err(e) => return Err(invalid("pattern", ptr, &e.to_string())),
            }
        }
        let excluded: Vec<&str> = m.get(NOT_STRINGS).and_then(Value::as_array).map(|v| v.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
        if !excluded.is_empty() {
            banned.push(Re::Alt(excluded.iter().map(|x| literal_re(x)).collect()));
        }
        if res.is_empty() && banned.is_empty() {
            let body = self.repeat(self.chr, min_len, max_len)?;
            let body = self.quoted(body);
            return Ok(Some(self.add("string", body)?));
        }
        if res.len() == 1 && banned.is_empty()
            && let Some(re) = with_length(res[0].0.clone(), min_len, max_len) {
                return self.string_re(&re);
            }
        // Intersections: every pattern/format and the length bounds at once,
        // minus the strings a `not` excluded.
        let mut exprs: Vec<Re> = res.iter().map(|r| r.0.clone()).collect();
        if exprs.is_empty() {
            exprs.push(Re::any_string());
        }
        let all = (1u64 << exprs.len()) - 1;
        let mut forbid = 0u64;
        for b in banned {
            if exprs.len() >= 63 {
                self.unsupported("pattern", ptr, "more than 63 patterns on one string")?;
                break;
            }
            exprs.push(b);
            forbid |= 1 << (exprs.len() - 1);
        }
        let max_states = self.opts.limits.max_dfa_states;
        let built = Dfa::tagged(&exprs, max_states)
            .and_then(|d| d.emit(&|t| t & all == all && t & forbid == 0, min_len, max_len, &mut self.rules, max_states));
        match built {
            Ok(Some(body)) => {
                let body = self.quoted(body);
                Ok(Some(self.add("string", body)?))
            }
            Ok(None) => Ok(None),
            Err(TooLarge) => {
                let kw = res.first().map_or("not", |r| r.1);
                self.unsupported(kw, ptr, "pattern, format, length bounds and excluded strings together exceed max_dfa_states")?;
                match res.first() {
                    Some(r) => self.string_re(&r.0),
                    None => Ok(None),
                }
            }
        }
    }

    /// `body` between the quotes of a JSON string.
    fn quoted(&mut self, body: Ex) -> Ex {
        let quote = self.rules.lit("\"");
        self.rules.seq(&[quote, body, quote])
    }

    /// `unit{min,max}`; bounds above the grammar compiler's 1000 are split
    /// into blocks of 1000 (each count has one split).
    fn repeat(&mut self, unit: Ex, min: u64, max: Option<u64>) -> Res<Ex> {
        const B: u64 = 1000;
        let blocks = min > B || max.is_some_and(|m| m > B);
        // Blocks copy their unit thousands of times, at every count they may
        // end at: a string character keeps its `\u` escapes (rare, and a
        // dozen states each copy) in one rule called from every copy. Short
        // escapes (`\n`, `\"`) stay inline, where the masks after their
        // backslash are cheap.
        let unit = if blocks && unit == self.chr { self.lean_chr()? } else { unit };
        // Counts below a block fit a u32.
        let small = |r: &mut Writer, lo: u64, hi: Option<u64>| match hi {
            Some(0) => r.empty(),
            _ => r.repeat(unit, lo as u32, hi.map(|h| h as u32)),
        };
        if !blocks {
            return Ok(small(&mut self.rules, min, max));
        }
        let block = self.rules.repeat(unit, B as u32, Some(B as u32));
        let block = self.add("block", block)?;
        let mut parts = Vec::new();
        if min > 0 {
            parts.push(self.repeat(block, min / B, Some(min / B))?);
            parts.push(small(&mut self.rules, min % B, Some(min % B)));
        }
        match max {
            None => parts.push(self.rules.repeat(unit, 0, None)),
            Some(m) => {
                let n = m - min;
                let (q, r) = (n / B, n % B);
                if q == 0 {
                    parts.push(small(&mut self.rules, 0, Some(r)));
                } else {
                    let fewer = self.repeat(block, 0, Some(q - 1))?;
                    let full = self.repeat(block, q, Some(q))?;
                    let fewer = [fewer, small(&mut self.rules, 0, Some(B - 1))];
                    let full = [full, small(&mut self.rules, 0, Some(r))];
                    let (fewer, full) = (self.rules.seq(&fewer), self.rules.seq(&full));
                    parts.push(self.rules.alt(&[fewer, full]));
                }
            }
        }
        Ok(self.rules.seq(&parts))
    }

    /// See [`Compiler::lean_chr`].
    fn lean_chr(&mut self) -> Res<Ex> {
        if let Some(c) = self.lean_chr {
            return Ok(c);
        }
        let unicode_escape = gbnf::json_unicode_escape(&mut self.rules, self.hex2);
        let unicode_escape = self.opaque("unicode", unicode_escape)?;
        let c = gbnf::json_char_any(&mut self.rules, unicode_escape);
        let c = self.add("char", c)?;
        self.lean_chr = Some(c);
        Ok(c)
    }

    fn string_re(&mut self, re: &Re) -> Res<Expr> {
        let chr = self.chr;
        match gbnf::emit(re, Encoding::JsonString, &mut self.rules, chr) {
            Some(e) => {
                let body = self.quoted(e);
                Ok(Some(self.add("string", body)?))
            }
            None => Ok(None),
        }
    }

    fn array(&mut self, m: &Map<String, Value>, ptr: &str) -> Res<Expr> {
        let min = count(m, "minItems", ptr)?.unwrap_or(0);
        let max = count(m, "maxItems", ptr)?;
        if max.is_some_and(|x| x < min) {
            return Ok(None);
        }
        let (prefix, rest): (Vec<Value>, Value) = match (m.get("prefixItems"), m.get("items")) {
            (Some(Value::Array(p)), items) => (p.clone(), items.cloned().unwrap_or(Value::Bool(true))),
            (None, Some(Value::Array(p))) => (p.clone(), m.get("additionalItems").cloned().unwrap_or(Value::Bool(true))),
            (_, items) => (Vec::new(), items.cloned().unwrap_or(Value::Bool(true))),
        };
        let prefix_kw = if m.contains_key("prefixItems") { "prefixItems" } else { "items" };
        let rest_kw = if m.contains_key("prefixItems") || !m.get("items").is_some_and(Value::is_array) { "items" } else { "additionalItems" };
        if m.get("uniqueItems").and_then(Value::as_bool).unwrap_or(false) && max.is_none_or(|x| x > 1) {
            if prefix.is_empty() && !m.contains_key("contains")
                && let Some(values) = self.finite_values(&rest, &child(ptr, "items"))?
            {
                return self.distinct_items(&values, min, max);
            }
            self.unsupported("uniqueItems", ptr, "uniqueItems on arrays that may hold two or more items of a schema with more than 10 values")?;
        }
        let ws = self.ws;
        let sep = self.sep();
        let mut pre: Vec<Expr> = Vec::new();
        for (i, p) in prefix.iter().enumerate() {
            if max.is_some_and(|x| i as u64 >= x) {
                break;
            }
            pre.push(self.schema(p, &child(&child(ptr, prefix_kw), &i.to_string()))?);
        }
        let rest_e = self.schema(&rest, &child(ptr, rest_kw))?;
        let (open, close) = (self.rules.lit("["), self.rules.lit("]"));
        // contains: at least n items matching both the item schema and `contains`.
        if let Some(c) = m.get("contains") {
            let n = count(m, "minContains", ptr)?.unwrap_or(1);
            if m.contains_key("maxContains") || !pre.is_empty() || max.is_some() || min > n {
                self.unsupported("contains", ptr, "contains with maxContains, prefix items, maxItems or minItems above minContains")?;
            } else if n > 0 {
                let both = keyword("allOf", Value::Array(vec![rest.clone(), c.clone()]));
                let Some(ce) = self.schema(&both, &child(ptr, "contains"))? else { return Ok(None) };
                let r = match rest_e {
                    Some(r) => r,
                    None => {
                        if n > 1 {
                            return Ok(None);
                        }
                        let body = self.rules.seq(&[open, ws, ce, ws, close]);
                        return Ok(Some(self.add("array", body)?));
                    }
                };
                let rules = &mut self.rules;
                let (item_sep, sep_item) = (rules.seq(&[r, sep]), rules.seq(&[sep, r]));
                let (before, after) = (rules.repeat(item_sep, 0, None), rules.repeat(sep_item, 0, None));
                let mut body = vec![open, ws, before, ce];
                if n > 1 {
                    let more = rules.seq(&[after, sep, ce]);
                    let times = u32::try_from(n - 1).unwrap_or(u32::MAX);
                    body.push(rules.repeat(more, times, Some(times)));
                }
                body.extend([after, ws, close]);
                let body = rules.seq(&body);
                return Ok(Some(self.add("array", body)?));
            }
        }
        // Elements: prefix positions, then the rest; counts between min and max.
        let k = pre.len() as u64;
        let rest_min = min.saturating_sub(k);
        let rest_max = max.map(|x| x.saturating_sub(k));
        let rest_part = match rest_e {
            Some(r) if rest_max != Some(0) => Some((r, rest_min, rest_max)),
            _ => None,
        };
        if (rest_e.is_none() || rest_max == Some(0))
            && rest_min > 0 {
                return Ok(None);
            }
        // Build from the end: after position i (0-based count emitted so far).
        let count32 = |x: u64| u32::try_from(x).unwrap_or(u32::MAX);
        let mut body: Option<Ex> = None;
        if let Some((r, lo, hi)) = rest_part {
            let rules = &mut self.rules;
            if k == 0 {
                // The first element has no separator.
                let inner_hi = hi.map(|h| h - 1);
                let mut tail = vec![r];
                if inner_hi != Some(0) {
                    let more = rules.seq(&[sep, r]);
                    tail.push(rules.repeat(more, count32(lo.saturating_sub(1)), inner_hi.map(count32)));
                }
                let tail = rules.seq(&tail);
                body = Some(if lo == 0 { rules.opt(tail) } else { tail });
            } else {
                let more = rules.seq(&[sep, r]);
                body = Some(rules.repeat(more, count32(lo), hi.map(count32)));
            }
        }
        for i in (0..pre.len()).rev() {
            let Some(p) = pre[i] else {
                // This position cannot be filled: the array ends before it.
                if (i as u64) < min {
                    return Ok(None);
                }
                body = None;
                continue;
            };
            let rules = &mut self.rules;
            let mut this = if i == 0 { vec![p] } else { vec![sep, p] };
            this.extend(body);
            let this = rules.seq(&this);
            body = Some(if (i as u64) >= min { rules.opt(this) } else { this });
        }
        let body = match body {
            Some(b) => self.rules.seq(&[open, ws, b, ws, close]),
            None => self.rules.seq(&[open, ws, close]),
        };
        Ok(Some(self.add("array", body)?))
    }

    /// A comma between whitespace.
    fn sep(&mut self) -> Ex {
        let comma = self.rules.lit(",");
        self.rules.seq(&[self.ws, comma, self.ws])
    }

    /// The values of a schema that allows at most 10 (enum, const, booleans,
    /// null), each checked against the rest of the schema; `None` otherwise.
    fn finite_values(&mut self, s: &Value, ptr: &str) -> Res<Option<Vec<Value>>> {
        let m = match s {
            Value::Object(o) if !o.contains_key("$ref") || !self.legacy => self.flatten(o, ptr)?,
            Value::Bool(false) => return Ok(Some(Vec::new())),
            _ => return Ok(None),
        };
        let candidates = match values_of(&m) {
            Some(v) => v.to_vec(),
            None => {
                let only_type = m.keys().all(|k| k == "type" || is_annotation(k));
                match kinds(&m).as_slice() {
                    ["null"] if only_type => vec![Value::Null],
                    ["boolean"] if only_type => vec![Value::Bool(true), Value::Bool(false)],
                    ["null", "boolean"] | ["boolean", "null"] if only_type => {
                        vec![Value::Null, Value::Bool(true), Value::Bool(false)]
                    }
                    _ => return Ok(None),
                }
            }
        };
        let mut out: Vec<Value> = Vec::new();
        for v in candidates {
            match self.check(&Value::Object(m.clone()), &v, 0) {
                Some(true) if !out.iter().any(|x| json_eq(x, &v)) => out.push(v),
                Some(_) => {}
                None => return Ok(None),
            }
        }
        Ok(if out.len() <= 10 { Some(out) } else { None })
    }

    /// Arrays of distinct values from `values` in any order, `min..=max` of
    /// them: one rule per set of values already written.
    fn distinct_items(&mut self, values: &[Value], min: u64, max: Option<u64>) -> Res<Expr> {
        let mut lit_rules = Vec::new();
        for v in values {
            let l = self.literal_value(v);
            lit_rules.push(self.opaque("item", l)?);
        }
        let mut memo: FastMap<u32, Option<Ex>> = FastMap::default();
        let Some(body) = self.distinct_from(&lit_rules, 0, min, max, &mut memo)? else { return Ok(None) };
        let (ws, r) = (self.ws, &mut self.rules);
        let (open, close) = (r.lit("["), r.lit("]"));
        let body = if r.is_empty(body) { r.seq(&[open, ws, close]) } else { r.seq(&[open, ws, body, ws, close]) };
        Ok(Some(self.add("array", body)?))
    }

    fn distinct_from(
        &mut self,
        items: &[Ex],
        seen: u32,
        min: u64,
        max: Option<u64>,
        memo: &mut FastMap<u32, Option<Ex>>,
    ) -> Res<Option<Ex>> {
        if let Some(done) = memo.get(&seen) {
            return Ok(*done);
        }
        let cnt = u64::from(seen.count_ones());
        let sep = self.sep();
        let mut alts = Vec::new();
        if cnt >= min {
            alts.push(self.rules.empty());
        }
        if max.is_none_or(|m| cnt < m) {
            for (i, &it) in items.iter().enumerate() {
                if seen >> i & 1 == 1 {
                    continue;
                }
                if let Some(next) = self.distinct_from(items, seen | 1 << i, min, max, memo)? {
                    let mut parts = if seen == 0 { vec![it] } else { vec![sep, it] };
                    if !self.rules.is_empty(next) {
                        parts.push(next);
                    }
                    alts.push(self.rules.seq(&parts));
                }
            }
        }
        let name = match alts[..] {
            [] => None,
            [one] if self.rules.is_empty(one) => Some(one),
            _ => {
                let body = self.rules.alt(&alts);
                Some(self.opaque("distinct", body)?)
            }
        };
        memo.insert(seen, name);
        Ok(name)
    }

    fn object(&mut self, m: &Map<String, Value>, ptr: &str) -> Res<Expr> {
        let empty = Map::new();
        let props = match m.get("properties") {
            Some(Value::Object(p)) => p,
            Some(_) => return Err(invalid("properties", ptr, "must be an object")),
            None => &empty,
        };
        let required: Vec<String> = m
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(|x| x.as_str().map(String::from)).collect())
            .unwrap_or_default();
        let default_ap = Value::Bool(self.opts.additional_properties_default);
        let ap = m.get("additionalProperties").unwrap_or(&default_ap);
        let min_p = count(m, "minProperties", ptr)?.unwrap_or(0);
        let max_p = count(m, "maxProperties", ptr)?;
        let mut patterns: Vec<(Re, Value, String)> = Vec::new();
        for (p, re, s) in self.property_patterns(m, ptr)? {
            patterns.push((Re::clone(&re), s.clone(), child(&child(ptr, "patternProperties"), p)));
        }
        let names_schema = m.get("propertyNames");
        // Declared properties, in schema order, then required names not declared.
        // Subschemas are borrowed: copying them at every level of nesting
        // would take time quadratic in the schema's depth.
        let mut names: Vec<(String, Cow<'_, Value>, String)> = props
            .iter()
            .map(|(k, v)| (k.clone(), Cow::Borrowed(v), child(&child(ptr, "properties"), k)))
            .collect();
        let anything = Value::Bool(true);
        for r in &required {
            if !props.contains_key(r) {
                let s = if patterns.iter().any(|p| p.0.matches(r)) { &anything } else { ap };
                names.push((r.clone(), Cow::Borrowed(s), child(ptr, "required")));
            }
        }
        // Members that may appear, and every declared name (undeclared keys
        // avoid them all, those whose value can never be valid included).
        let mut entries: Vec<(String, Ex, bool)> = Vec::new();
        let mut known: Vec<String> = Vec::new();
        for (name, s, nptr) in names {
            let mut parts = vec![s];
            for (re, ps, _) in &patterns {
                if re.matches(&name) {
                    parts.push(Cow::Borrowed(ps));
                }
            }
            if let Some(ns) = names_schema {
                match self.check(ns, &Value::String(name.clone()), 0) {
                    Some(true) => {}
                    Some(false) => parts.push(Cow::Owned(Value::Bool(false))),
                    None => self.unsupported("propertyNames", ptr, "propertyNames that cannot be checked on declared names")?,
                }
            }
            let s = if parts.len() == 1 {
                parts.remove(0)
            } else {
                Cow::Owned(keyword("allOf", Value::Array(parts.into_iter().map(Cow::into_owned).collect())))
            };
            let e = self.schema(&s, &nptr)?;
            let req = required.contains(&name);
            if e.is_none() && req {
                return Ok(None);
            }
            if let Some(e) = e {
                let key = self.rules.lit(&json_text(&Value::String(name.clone())));
                entries.push((name.clone(), self.member(key, e), req));
            }
            known.push(name);
        }
        // Extra members: keys outside the declared names, split by which
        // patterns they match (none: additionalProperties).
        let extra = self.extra_members(&known, &patterns, ap, names_schema, ptr)?;
        let extra = match extra {
            Some(e) => Some(self.add("member", e)?),
            None => None,
        };
        let Some(body) = self.members(&entries, extra, min_p, max_p)? else { return Ok(None) };
        let (ws, r) = (self.ws, &mut self.rules);
        let (open, close) = (r.lit("{"), r.lit("}"));
        let body = r.seq(&[open, ws, body, ws, close]);
        Ok(Some(self.add("object", body)?))
    }

    /// Members in declared order then extras, counting members for
    /// minProperties/maxProperties. Each reachable state (position, first,
    /// count) is a rule.
    fn members(&mut self, entries: &[(String, Ex, bool)], extra: Option<Ex>, min_p: u64, max_p: Option<u64>) -> Res<Option<Ex>> {
        let lead_extras = match extra {
            Some(x) if min_p == 0 && max_p.is_none() => {
                let sep = self.sep();
                let more = self.rules.seq(&[sep, x]);
                let more = self.rules.repeat(more, 0, None);
                let lead = self.rules.seq(&[x, more, sep]);
                let lead = self.rules.opt(lead);
                Some(self.add("extras", lead)?)
            }
            _ => None,
        };
        let shape = MemberShape {
            entries,
            extra,
            min_p,
            max_p,
            cap: max_p.map_or(min_p, |m| m + 1),
            lead_extras,
            sep: None,
        };
        if let PropertyOrder::AnyUpTo(n) = self.opts.property_order
            && entries.len() <= usize::from(n.min(16)) && entries.len() > 1
            && self.order_states + (1 << entries.len()) <= self.opts.limits.max_order_states {
                // Counted at every object, shared or not, so that the same
                // objects take any order as when each is written out.
                self.order_states += 1 << entries.len();
                let key = (entries.to_vec(), extra, min_p, max_p);
                if let Some(done) = self.member_sets.get(&key) {
                    return Ok(*done);
                }
                // Each member is a rule kept out of line, called from each
                // set of members written: one automaton of 2^n states (the
                // sets of members written) and n * 2^(n-1) calls.
                let mut named: Vec<(String, Ex, bool)> = Vec::new();
                for &(ref k, kv, req) in entries {
                    named.push((k.clone(), self.opaque("key", kv)?, req));
                }
                let lead_extras = match shape.lead_extras {
                    Some(x) => Some(self.opaque("extras", x)?),
                    None => None,
                };
                let sep = self.sep();
                let sep = match lead_extras {
                    Some(x) => self.rules.seq(&[sep, x]),
                    None => sep,
                };
                let sep = Some(self.opaque("sep", sep)?);
                let shape = MemberShape { entries: &named, lead_extras, sep, ..shape };
                let mut memo = vec![None; 1 << named.len()];
                let mut auto = Automaton::default();
                let sets = match self.member_set(&shape, 0, &mut memo, &mut auto, &mut FastMap::default())? {
                    None => None,
                    Some(FINAL) => Some(self.rules.empty()),
                    Some(_) => {
                        // The state every member sequence ends in, last.
                        let end = auto.states.len() as u32;
                        auto.states.push((true, 0, 0));
                        auto.edges.iter_mut().filter(|e| e.1 == FINAL).for_each(|e| e.1 = end);
                        Some(self.rules.automaton(&auto.states, &auto.edges, &[]))
                    }
                };
                self.member_sets.insert(key, sets);
                return Ok(sets);
            }
        let mut memo: FastMap<(usize, bool, u64), Option<Ex>> = FastMap::default();
        self.member_state(&shape, 0, true, 0, &mut memo)
    }

    /// Declared members in any order: a state per set of members already
    /// written. Returns the state of set `seen` (`FINAL` when nothing but
    /// the object's end may follow; `None` when no member sequence
    /// continues from it), memoized in `memo` by the set's bits; states go
    /// in `auto`, the first set's first. `tails` memoizes
    /// [`Compiler::member_state`] past the declared members.
    fn member_set(
        &mut self,
        sh: &MemberShape<'_>,
        seen: u32,
        memo: &mut [Option<Option<u32>>],
        auto: &mut Automaton,
        tails: &mut FastMap<(usize, bool, u64), Option<Ex>>,
    ) -> Res<Option<u32>> {
        if let Some(done) = memo[seen as usize] {
            return Ok(done);
        }
        self.check_size()?;
        let cnt = u64::from(seen.count_ones());
        let first = seen == 0;
        let state = auto.states.len() as u32;
        auto.states.push((false, 0, 0));
        // The next declared member, after the separator and extras they all
        // share (one edge into a state of its own, so the grammar holds one
        // copy of them).
        let mut nexts = Vec::with_capacity(sh.entries.len());
        if sh.max_p.is_none_or(|m| cnt < m) {
            for (i, &(_, kv, _)) in sh.entries.iter().enumerate() {
                if seen >> i & 1 == 1 {
                    continue;
                }
                if let Some(to) = self.member_set(sh, seen | 1 << i, memo, auto, tails)? {
                    nexts.push((kv, to));
                }
            }
        }
        let mut edges = Vec::with_capacity(2);
        if !nexts.is_empty() {
            let prefix = match (first, sh.lead_extras, sh.sep) {
                (true, Some(x), _) => Some(x),
                (true, None, _) => None,
                (false, _, Some(sep)) => Some(sep),
                (false, Some(x), None) => {
                    let sep = self.sep();
                    Some(self.rules.seq(&[sep, x]))
                }
                (false, None, None) => Some(self.sep()),
            };
            match prefix {
                None => edges = nexts,
                Some(prefix) => {
                    edges.push((prefix, auto.states.len() as u32));
                    let at = auto.edges.len() as u32;
                    auto.edges.extend_from_slice(&nexts);
                    auto.states.push((false, at, auto.edges.len() as u32));
                }
            }
        }
        let all_required = sh.entries.iter().enumerate().all(|(i, e)| !e.2 || seen >> i & 1 == 1);
        let mut accept = false;
        if all_required {
            // The tail after the declared members: extras, counted.
            if let Some(t) = self.member_state(sh, sh.entries.len(), first, cnt.min(sh.cap), tails)? {
                if self.rules.is_empty(t) {
                    accept = true;
                } else {
                    edges.push((self.opaque_once(t)?, FINAL));
                }
            }
        }
        let out = match (edges.is_empty(), accept) {
            (true, false) => None,
            (true, true) => Some(FINAL),
            _ => {
                let at = auto.edges.len() as u32;
                auto.edges.extend_from_slice(&edges);
                auto.states[state as usize] = (accept, at, auto.edges.len() as u32);
                Some(state)
            }
        };
        memo[seen as usize] = Some(out);
        Ok(out)
    }

    /// The members from declared member `i` on (`first`: nothing written yet; `cnt`: members
    /// written, capped), memoized in `memo`. Each state needs the states of member `i + 1`:
    /// they are made first, from a stack of our own rather than by recursion, so that an object
    /// of many thousands of declared properties does not run out of the thread's stack.
    fn member_state(
        &mut self,
        sh: &MemberShape<'_>,
        i: usize,
        first: bool,
        cnt: u64,
        memo: &mut FastMap<(usize, bool, u64), Option<Ex>>,
    ) -> Res<Option<Ex>> {
        let mut stack = vec![(i, first, cnt)];
        while let Some(&(i, first, cnt)) = stack.last() {
            if memo.contains_key(&(i, first, cnt)) {
                stack.pop();
                continue;
            }
            if i < sh.entries.len() && sh.max_p.is_none_or(|m| cnt <= m) {
                let take = (i + 1, false, (cnt + 1).min(sh.cap));
                let skip = (i + 1, first, cnt);
                if let Some(next) = [Some(take), (!sh.entries[i].2).then_some(skip)].into_iter().flatten().find(|k| !memo.contains_key(k)) {
                    stack.push(next);
                    continue;
                }
            }
            stack.pop();
            let name = self.member_body(sh, i, first, cnt, memo)?;
            memo.insert((i, first, cnt), name);
        }
        Ok(memo[&(i, first, cnt)])
    }

    /// One state of [`Compiler::member_state`], the states it needs already in `memo`.
    fn member_body(
        &mut self,
        sh: &MemberShape<'_>,
        i: usize,
        first: bool,
        cnt: u64,
        memo: &FastMap<(usize, bool, u64), Option<Ex>>,
    ) -> Res<Option<Ex>> {
        let sep = self.sep();
        let lead: &[Ex] = if first { &[] } else { &[sep] };
        let body: Option<Ex> = if sh.max_p.is_some_and(|m| cnt > m) {
            None
        } else if i == sh.entries.len() {
            let need = sh.min_p.saturating_sub(cnt);
            let room = sh.max_p.map(|m| m - cnt);
            match sh.extra {
                Some(x) if room != Some(0) => {
                    let more_hi = room.map(|r| r - 1);
                    let more_lo = need.saturating_sub(1);
                    let unit = self.rules.seq(&[sep, x]);
                    let unit = self.add("member", unit)?;
                    let mut one = lead.to_vec();
                    one.push(x);
                    if more_hi != Some(0) {
                        one.push(self.repeat(unit, more_lo, more_hi)?);
                    }
                    let one = self.rules.seq(&one);
                    Some(if need == 0 { self.rules.opt(one) } else { one })
                }
                _ => (need == 0).then(|| self.rules.empty()),
            }
        } else {
            let (_, kv, req) = sh.entries[i];
            let next_cnt = (cnt + 1).min(sh.cap);
            let mut alts = Vec::new();
            if let Some(next) = memo[&(i + 1, false, next_cnt)] {
                let mut parts = lead.to_vec();
                parts.extend(sh.lead_extras);
                parts.push(kv);
                if !self.rules.is_empty(next) {
                    parts.push(next);
                }
                alts.push(self.rules.seq(&parts));
            }
            if !req
                && let Some(skip) = memo[&(i + 1, first, cnt)] {
                    alts.push(skip);
                }
            if alts.is_empty() { None } else { Some(self.rules.alt(&alts)) }
        };
        Ok(match body {
            Some(b) if self.rules.is_empty(b) || self.rules.is_atom(b) => Some(b),
            Some(b) => Some(self.add("members", b)?),
            None => None,
        })
    }

    /// One member alternative per region of undeclared keys: keys matching
    /// exactly the patterns in a subset (all of their schemas apply), or none
    /// (`additionalProperties` applies); `propertyNames` narrows every region.
    fn extra_members(
        &mut self,
        known: &[String],
        patterns: &[(Re, Value, String)],
        ap: &Value,
        names_schema: Option<&Value>,
        ptr: &str,
    ) -> Res<Option<Ex>> {
        if patterns.is_empty() && *ap == Value::Bool(false) {
            return Ok(None);
        }
        if patterns.len() > 60 {
            self.unsupported("patternProperties", ptr, "more than 60 patterns")?;
            return Ok(None);
        }
        let mut exprs: Vec<Re> = patterns.iter().map(|p| p.0.clone()).collect();
        let pattern_mask = (1u64 << exprs.len()) - 1;
        let mut names_bit = 0u64;
        if let Some(ns) = names_schema {
            match self.name_language(ns, ptr)? {
                Some(re) => {
                    names_bit = 1 << exprs.len();
                    exprs.push(re);
                }
                None => return Ok(None),
            }
        }
        // Every string, so that keys outside all the languages are not lost.
        exprs.push(Re::any_string());
        let known_from = exprs.len();
        exprs.extend(known.iter().map(|k| literal_re(k)));
        if exprs.len() > 64 {
            // Many declared names: one tag for all of them.
            exprs.truncate(known_from);
            exprs.push(Re::Alt(known.iter().map(|k| literal_re(k)).collect()));
        }
        let known_mask = if exprs.len() > known_from { u64::MAX << known_from } else { 0 };
        // The declared names alone make a trie, as large as their text: the schema pays for
        // those states, and the limit bounds what the patterns add to them.
        let max_states = self.opts.limits.max_dfa_states + known.iter().map(|k| k.len() + 1).sum::<usize>();
        let names_keyword = if patterns.is_empty() { "properties" } else { "patternProperties" };
        let dfa = match Dfa::tagged(&exprs, max_states) {
            Ok(d) => d,
            Err(TooLarge) => {
                self.unsupported(names_keyword, ptr, "property name patterns exceed max_dfa_states")?;
                return Ok(None);
            }
        };
        let mut alts = Vec::new();
        for sig in dfa.signatures() {
            if sig & known_mask != 0 || (names_bit != 0 && sig & names_bit == 0) {
                continue;
            }
            let pats = sig & pattern_mask;
            let value = if pats == 0 {
                if *ap == Value::Bool(false) {
                    continue;
                }
                self.schema(ap, &child(ptr, "additionalProperties"))?
            } else {
                let parts: Vec<Value> =
                    patterns.iter().enumerate().filter(|(i, _)| pats >> i & 1 == 1).map(|(_, p)| p.1.clone()).collect();
                let ptr0 = patterns.iter().enumerate().find(|(i, _)| pats >> i & 1 == 1).map(|(_, p)| p.2.clone()).unwrap_or_default();
                let s = if parts.len() == 1 { parts[0].clone() } else { keyword("allOf", Value::Array(parts)) };
                self.schema(&s, &ptr0)?
            };
            let Some(value) = value else { continue };
            let key = match dfa.emit(&|t| t == sig, 0, None, &mut self.rules, max_states) {
                Ok(Some(k)) => k,
                Ok(None) => continue,
                Err(TooLarge) => {
                    self.unsupported(names_keyword, ptr, "property name patterns exceed max_dfa_states")?;
                    continue;
                }
            };
            let key = self.quoted(key);
            alts.push(self.member(key, value));
        }
        Ok(if alts.is_empty() { None } else { Some(self.rules.alt(&alts)) })
    }

    /// The language of `propertyNames` when it is a string pattern (or
    /// `true`); `None` when no name is allowed.
    fn name_language(&mut self, ns: &Value, ptr: &str) -> Res<Option<Re>> {
        let nptr = child(ptr, "propertyNames");
        let m = match ns {
            Value::Bool(true) => return Ok(Some(Re::any_string())),
            Value::Bool(false) => return Ok(None),
            Value::Object(o) => self.flatten(o, &nptr)?,
            _ => return Err(invalid("propertyNames", ptr, "a schema must be an object or a boolean")),
        };
        let mut re = Re::any_string();
        for (k, v) in &m {
            match k.as_str() {
                k if is_annotation(k) => {}
                "type" if type_list(v).iter().any(|t| t == "string") => {}
                "pattern" => {
                    let p = v.as_str().ok_or_else(|| invalid("pattern", &nptr, "must be a string"))?;
                    re = Re::clone(&*self.pattern(p).map_err(|e| invalid("pattern", &nptr, &e.to_string()))?);
                }
                "maxLength" | "minLength" if !m.contains_key("pattern") => {
                    let lo = count(&m, "minLength", &nptr)?.unwrap_or(0);
                    let hi = count(&m, "maxLength", &nptr)?;
                    let to = |x: u64| u32::try_from(x).unwrap_or(u32::MAX);
                    re = Re::Repeat(Box::new(Re::Set(regex::CharSet::any())), to(lo), hi.map(to));
                }
                _ => {
                    self.unsupported("propertyNames", &nptr, &format!("{k} in propertyNames"))?;
                }
            }
        }
        Ok(Some(re))
    }

    /// Decide whether `v` satisfies `s` for the keywords that are cheap to
    /// check; `None` when some keyword cannot be decided here.
    fn check(&self, s: &Value, v: &Value, depth: usize) -> Option<bool> {
        match s {
            Value::Bool(b) => Some(*b),
            Value::Object(m) => self.check_map(m, v, depth),
            _ => None,
        }
    }

    /// [`Compiler::check`] of a keyword map.
    fn check_map(&self, m: &Map<String, Value>, v: &Value, depth: usize) -> Option<bool> {
        if depth > 32 {
            return None;
        }
        let mut ok = true;
        for (k, kv) in m {
            let r = match k.as_str() {
                k if is_annotation(k) => Some(true),
                NOT_STRINGS => Some(!kv.as_array()?.iter().any(|x| x == v)),
                FRACTION => Some(!v.is_number() || !has_type(v, "integer") || *kv != Value::Bool(true)),
                NOT_PATTERNS | PATTERNS => match v.as_str() {
                    None => Some(true),
                    Some(sv) => {
                        let mut hit = Vec::new();
                        for p in kv.as_array()? {
                            hit.push(self.pattern(p.as_str()?).ok()?.matches(sv));
                        }
                        Some(if k == NOT_PATTERNS { !hit.contains(&true) } else { !hit.contains(&false) })
                    }
                },
                "patternProperties" => match v.as_object() {
                    None => Some(true),
                    Some(o) => {
                        let mut all = Some(true);
                        for (p, ps) in kv.as_object()? {
                            let re = self.pattern(p).ok()?;
                            for (pk, pv) in o {
                                if re.matches(pk) {
                                    all = match (all, self.check(ps, pv, depth + 1)) {
                                        (Some(true), r) => r,
                                        (other, _) => other,
                                    };
                                }
                            }
                        }
                        all
                    }
                },
                "$ref" => {
                    let t = self.resolve(kv.as_str()?, "").ok()?;
                    self.check(t, v, depth + 1)
                }
                "type" => Some(type_list(kv).iter().any(|t| has_type(v, t.as_str().unwrap_or("")))),
                "enum" => Some(kv.as_array()?.iter().any(|x| json_eq(x, v))),
                "const" => Some(json_eq(kv, v)),
                "allOf" => {
                    let mut all = Some(true);
                    for x in kv.as_array()? {
                        match self.check(x, v, depth + 1) {
                            Some(true) => {}
                            other => all = all.and(other),
                        }
                        if all == Some(false) {
                            break;
                        }
                    }
                    all
                }
                "anyOf" | "oneOf" => {
                    let mut n = 0;
                    for x in kv.as_array()? {
                        if self.check(x, v, depth + 1)? {
                            n += 1;
                        }
                    }
                    Some(if k == "anyOf" { n >= 1 } else { n == 1 })
                }
                "not" => self.check(kv, v, depth + 1).map(|b| !b),
                "minLength" | "maxLength" | "pattern" | "format" => match v.as_str() {
                    None => Some(true),
                    Some(sv) => {
                        let len = sv.chars().count() as u64;
                        match k.as_str() {
                            "minLength" => Some(len >= kv.as_u64()?),
                            "maxLength" => Some(len <= kv.as_u64()?),
                            "pattern" => Some(self.pattern(kv.as_str()?).ok()?.matches(sv)),
                            _ => match format::pattern(kv.as_str()?) {
                                Some(p) => Some(self.pattern(&p).ok()?.matches(sv)),
                                None if format::UNSUPPORTED.contains(&kv.as_str()?) => None,
                                None => Some(true),
                            },
                        }
                    }
                },
                "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" => match v {
                    Value::Number(n) => {
                        if kv.is_boolean() {
                            Some(true)
                        } else {
                            let x = Dec::parse(&n.to_string())?;
                            let b = Dec::parse(&kv.as_number()?.to_string())?;
                            let c = x.cmp_value(&b);
                            let excl = |f: &str| m.get(f).and_then(Value::as_bool).unwrap_or(false);
                            Some(match k.as_str() {
                                "minimum" => if excl("exclusiveMinimum") { c.is_gt() } else { c.is_ge() },
                                "maximum" => if excl("exclusiveMaximum") { c.is_lt() } else { c.is_le() },
                                "exclusiveMinimum" => c.is_gt(),
                                _ => c.is_lt(),
                            })
                        }
                    }
                    _ => Some(true),
                },
                "multipleOf" => match v {
                    Value::Number(n) => match (n.as_i64(), kv.as_i64()) {
                        (Some(x), Some(d)) if d > 0 => Some(x % d == 0),
                        _ => None,
                    },
                    _ => Some(true),
                },
                "minItems" | "maxItems" => match v.as_array() {
                    None => Some(true),
                    Some(a) => Some(if k == "minItems" { a.len() as u64 >= kv.as_u64()? } else { a.len() as u64 <= kv.as_u64()? }),
                },
                "items" if !kv.is_array() && !m.contains_key("prefixItems") => match v.as_array() {
                    None => Some(true),
                    Some(a) => {
                        let mut all = Some(true);
                        for x in a {
                            all = match (all, self.check(kv, x, depth + 1)) {
                                (Some(true), r) => r,
                                (other, _) => other,
                            };
                        }
                        all
                    }
                },
                "uniqueItems" => match (v.as_array(), kv.as_bool()) {
                    (Some(a), Some(true)) => Some((0..a.len()).all(|i| (i + 1..a.len()).all(|j| !json_eq(&a[i], &a[j])))),
                    _ => Some(true),
                },
                "required" | "minProperties" | "maxProperties" | "properties" | "additionalProperties" => match v.as_object() {
                    None => Some(true),
                    Some(o) => match k.as_str() {
                        "required" => Some(kv.as_array()?.iter().all(|r| r.as_str().is_some_and(|r| o.contains_key(r)))),
                        "minProperties" => Some(o.len() as u64 >= kv.as_u64()?),
                        "maxProperties" => Some(o.len() as u64 <= kv.as_u64()?),
                        "properties" => {
                            let mut all = Some(true);
                            for (pk, pv) in o {
                                if let Some(ps) = kv.get(pk) {
                                    all = match (all, self.check(ps, pv, depth + 1)) {
                                        (Some(true), r) => r,
                                        (other, _) => other,
                                    };
                                }
                            }
                            all
                        }
                        _ => {
                            if m.contains_key("patternProperties") {
                                None
                            } else {
                                let declared = m.get("properties").and_then(Value::as_object);
                                let mut all = Some(true);
                                for (pk, pv) in o {
                                    if declared.is_some_and(|d| d.contains_key(pk)) {
                                        continue;
                                    }
                                    all = match (all, self.check(kv, pv, depth + 1)) {
                                        (Some(true), r) => r,
                                        (other, _) => other,
                                    };
                                }
                                all
                            }
                        }
                    },
                },
                k if is_constraint_keyword(k) => None,
                _ => Some(true),
            };
            match r {
                Some(true) => {}
                Some(false) => return Some(false),
                None => ok = false,
            }
        }
        if ok { Some(true) } else { None }
    }
}

/// Kinds of JSON value: the partition `not` and `oneOf` reason over
/// (integers are numbers here).
const KINDS: [&str; 6] = ["null", "boolean", "object", "array", "string", "number"];

/// Most `not`s one translation may expand (each may add alternatives).
const MAX_NEGATIONS: usize = 4096;

/// The types `type` names (all of them when it is absent).
fn type_names(m: &Map<String, Value>, ptr: &str) -> Res<Vec<String>> {
    Ok(match m.get("type") {
        None => TYPES.iter().map(|s| s.to_string()).collect(),
        Some(t) => {
            let l = type_list(t);
            if l.is_empty() && !t.is_array() {
                return Err(invalid("type", ptr, "must be a string or an array of strings"));
            }
            l.iter().filter_map(|v| v.as_str().map(String::from)).collect()
        }
    })
}

fn kind_of(t: &str) -> &'static str {
    match t {
        "null" => "null",
        "boolean" => "boolean",
        "object" => "object",
        "array" => "array",
        "string" => "string",
        _ => "number",
    }
}

/// The kinds of value a flattened map can match.
fn kinds(m: &Map<String, Value>) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for t in effective_types(m) {
        let k = kind_of(t);
        if !out.contains(&k) {
            out.push(k);
        }
    }
    out
}

/// The const/enum values of a flattened map.
fn values_of(m: &Map<String, Value>) -> Option<&[Value]> {
    m.get("const").map(std::slice::from_ref).or_else(|| m.get("enum").and_then(Value::as_array).map(Vec::as_slice))
}

/// The kinds of value on which no value can match both maps.
fn disjoint_kinds(a: &Map<String, Value>, b: &Map<String, Value>) -> Vec<&'static str> {
    let (ka, kb) = (kinds(a), kinds(b));
    let (va, vb) = (values_of(a), values_of(b));
    let mut out = Vec::new();
    for k in KINDS {
        if !ka.contains(&k) || !kb.contains(&k) {
            out.push(k);
            continue;
        }
        if let (Some(va), Some(vb)) = (&va, &vb)
            && !va.iter().any(|x| kind_of_value(x) == k && vb.iter().any(|y| json_eq(x, y)))
        {
            out.push(k);
            continue;
        }
        if k == "object" && objects_disjoint(a, b) {
            out.push(k);
        }
        let int_only = |m: &Map<String, Value>| {
            let t = effective_types(m);
            t.contains(&"integer") && !t.contains(&"number")
        };
        let frac = |m: &Map<String, Value>| m.get(FRACTION) == Some(&Value::Bool(true));
        if k == "number" && ((int_only(a) && frac(b)) || (frac(a) && int_only(b))) {
            out.push(k);
        }
    }
    out
}

fn kind_of_value(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Object(_) => "object",
        Value::Array(_) => "array",
        Value::String(_) => "string",
        Value::Number(_) => "number",
    }
}

/// Whether no value at all can match both maps.
fn pair_disjoint(a: &Map<String, Value>, b: &Map<String, Value>) -> bool {
    disjoint_kinds(a, b).len() == KINDS.len()
}

fn required_of(m: &Map<String, Value>) -> Vec<String> {
    m.get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(|x| x.as_str().map(String::from)).collect())
        .unwrap_or_default()
}

/// Whether no object can match both maps: a property one requires and the
/// other forbids, or one both require with disjoint const/enum values.
fn objects_disjoint(a: &Map<String, Value>, b: &Map<String, Value>) -> bool {
    let (ra, rb) = (required_of(a), required_of(b));
    let forbids = |m: &Map<String, Value>, p: &str| -> bool {
        match m.get("properties").and_then(|x| x.get(p)) {
            Some(v) => *v == Value::Bool(false),
            None => m.get("additionalProperties") == Some(&Value::Bool(false)) && !m.contains_key("patternProperties"),
        }
    };
    if ra.iter().any(|p| forbids(b, p)) || rb.iter().any(|p| forbids(a, p)) {
        return true;
    }
    for p in ra.iter().filter(|p| rb.contains(p)) {
        let pa = a.get("properties").and_then(|x| x.get(p)).and_then(Value::as_object);
        let pb = b.get("properties").and_then(|x| x.get(p)).and_then(Value::as_object);
        if let (Some(pa), Some(pb)) = (pa, pb)
            && let (Some(va), Some(vb)) = (values_of(pa), values_of(pb))
            && !va.iter().any(|x| vb.iter().any(|y| json_eq(x, y)))
        {
            return true;
        }
    }
    false
}

/// The negation of a flattened map, as alternatives whose union is exactly
/// the values of the kinds in `want` that fail it; `Err` says which keyword
/// has no exact negation here.
fn negate(nm: &Map<String, Value>, want: &[&'static str], int_only: bool, legacy: bool) -> Result<Vec<Value>, String> {
    use serde_json::json;
    let nm_types: Vec<&'static str> = match nm.get("type") {
        Some(t) => TYPES.iter().copied().filter(|x| type_list(t).iter().any(|y| y == x)).collect(),
        None => TYPES.to_vec(),
    };
    let has = |k: &str| nm_types.iter().any(|t| kind_of(t) == k) && want.contains(&kind_of(k));
    let mut out: Vec<Value> = Vec::new();
    // Kinds the type keyword excludes.
    let mut other: Vec<Value> = Vec::new();
    for k in want {
        let ts: Vec<&&str> = nm_types.iter().filter(|t| kind_of(t) == *k).collect();
        if ts.is_empty() {
            other.push(Value::String(k.to_string()));
        } else if *k == "number" && !int_only && !ts.iter().any(|t| **t == "number") {
            out.push(json!({ "type": "number", FRACTION: true }));
        }
    }
    if !other.is_empty() {
        out.push(json!({ "type": other }));
    }
    let num = |v: &Value| v.as_number().and_then(|n| Dec::parse(&n.to_string()));
    let count = |v: &Value| num(v).filter(|d| !d.neg && d.is_integer()).and_then(|d| d.int.parse::<u64>().ok());
    for (k, v) in nm {
        let k = k.as_str();
        if is_annotation(k) {
            continue;
        }
        let scope = match k {
            "required" | "properties" | "additionalProperties" | "patternProperties" | "propertyNames"
            | "minProperties" | "maxProperties" => "object",
            "items" | "prefixItems" | "additionalItems" | "contains" | "minContains" | "maxContains" | "minItems"
            | "maxItems" | "uniqueItems" => "array",
            "minLength" | "maxLength" | "pattern" | "format" | NOT_STRINGS | NOT_PATTERNS | PATTERNS => "string",
            "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf" | FRACTION => "number",
            "type" => continue,
            _ => "",
        };
        if !scope.is_empty() && !has(scope) {
            continue;
        }
        let bad = |why: &str| Err(format!("{why} (in {k})"));
        match k {
            "enum" | "const" => {
                let vals = if k == "const" { vec![v.clone()] } else { v.as_array().cloned().ok_or("enum must be an array")? };
                for kind in KINDS {
                    if !has(kind) {
                        continue;
                    }
                    let mine: Vec<&Value> = vals.iter().filter(|x| kind_of_value(x) == kind).collect();
                    if mine.is_empty() {
                        out.push(json!({ "type": kind }));
                        continue;
                    }
                    match kind {
                        "null" => {}
                        "boolean" => {
                            for b in [true, false] {
                                if !mine.iter().any(|x| **x == Value::Bool(b)) {
                                    out.push(json!({ "const": b }));
                                }
                            }
                        }
                        "string" => out.push(json!({ "type": "string", NOT_STRINGS: mine })),
                        "number" => {
                            let mut ds: Vec<(Dec, Value)> = mine.iter().filter_map(|x| num(x).map(|d| (d, (*x).clone()))).collect();
                            ds.sort_by(|a, b| a.0.cmp_value(&b.0));
                            ds.dedup_by(|a, b| a.0 == b.0);
                            if ds.len() > 16 {
                                return bad("more than 16 excluded numbers");
                            }
                            let mut lo: Option<Value> = None;
                            for (_, x) in ds {
                                let mut alt = json!({ "type": "number", "exclusiveMaximum": x });
                                if let Some(l) = lo {
                                    alt["exclusiveMinimum"] = l;
                                }
                                out.push(alt);
                                lo = Some(x);
                            }
                            out.push(json!({ "type": "number", "exclusiveMinimum": lo }));
                        }
                        _ => return bad("objects or arrays as excluded values"),
                    }
                }
            }
            "required" => {
                for r in v.as_array().ok_or("required must be an array")? {
                    let r = r.as_str().ok_or("required must hold strings")?;
                    out.push(json!({ "type": "object", "properties": { r: false } }));
                }
            }
            "properties" => {
                for (p, ps) in v.as_object().ok_or("properties must be an object")? {
                    match ps {
                        Value::Bool(true) => {}
                        Value::Bool(false) => out.push(json!({ "type": "object", "required": [p] })),
                        _ => out.push(json!({ "type": "object", "required": [p], "properties": { p: { "not": ps } } })),
                    }
                }
            }
            "additionalProperties" | "propertyNames" | "additionalItems" if *v != Value::Bool(true) => {
                return bad("keyword with no exact negation");
            }
            "patternProperties" if v.as_object().is_some_and(|o| o.values().any(|x| *x != Value::Bool(true))) => {
                return bad("keyword with no exact negation");
            }
            "minProperties" | "minItems" | "minLength" => {
                let n = count(v).ok_or("must be a non-negative integer")?;
                if n > 0 {
                    let (t, kw) = match k {
                        "minProperties" => ("object", "maxProperties"),
                        "minItems" => ("array", "maxItems"),
                        _ => ("string", "maxLength"),
                    };
                    out.push(json!({ "type": t, kw: n - 1 }));
                }
            }
            "maxProperties" | "maxItems" | "maxLength" => {
                let n = count(v).ok_or("must be a non-negative integer")?;
                let (t, kw) = match k {
                    "maxProperties" => ("object", "minProperties"),
                    "maxItems" => ("array", "minItems"),
                    _ => ("string", "minLength"),
                };
                out.push(json!({ "type": t, kw: n + 1 }));
            }
            "items" if v.is_array() => {
                for (i, s) in v.as_array().into_iter().flatten().enumerate() {
                    if *s == Value::Bool(true) {
                        continue;
                    }
                    let mut pre = vec![Value::Bool(true); i];
                    pre.push(json!({ "not": s }));
                    let key = if legacy { "items" } else { "prefixItems" };
                    out.push(json!({ "type": "array", "minItems": i + 1, key: pre }));
                }
                if nm.get("additionalItems").is_some_and(|x| *x != Value::Bool(true)) {
                    return bad("additionalItems with no exact negation");
                }
            }
            "prefixItems" => {
                for (i, s) in v.as_array().ok_or("prefixItems must be an array")?.iter().enumerate() {
                    if *s == Value::Bool(true) {
                        continue;
                    }
                    let mut pre = vec![Value::Bool(true); i];
                    pre.push(json!({ "not": s }));
                    out.push(json!({ "type": "array", "minItems": i + 1, "prefixItems": pre }));
                }
            }
            "items" => {
                if *v == Value::Bool(true) {
                    continue;
                }
                if nm.contains_key("prefixItems") {
                    return bad("items after prefixItems");
                }
                out.push(json!({ "type": "array", "contains": { "not": v } }));
            }
            "contains" => {
                let min = nm.get("minContains").map_or(Some(1), count);
                if nm.contains_key("maxContains") || min.is_none_or(|n| n > 1) {
                    return bad("minContains or maxContains");
                }
                if min == Some(1) {
                    out.push(json!({ "type": "array", "items": { "not": v } }));
                }
            }
            "minContains" | "maxContains" => {}
            "uniqueItems" if *v == Value::Bool(true) => return bad("arrays with duplicates"),
            "pattern" => out.push(json!({ "type": "string", NOT_PATTERNS: [v] })),
            "format" => {
                let f = v.as_str().unwrap_or("");
                if let Some(p) = format::pattern(f) {
                    out.push(json!({ "type": "string", NOT_PATTERNS: [p] }));
                } else if format::UNSUPPORTED.contains(&f) {
                    return bad("a format that is not a regular language here");
                }
            }
            FRACTION if *v == Value::Bool(true) => out.push(json!({ "type": "integer" })),
            NOT_STRINGS => {
                let strings = v.as_array().cloned().unwrap_or_default();
                if !strings.is_empty() {
                    out.push(json!({ "enum": strings }));
                }
            }
            NOT_PATTERNS => {
                for p in v.as_array().into_iter().flatten() {
                    out.push(json!({ "type": "string", "pattern": p }));
                }
            }
            PATTERNS => {
                for p in v.as_array().into_iter().flatten() {
                    out.push(json!({ "type": "string", NOT_PATTERNS: [p] }));
                }
            }
            "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" => {
                if v.is_boolean() {
                    continue;
                }
                num(v).ok_or("bound must be a number")?;
                let excl = |f: &str| nm.get(f).and_then(Value::as_bool).unwrap_or(false);
                let (kw, inclusive) = match k {
                    "minimum" => ("maximum", excl("exclusiveMinimum")),
                    "maximum" => ("minimum", excl("exclusiveMaximum")),
                    "exclusiveMinimum" => ("maximum", true),
                    _ => ("minimum", true),
                };
                let kw = if inclusive { kw.to_string() } else { format!("exclusive{}{}", kw[..1].to_uppercase(), &kw[1..]) };
                out.push(json!({ "type": "number", kw: v }));
            }
            "not" => out.push(v.clone()),
            "anyOf" => {
                let branches = v.as_array().ok_or("anyOf must be an array")?;
                let all: Vec<Value> = branches.iter().map(|b| json!({ "not": b })).collect();
                out.push(json!({ "allOf": all }));
            }
            "if" | "then" | "else" => {}
            "multipleOf" | "oneOf" | "unevaluatedProperties" | "unevaluatedItems" | "dependentRequired"
            | "dependentSchemas" | "dependencies" | "$dynamicRef" | "$recursiveRef" => {
                return bad("keyword with no exact negation");
            }
            "$ref" => return bad("reference"),
            _ => {}
        }
    }
    Ok(out)
}

/// The state of [`Compiler::member_set`] after which only the object's end
/// may come.
const FINAL: u32 = u32::MAX;

/// An automaton being built: states `(accepts, edges' first, end)`, and
/// their edges `(expression, state)`.
#[derive(Default)]
struct Automaton {
    states: Vec<(bool, u32, u32)>,
    edges: Vec<(Ex, u32)>,
}

/// What an object's members in any order depend on: its members (name,
/// expression, required), its extras rule and its member counts.
type MemberKey = (Vec<(String, Ex, bool)>, Option<Ex>, u64, Option<u64>);

/// The fixed parts of an object's member sequence.
struct MemberShape<'e> {
    entries: &'e [(String, Ex, bool)],
    extra: Option<Ex>,
    min_p: u64,
    max_p: Option<u64>,
    cap: u64,
    /// `(extra (, extra)* ,)?`: undeclared members that may come before a
    /// declared one (only when members are not counted).
    lead_extras: Option<Ex>,
    /// In any order: the separator before a declared member that is not the
    /// first, with `lead_extras`, as one called rule. Every set of members
    /// shares it, so the token cache analyses what follows a member once
    /// per object rather than once per set.
    sep: Option<Ex>,
}

/// Fit a string language to length bounds without intersecting automata: a
/// branch of fixed length is kept or dropped, a branch with one unbounded
/// repetition of single characters has that repetition's bounds narrowed.
fn with_length(re: Re, min: u64, max: Option<u64>) -> Option<Re> {
    let (lo, hi) = re.length_range()?;
    if lo >= min && max.is_none_or(|m| hi.is_some_and(|h| h <= m)) {
        return Some(re);
    }
    match re {
        Re::Alt(branches) => {
            let mut out = Vec::new();
            for b in branches {
                let (blo, bhi) = match b.length_range() {
                    Some(x) => x,
                    None => continue,
                };
                if bhi.is_some_and(|h| h < min) || max.is_some_and(|m| blo > m) {
                    continue;
                }
                out.push(with_length(b, min, max)?);
            }
            Some(Re::Alt(out))
        }
        Re::Concat(parts) => {
            let mut var: Option<usize> = None;
            let mut fixed = 0u64;
            for (i, p) in parts.iter().enumerate() {
                match p.length_range() {
                    Some((a, Some(b))) if a == b => fixed += a,
                    _ => {
                        if var.is_some() {
                            return None;
                        }
                        var = Some(i);
                    }
                }
            }
            let i = var?;
            let mut parts = parts;
            let Re::Repeat(inner, rmin, rmax) = &parts[i] else { return None };
            if !matches!(**inner, Re::Set(_)) {
                return None;
            }
            let new_min = u64::from(*rmin).max(min.saturating_sub(fixed));
            let new_max = match (rmax, max) {
                (Some(a), Some(m)) => Some(u64::from(*a).min(m.checked_sub(fixed)?)),
                (Some(a), None) => Some(u64::from(*a)),
                (None, Some(m)) => Some(m.checked_sub(fixed)?),
                (None, None) => None,
            };
            if new_max.is_some_and(|x| x < new_min) {
                return Some(Re::Alt(Vec::new()));
            }
            let new_min = u32::try_from(new_min).ok()?;
            let new_max = new_max.map(u32::try_from).transpose().ok()?;
            parts[i] = Re::Repeat(inner.clone(), new_min, new_max);
            Some(Re::Concat(parts))
        }
        Re::Repeat(inner, rmin, rmax) if matches!(*inner, Re::Set(_)) => {
            with_length(Re::Concat(vec![Re::Repeat(inner, rmin, rmax)]), min, max)
        }
        _ => None,
    }
}

/// The one-string language of `s`.
fn literal_re(s: &str) -> Re {
    Re::Concat(s.chars().map(|c| Re::Set(regex::CharSet::single(c as u32))).collect())
}

/// A non-negative integer keyword (`2.0` counts as 2).
fn count(m: &Map<String, Value>, k: &str, ptr: &str) -> Res<Option<u64>> {
    match m.get(k) {
        None => Ok(None),
        Some(v) => match v.as_number().and_then(|n| Dec::parse(&n.to_string())) {
            Some(d) if !d.neg && d.is_integer() => Ok(Some(d.int.parse().unwrap_or(u64::MAX))),
            _ => Err(invalid(k, ptr, "must be a non-negative integer")),
        },
    }
}

/// A number value: every spelling of it without an exponent.
fn number_literal(w: &mut Writer, n: &serde_json::Number) -> Ex {
    let Some(d) = Dec::parse(&n.to_string()) else { return w.lit(&n.to_string()) };
    let mut parts = Vec::with_capacity(3);
    if d.neg {
        parts.push(w.lit("-"));
    }
    let zero = w.lit("0");
    if d.frac.is_empty() {
        parts.push(w.lit(&d.int));
        let point = w.lit(".");
        let zeros = w.repeat(zero, 1, None);
        let frac = w.seq(&[point, zeros]);
        parts.push(w.opt(frac));
    } else {
        parts.push(w.lit(&format!("{}.{}", d.int, d.frac)));
        parts.push(w.repeat(zero, 0, None));
    }
    w.seq(&parts)
}

/// The schema `{k: v}`.
fn keyword(k: &str, v: Value) -> Value {
    let mut m = Map::new();
    m.insert(k.to_string(), v);
    Value::Object(m)
}

fn is_annotation(k: &str) -> bool {
    matches!(
        k,
        "title"
            | "description"
            | "default"
            | "examples"
            | "$comment"
            | "$schema"
            | "$id"
            | "id"
            | "deprecated"
            | "readOnly"
            | "writeOnly"
            | "contentMediaType"
            | "contentEncoding"
            | "contentSchema"
            | "$anchor"
            | "$dynamicAnchor"
            | "$vocabulary"
            | "definitions"
            | "$defs"
            | "then"
            | "else"
    )
}

/// Keywords that constrain nothing: annotations (but `then` and `else`,
/// which `if` reads) and unknown keywords (but `discriminator`, which
/// `allOf` merging compares).
fn is_inert(k: &str) -> bool {
    !matches!(k, "then" | "else" | "discriminator") && (is_annotation(k) || !is_known_keyword(k))
}

/// A copy of schema `s` without its inert keywords ([`is_inert`]) at any
/// depth: `allOf` merging and branches copy subschemas many times, and
/// references are resolved in the original schema, never in a copy.
fn lean(s: &Value) -> Value {
    match s {
        Value::Object(m) => Value::Object(m.iter().filter(|(k, _)| !is_inert(k)).map(|(k, v)| (k.clone(), lean_keyword(k, v))).collect()),
        other => other.clone(),
    }
}

/// A copy of keyword `k`'s value `v`, with the subschemas in it [`lean`].
fn lean_keyword(k: &str, v: &Value) -> Value {
    match (k, v) {
        ("properties" | "patternProperties" | "dependentSchemas" | "dependencies", Value::Object(m)) => {
            Value::Object(m.iter().map(|(name, s)| (name.clone(), lean(s))).collect())
        }
        ("allOf" | "anyOf" | "oneOf" | "prefixItems" | "items", Value::Array(a)) => Value::Array(a.iter().map(lean).collect()),
        (
            "items" | "additionalItems" | "additionalProperties" | "not" | "if" | "then" | "else" | "contains" | "propertyNames"
            | "unevaluatedItems" | "unevaluatedProperties",
            s,
        ) => lean(s),
        _ => v.clone(),
    }
}

/// Keywords this module reads (anything else is an annotation or unknown).
fn is_known_keyword(k: &str) -> bool {
    is_constraint_keyword(k)
        || matches!(
            k,
            "type" | "enum" | "const" | "properties" | "required" | "additionalProperties" | "minProperties"
                | "maxProperties" | "minLength" | "maxLength" | "pattern" | "format" | "minimum" | "maximum"
                | "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf" | "minItems" | "maxItems" | "uniqueItems"
                | "allOf" | "anyOf" | "oneOf" | "not" | "$ref" | NOT_STRINGS | NOT_PATTERNS | PATTERNS | FRACTION
        )
}

fn is_constraint_keyword(k: &str) -> bool {
    matches!(
        k,
        "prefixItems"
            | "items"
            | "additionalItems"
            | "contains"
            | "minContains"
            | "maxContains"
            | "patternProperties"
            | "propertyNames"
            | "if"
            | "dependentRequired"
            | "dependentSchemas"
            | "dependencies"
            | "unevaluatedProperties"
            | "unevaluatedItems"
            | "$dynamicRef"
            | "$recursiveRef"
    )
}

/// The JSON types a flattened map can match (`integer` stands apart from
/// `number` here only when `number` is absent).
fn effective_types(m: &Map<String, Value>) -> Vec<&'static str> {
    let mut types: Vec<&'static str> = match m.get("type") {
        Some(t) => TYPES.iter().copied().filter(|x| type_list(t).iter().any(|y| y == x)).collect(),
        None => TYPES.to_vec(),
    };
    let values = m.get("const").map(|c| vec![c.clone()]).or_else(|| m.get("enum").and_then(Value::as_array).cloned());
    if let Some(vals) = values {
        types.retain(|t| vals.iter().any(|v| has_type(v, t)));
    }
    types
}

fn type_list(t: &Value) -> Vec<Value> {
    match t {
        Value::String(_) => vec![t.clone()],
        Value::Array(a) => a.iter().filter(|x| x.is_string()).cloned().collect(),
        _ => Vec::new(),
    }
}

fn has_type(v: &Value, t: &str) -> bool {
    match t {
        "null" => v.is_null(),
        "boolean" => v.is_boolean(),
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "number" => v.is_number(),
        "integer" => v.as_number().and_then(|n| Dec::parse(&n.to_string())).is_some_and(|d| d.is_integer()),
        _ => false,
    }
}

/// JSON Schema equality: numbers by value, objects regardless of key order.
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (Dec::parse(&x.to_string()), Dec::parse(&y.to_string())) {
            (Some(p), Some(q)) => p == q,
            _ => x == y,
        },
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_eq(p, q)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

fn num_pick(a: &Value, b: &Value, larger: bool) -> Value {
    let (Some(x), Some(y)) = (
        a.as_number().and_then(|n| Dec::parse(&n.to_string())),
        b.as_number().and_then(|n| Dec::parse(&n.to_string())),
    ) else {
        return a.clone();
    };
    let a_wins = if larger { x.cmp_value(&y).is_ge() } else { x.cmp_value(&y).is_le() };
    if a_wins { a.clone() } else { b.clone() }
}

fn obj_keys(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_object).map(|o| o.keys().cloned().collect()).unwrap_or_default()
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

/// Compact JSON text (non-ASCII kept).
fn json_text(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len()
            && let Ok(x) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(x);
                i += 3;
                continue;
            }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| s.to_string())
}

/// The subschema named `name` by `$anchor`, by a plain-name `$id`
/// (`"#name"`, drafts 6 and 7), or, where `draft04`, by a plain-name `id`.
fn find_anchor<'v>(v: &'v Value, name: &str, draft04: bool) -> Option<&'v Value> {
    match v {
        Value::Object(o) => {
            let names = |key: &str| o.get(key).and_then(Value::as_str).and_then(|id| id.strip_prefix('#')) == Some(name);
            if o.get("$anchor").and_then(Value::as_str) == Some(name) || names("$id") || (draft04 && names("id")) {
                return Some(v);
            }
            o.values().find_map(|x| find_anchor(x, name, draft04))
        }
        Value::Array(a) => a.iter().find_map(|x| find_anchor(x, name, draft04)),
        _ => None,
    }
}
