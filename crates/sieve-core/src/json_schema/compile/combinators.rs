//! `anyOf` and `oneOf`: one alternative per branch, siblings merged in; and
//! `not`, conjoined where its negation is exact.

use super::keywords::{effective_types, is_annotation, is_known_keyword, keyword};
use super::negate::{disjoint_kinds, kinds, negate, pair_disjoint, values_of};
use super::{child, err, invalid, Compiler, Expr, Res};
use super::super::SchemaErrorKind;
use serde_json::{Map, Value};

impl<'a> Compiler<'a> {
    pub(super) fn branches(&mut self, kw: &str, branches: &[Value], siblings: Map<String, Value>, ptr: &str) -> Res<Expr> {
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
        if kw == "oneOf" && merged_all.iter().all(|x| x.1.is_none()) {
            let maps: Vec<(&Map<String, Value>, &str)> = merged_all.iter().map(|x| (&x.0, x.2.as_str())).collect();
            if let Some(e) = self.one_of_strings(&maps)? {
                return Ok(e);
            }
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
    pub(super) fn apply_not(&mut self, m: &mut Map<String, Value>, n: &Value, ptr: &str) -> Res<bool> {
        // A negated anyOf negates each branch here, and a branch may lead
        // back through references: the depth bounds the nesting.
        self.enter(ptr)?;
        let applied = self.negate_into(m, n, ptr);
        self.depth -= 1;
        applied
    }

    /// [`Compiler::apply_not`] within the depth limit.
    fn negate_into(&mut self, m: &mut Map<String, Value>, n: &Value, ptr: &str) -> Res<bool> {
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
}

/// Most `not`s one translation may expand (each may add alternatives).
const MAX_NEGATIONS: usize = 4096;
