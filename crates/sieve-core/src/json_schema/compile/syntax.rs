//! The JSON syntax every type shares: any value, lists and members,
//! separators, quotes, and literal values in each of their spellings.

use super::keywords::json_text;
use super::{Compiler, Res};
use super::super::gbnf::{Ex, Writer};
use super::super::number::{self, Dec, Numbers};
use serde_json::Value;

impl<'a> Compiler<'a> {
    /// Any JSON value.
    pub(super) fn any_value(&mut self) -> Res<Ex> {
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

    /// A member of an object: `key`, a colon, `value`.
    pub(super) fn member(&mut self, key: Ex, value: Ex) -> Ex {
        let colon = self.rules.lit(":");
        self.rules.seq(&[key, self.ws, colon, self.ws, value])
    }

    /// The JSON value `v` in every spelling of it.
    pub(super) fn literal_value(&mut self, v: &Value) -> Ex {
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

    /// `body` between the quotes of a JSON string.
    pub(super) fn quoted(&mut self, body: Ex) -> Ex {
        let quote = self.rules.lit("\"");
        self.rules.seq(&[quote, body, quote])
    }

    /// A comma between whitespace.
    pub(super) fn sep(&mut self) -> Ex {
        let comma = self.rules.lit(",");
        self.rules.seq(&[self.ws, comma, self.ws])
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
