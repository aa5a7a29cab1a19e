//! JSON Schemas generated from a fuzz input's structure (types, bounds, patterns, formats,
//! objects, arrays, combinators, references into `$defs`), for the targets that take schemas.

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use serde_json::{Map, Value, json};

#[derive(Arbitrary, Debug)]
pub enum Node {
    Bool(bool),
    Type(Vec<Ty>),
    Const(Lit),
    Enum(Vec<Lit>),
    String { min: Option<u8>, max: Option<u8>, pattern: Option<Pattern>, format: Option<Format> },
    Number { integer: bool, min: Option<i16>, max: Option<i16>, exclusive: bool, multiple_of: Option<u8> },
    Array { items: Option<Box<Node>>, prefix: Vec<Node>, min: Option<u8>, max: Option<u8>, unique: bool, contains: Option<Box<Node>> },
    Object { properties: Vec<(Name, Node)>, required: Vec<Name>, additional: Option<Box<Node>>, patterns: Vec<(Pattern, Node)>, names: Option<Pattern>, min: Option<u8>, max: Option<u8> },
    AnyOf(Vec<Node>),
    OneOf(Vec<Node>),
    AllOf(Vec<Node>),
    Not(Box<Node>),
    IfThenElse(Box<Node>, Box<Node>, Option<Box<Node>>),
    Ref(u8),
    Nullable(Box<Node>),
}

#[derive(Arbitrary, Debug)]
pub enum Ty {
    Null,
    Boolean,
    Integer,
    Number,
    String,
    Array,
    Object,
}

#[derive(Arbitrary, Debug)]
pub enum Lit {
    Null,
    Bool(bool),
    Int(i32),
    Float(f32),
    Str(Name),
    List(Vec<Lit>),
}

/// Names and strings from a small alphabet, so that they collide and overlap.
#[derive(Arbitrary, Debug)]
pub struct Name(Vec<Letter>);

#[derive(Arbitrary, Debug)]
pub enum Letter {
    A,
    B,
    Quote,
    Backslash,
    Accent,
    Han,
}

#[derive(Arbitrary, Debug)]
pub enum Pattern {
    Literal(Name),
    Prefix(Name),
    Class,
    Digits(u8, u8),
    Alternation(Name, Name),
    Anchored(Name),
}

#[derive(Arbitrary, Debug)]
pub enum Format {
    Date,
    Time,
    DateTime,
    Email,
    Uuid,
    Ipv4,
    Uri,
}

impl Name {
    pub fn text(&self) -> String {
        self.0.iter().take(8).map(|l| match l {
            Letter::A => 'a',
            Letter::B => 'b',
            Letter::Quote => '"',
            Letter::Backslash => '\\',
            Letter::Accent => 'é',
            Letter::Han => '中',
        }).collect()
    }
}

impl Pattern {
    pub fn text(&self) -> String {
        let escape = |n: &Name| regex_syntax::escape(&n.text());
        match self {
            Pattern::Literal(n) => format!("^{}$", escape(n)),
            Pattern::Prefix(n) => format!("^{}", escape(n)),
            Pattern::Class => "^[a-b]+$".into(),
            Pattern::Digits(lo, hi) => format!("^[0-9]{{{},{}}}$", lo % 4, lo % 4 + hi % 4),
            Pattern::Alternation(a, b) => format!("({}|{})", escape(a), escape(b)),
            Pattern::Anchored(n) => format!("^a*{}b?$", escape(n)),
        }
    }
}

impl Lit {
    pub fn value(&self) -> Value {
        match self {
            Lit::Null => Value::Null,
            Lit::Bool(b) => json!(b),
            Lit::Int(i) => json!(i),
            Lit::Float(f) => serde_json::Number::from_f64(f64::from(*f)).map_or(Value::Null, Value::Number),
            Lit::Str(n) => json!(n.text()),
            Lit::List(items) => Value::Array(items.iter().take(4).map(Lit::value).collect()),
        }
    }
}

