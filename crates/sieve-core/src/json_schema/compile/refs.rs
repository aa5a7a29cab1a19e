//! `$ref`: a rule per referenced schema, and references resolved to
//! subschemas by JSON pointer or anchor.

use super::{err, invalid, Compiler, Expr, Res};
use super::super::SchemaErrorKind;
use serde_json::Value;

impl<'a> Compiler<'a> {
    /// A rule for a referenced schema (recursion becomes a recursive rule).
    pub(super) fn ref_rule(&mut self, r: &str, ptr: &str) -> Res<Expr> {
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

    pub(super) fn resolve(&self, r: &str, ptr: &str) -> Res<&'a Value> {
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