impl Node {
    pub fn value(&self) -> Value {
        let mut m = Map::new();
        let mut set = |k: &str, v: Value| {
            m.insert(k.into(), v);
        };
        match self {
            Node::Bool(b) => return json!(b),
            Node::Type(types) => {
                let names: Vec<Value> = types.iter().take(3).map(|t| json!(format!("{t:?}").to_lowercase())).collect();
                set("type", if names.len() == 1 { names[0].clone() } else { Value::Array(names) });
            }
            Node::Const(l) => set("const", l.value()),
            Node::Enum(ls) => set("enum", Value::Array(ls.iter().take(8).map(Lit::value).collect())),
            Node::String { min, max, pattern, format } => {
                set("type", json!("string"));
                min.map(|v| set("minLength", json!(v % 16)));
                max.map(|v| set("maxLength", json!(v % 16)));
                if let Some(p) = pattern {
                    set("pattern", json!(p.text()));
                }
                if let Some(f) = format {
                    let name = match f {
                        Format::Date => "date",
                        Format::Time => "time",
                        Format::DateTime => "date-time",
                        Format::Email => "email",
                        Format::Uuid => "uuid",
                        Format::Ipv4 => "ipv4",
                        Format::Uri => "uri",
                    };
                    set("format", json!(name));
                }
            }
            Node::Number { integer, min, max, exclusive, multiple_of } => {
                set("type", json!(if *integer { "integer" } else { "number" }));
                let (lo, hi) = if *exclusive { ("exclusiveMinimum", "exclusiveMaximum") } else { ("minimum", "maximum") };
                min.map(|v| set(lo, json!(v)));
                max.map(|v| set(hi, json!(v)));
                multiple_of.filter(|&v| v > 0).map(|v| set("multipleOf", json!(v)));
            }
            Node::Array { items, prefix, min, max, unique, contains } => {
                set("type", json!("array"));
                if let Some(i) = items {
                    set("items", i.value());
                }
                if !prefix.is_empty() {
                    set("prefixItems", Value::Array(prefix.iter().take(4).map(Node::value).collect()));
                }
                min.map(|v| set("minItems", json!(v % 8)));
                max.map(|v| set("maxItems", json!(v % 8)));
                if *unique {
                    set("uniqueItems", json!(true));
                }
                if let Some(c) = contains {
                    set("contains", c.value());
                }
            }
            Node::Object { properties, required, additional, patterns, names, min, max } => {
                set("type", json!("object"));
                let props: Map<String, Value> = properties.iter().take(8).map(|(n, v)| (n.text(), v.value())).collect();
                set("properties", Value::Object(props));
                set("required", Value::Array(required.iter().take(4).map(|n| json!(n.text())).collect()));
                if let Some(a) = additional {
                    set("additionalProperties", a.value());
                }
                if !patterns.is_empty() {
                    let pats: Map<String, Value> = patterns.iter().take(3).map(|(p, v)| (p.text(), v.value())).collect();
                    set("patternProperties", Value::Object(pats));
                }
                if let Some(p) = names {
                    set("propertyNames", json!({"pattern": p.text()}));
                }
                min.map(|v| set("minProperties", json!(v % 6)));
                max.map(|v| set("maxProperties", json!(v % 6)));
            }
            Node::AnyOf(ns) => set("anyOf", Value::Array(ns.iter().take(4).map(Node::value).collect())),
            Node::OneOf(ns) => set("oneOf", Value::Array(ns.iter().take(4).map(Node::value).collect())),
            Node::AllOf(ns) => set("allOf", Value::Array(ns.iter().take(4).map(Node::value).collect())),
            Node::Not(n) => set("not", n.value()),
            Node::IfThenElse(i, t, e) => {
                set("if", i.value());
                set("then", t.value());
                if let Some(e) = e {
                    set("else", e.value());
                }
            }
            Node::Ref(i) => set("$ref", json!(format!("#/$defs/d{}", i % 4))),
            Node::Nullable(n) => set("anyOf", json!([n.value(), {"type": "null"}])),
        }
        Value::Object(m)
    }
}
